package clusterguests

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/ha"
)

// Guest is one VM or container of /cluster/resources.
type Guest struct {
	ID       string `json:"id"` // "qemu/201"
	VMID     int    `json:"vmid"`
	Node     string `json:"node"`
	Name     string `json:"name"`
	Type     string `json:"type"`   // qemu, lxc
	Status   string `json:"status"` // running, stopped, unknown (node offline)
	Template bool   `json:"template"`
	HAState  string `json:"hastate"` // the HA manager's state, "" when unmanaged
	Pool     string `json:"pool"`
	Lock     string `json:"lock"`
	Tags     string `json:"tags"`
}

// HAManaged tells whether the guest list shows HA managing the guest
// (ha.Manages): hastate is "" without a resource, and reads "ignored" for
// an ignored one, the resource's configured state.
func (g Guest) HAManaged() bool { return ha.Manages(g.HAState != "", g.HAState) }

// IsVM tells whether the guest is a QEMU VM (not a container).
func (g Guest) IsVM() bool { return g.Type == "qemu" }

// HASID is the guest's HA resource id ("vm:201", "ct:200").
func (g Guest) HASID() string {
	if g.Type == "lxc" {
		return "ct:" + strconv.Itoa(g.VMID)
	}
	return "vm:" + strconv.Itoa(g.VMID)
}

// Guests reads every VM and container of the cluster.
func Guests(ctx context.Context, g pveapi.Getter) ([]Guest, error) {
	var out []Guest
	if err := g.Get(ctx, "/cluster/resources", url.Values{"type": {"vm"}}, &out); err != nil {
		return nil, err
	}
	// type=vm is PVE's filter for guests; keep only them should an older
	// answer mix in other types.
	out = slices.DeleteFunc(out, func(x Guest) bool { return x.Type != "qemu" && x.Type != "lxc" })
	return out, nil
}

// NodesAndGuests reads the cluster's nodes (names, sorted) and every VM and
// container in one GET /cluster/resources without a type: PVE lists there
// every node of the nodelist whatever the caller may audit, as /nodes does
// (pve-manager API2/Cluster.pm resources and API2/Nodes.pm index both walk
// get_nodelist through extract_node_stats), and the guests filtered by
// VM.Audit as type=vm does. One read instead of /nodes and Guests.
func NodesAndGuests(ctx context.Context, g pveapi.Getter) (nodes []string, guests []Guest, err error) {
	var all []Guest // a node entry decodes to type "node" and its name in node
	if err := g.Get(ctx, "/cluster/resources", nil, &all); err != nil {
		return nil, nil, err
	}
	for _, x := range all {
		switch x.Type {
		case "node":
			nodes = append(nodes, x.Node)
		case "qemu", "lxc":
			guests = append(guests, x)
		}
	}
	slices.Sort(nodes)
	return nodes, guests, nil
}

// Find returns the guest with vmid, wherever it runs; ok is false when the
// cluster has none.
func Find(list []Guest, vmid int) (Guest, bool) {
	for _, x := range list {
		if x.VMID == vmid {
			return x, true
		}
	}
	return Guest{}, false
}

// Survey is the first read of a guest module (pve_clone, pve_container):
// the PVE major version (the schema every write is checked against) and
// the cluster's guests, where the guest is looked for by VMID (H3).
func Survey(ctx context.Context, c *pveapi.Client) (major int, guests []Guest, err error) {
	ver, err := c.Version(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("cannot read the PVE version: %w", err)
	}
	guests, err = Guests(ctx, c)
	if err != nil {
		return ver.Major, nil, fmt.Errorf("cannot list the cluster's guests: %w", err)
	}
	return ver.Major, guests, nil
}

// Exists reads the cluster's guest list and reports whether vmid is in
// it: how a module settles a lost create or clone answer.
func Exists(ctx context.Context, g pveapi.Getter, vmid int) (bool, error) {
	guests, err := Guests(ctx, g)
	if err != nil {
		return false, err
	}
	_, ok := Find(guests, vmid)
	return ok, nil
}

// TemplatesNamed returns the QEMU templates whose name is exactly name,
// sorted by VMID. A caller needs exactly one; several is an error that
// lists them (TemplateError).
func TemplatesNamed(list []Guest, name string) []Guest {
	var out []Guest
	for _, x := range list {
		if x.IsVM() && x.Template && x.Name == name {
			out = append(out, x)
		}
	}
	slices.SortFunc(out, func(a, b Guest) int { return a.VMID - b.VMID })
	return out
}

// TemplateByName returns the one template named name, or an error naming
// the candidates (none, or several: K1).
func TemplateByName(list []Guest, name string) (Guest, error) {
	found := TemplatesNamed(list, name)
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return Guest{}, fmt.Errorf("no template named %q in the cluster", name)
	}
	ids := make([]string, len(found))
	for i, x := range found {
		ids[i] = fmt.Sprintf("%d on %s", x.VMID, x.Node)
	}
	return Guest{}, fmt.Errorf("%d templates are named %q (%s): give the template's VMID", len(found), name, strings.Join(ids, ", "))
}

// NextID asks PVE for a free VMID (datacenter.cfg next-id range). It is
// no reservation (K18): see the package doc.
func NextID(ctx context.Context, g pveapi.Getter) (int, error) {
	var s string
	if err := g.Get(ctx, "/cluster/nextid", nil, &s); err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("GET /cluster/nextid: %q is not a VMID", s)
	}
	return n, nil
}

// Free tells whether vmid is unused cluster-wide at the time of the read
// (GET /cluster/nextid?vmid=N answers 400 "VM N already exists"
// otherwise). Like NextID, it reserves nothing.
func Free(ctx context.Context, g pveapi.Getter, vmid int) (bool, error) {
	var s string
	err := g.Get(ctx, "/cluster/nextid", url.Values{"vmid": {strconv.Itoa(vmid)}}, &s)
	if err == nil {
		return true, nil
	}
	var e *pveapi.Error
	if errors.As(err, &e) && (strings.Contains(e.Errors["vmid"], "already exists") || strings.Contains(e.Message, "already exists")) {
		return false, nil
	}
	return false, err
}
