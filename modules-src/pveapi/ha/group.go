package ha

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
)

// Group is an HA group (PVE 8; PVE 9 until migrated to rules).
type Group struct {
	Name       string
	Nodes      NodeList
	Restricted bool // default 0
	NoFailback bool // default 0
	Comment    string
	Digest     string
}

type groupRow struct {
	Group      string `json:"group"`
	Nodes      string `json:"nodes"`
	Restricted bool   `json:"restricted"`
	NoFailback bool   `json:"nofailback"`
	Comment    string `json:"comment"`
	Digest     string `json:"digest"`
}

// Groups reads GET /cluster/ha/groups, sorted by name. On a PVE 9 cluster
// whose groups are migrated PVE answers an error ("ha groups have been
// migrated to rules"): see Detect.
func Groups(ctx context.Context, g pveapi.Getter) ([]Group, error) {
	return readList(ctx, g, "/cluster/ha/groups", groupRow.group,
		func(a, b Group) int { return strings.Compare(a.Name, b.Name) })
}

func (r groupRow) group() (Group, error) {
	nodes, err := ParseNodeList(r.Nodes)
	if err != nil {
		return Group{}, err
	}
	return Group{Name: r.Group, Nodes: nodes, Restricted: r.Restricted, NoFailback: r.NoFailback,
		Comment: r.Comment, Digest: r.Digest}, nil
}

func (gr Group) params() url.Values {
	q := url.Values{"nodes": {gr.Nodes.String()}}
	if gr.Restricted {
		q.Set("restricted", "1")
	}
	if gr.NoFailback {
		q.Set("nofailback", "1")
	}
	if gr.Comment != "" {
		q.Set("comment", gr.Comment)
	}
	return q
}

// CreateGroup is POST /cluster/ha/groups.
func CreateGroup(gr Group) apischema.Request {
	q := gr.params()
	q.Set("group", gr.Name)
	return apischema.New(http.MethodPost, "/cluster/ha/groups", q)
}

// UpdateGroup is PUT /cluster/ha/groups/{group}: every value of gr; flags
// turned off and an emptied comment are deleted (PVE's section config
// keeps a 0 as written; deleting restores the default and compares equal).
func UpdateGroup(gr Group) apischema.Request {
	q := gr.params()
	var del []string
	if !gr.Restricted {
		del = append(del, "restricted")
	}
	if !gr.NoFailback {
		del = append(del, "nofailback")
	}
	if gr.Comment == "" {
		del = append(del, "comment")
	}
	if len(del) > 0 {
		q.Set("delete", strings.Join(del, ","))
	}
	if gr.Digest != "" {
		q.Set("digest", gr.Digest)
	}
	return apischema.New(http.MethodPut, "/cluster/ha/groups/{group}", q, gr.Name)
}

// DeleteGroup is DELETE /cluster/ha/groups/{group}.
func DeleteGroup(name string) apischema.Request {
	return apischema.New(http.MethodDelete, "/cluster/ha/groups/{group}", nil, name)
}
