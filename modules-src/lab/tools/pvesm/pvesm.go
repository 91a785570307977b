// Package pvesm is the lab's pvesm stand-in: storage.cfg lives in the
// simulator (pmxcfs, cluster-wide, S1), so every command is a call to the
// node's own API; output formats follow PVE's pvesm.
package pvesm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
)

// API is what pvesm needs (apiclient.Client implements it).
type API interface {
	Call(ctx context.Context, method, path string, params url.Values) (json.RawMessage, error)
}

// Tool runs pvesm on one node.
type Tool struct {
	Env  *cli.Env
	Node string
	API  API
}

const usage = `USAGE: pvesm <COMMAND> [ARGS] [OPTIONS]

       pvesm add <type> <storage> [OPTIONS]
       pvesm remove <storage> [OPTIONS]
       pvesm set <storage> [OPTIONS]
       pvesm list <storage> [OPTIONS]
       pvesm status  [OPTIONS]
`

// booleans are pvesm options that may be given bare.
var booleans = map[string]bool{"enabled": true, "disable": true, "shared": true, "sparse": true, "mkdir": true,
	"create-base-path": true, "create-subdirs": true, "is_mountpoint": false, "format": false}

func (t *Tool) die(err error) int { return t.Env.Fail(255, "%v", err) }

// Run executes pvesm with env.Args.
func (t *Tool) Run() int {
	pos, opts, err := cli.PVEArgs(t.Env.Args, booleans)
	if err != nil {
		return t.die(err)
	}
	if len(pos) == 0 {
		t.Env.Errf("ERROR: no command specified\n%s", usage)
		return 255
	}
	ctx := context.Background()
	params := url.Values{}
	for k, v := range opts {
		for _, x := range strings.Split(v, "\x00") {
			params.Add(k, x)
		}
	}
	switch pos[0] {
	case "status":
		return t.status(ctx, params)
	case "add", "create":
		if len(pos) != 3 {
			return t.die(fmt.Errorf("400 not enough arguments\npvesm add <type> <storage> [OPTIONS]"))
		}
		params.Set("type", pos[1])
		params.Set("storage", pos[2])
		if _, err := t.API.Call(ctx, http.MethodPost, "/storage", params); err != nil {
			return t.die(err)
		}
		return 0
	case "set":
		if len(pos) != 2 {
			return t.die(fmt.Errorf("400 not enough arguments\npvesm set <storage> [OPTIONS]"))
		}
		if _, err := t.API.Call(ctx, http.MethodPut, "/storage/"+url.PathEscape(pos[1]), params); err != nil {
			return t.die(err)
		}
		return 0
	case "remove", "delete":
		if len(pos) != 2 {
			return t.die(fmt.Errorf("400 not enough arguments\npvesm remove <storage> [OPTIONS]"))
		}
		if _, err := t.API.Call(ctx, http.MethodDelete, "/storage/"+url.PathEscape(pos[1]), params); err != nil {
			return t.die(err)
		}
		return 0
	case "list":
		if len(pos) != 2 {
			return t.die(fmt.Errorf("400 not enough arguments\npvesm list <storage> [OPTIONS]"))
		}
		return t.list(ctx, pos[1], params)
	case "help":
		t.Env.Outf("%s", usage)
		return 0
	}
	t.Env.Errf("ERROR: unknown command 'pvesm %s'\n%s", pos[0], usage)
	return 255
}

// storageStatus is one entry of GET /nodes/{node}/storage.
type storageStatus struct {
	Storage string `json:"storage"`
	Type    string `json:"type"`
	Active  num    `json:"active"`
	Enabled *num   `json:"enabled"`
	Total   num    `json:"total"`
	Used    num    `json:"used"`
	Avail   num    `json:"avail"`
}

// num accepts JSON numbers and numeric strings (PVE returns both).
type num float64

func (n *num) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*n = 0
		return nil
	}
	var f float64
	if _, err := fmt.Sscan(s, &f); err != nil {
		return fmt.Errorf("not a number: %s", b)
	}
	*n = num(f)
	return nil
}

func (t *Tool) status(ctx context.Context, params url.Values) int {
	raw, err := t.API.Call(ctx, http.MethodGet, "/nodes/"+url.PathEscape(t.Node)+"/storage", params)
	if err != nil {
		return t.die(err)
	}
	var list []storageStatus
	if err := json.Unmarshal(raw, &list); err != nil {
		return t.die(fmt.Errorf("unexpected answer from GET /nodes/%s/storage: %w", t.Node, err))
	}
	if id := params.Get("storage"); id != "" && len(list) == 0 {
		return t.die(fmt.Errorf("storage '%s' does not exist", id))
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Storage < list[j].Storage })
	maxlen := 0
	for _, s := range list {
		maxlen = max(maxlen, len(s.Storage))
	}
	maxlen++
	t.Env.Outf("%-*s %10s %10s %15s %15s %15s %8s\n", maxlen, "Name", "Type", "Status", "Total (KiB)", "Used (KiB)", "Available (KiB)", "%")
	for _, s := range list {
		status := "inactive"
		if s.Active != 0 {
			status = "active"
		}
		if s.Enabled != nil && *s.Enabled == 0 {
			status = "disabled"
		}
		per := 0.0
		if s.Total > 0 {
			per = float64(s.Used) / float64(s.Total) * 100
		}
		t.Env.Outf("%-*s %10s %10s %15d %15d %15d %7.2f%%\n", maxlen, s.Storage, s.Type, status,
			int64(s.Total)/1024, int64(s.Used)/1024, int64(s.Avail)/1024, per)
	}
	return 0
}

func (t *Tool) list(ctx context.Context, id string, params url.Values) int {
	raw, err := t.API.Call(ctx, http.MethodGet, "/nodes/"+url.PathEscape(t.Node)+"/storage/"+url.PathEscape(id)+"/content", params)
	if err != nil {
		return t.die(err)
	}
	var list []struct {
		Volid   string `json:"volid"`
		Format  string `json:"format"`
		Content string `json:"content"`
		Size    num    `json:"size"`
		VMID    num    `json:"vmid"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return t.die(fmt.Errorf("unexpected answer listing %s: %w", id, err))
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Volid < list[j].Volid })
	w := len("Volid")
	for _, v := range list {
		w = max(w, len(v.Volid))
	}
	t.Env.Outf("%-*s %-6s %-15s %11s %s\n", w, "Volid", "Format", "Type", "Size", "VMID")
	for _, v := range list {
		vmid := ""
		if v.VMID != 0 {
			vmid = fmt.Sprint(int64(v.VMID))
		}
		t.Env.Outf("%-*s %-6s %-15s %11d %s\n", w, v.Volid, v.Format, v.Content, int64(v.Size), vmid)
	}
	return 0
}
