// Package hamanager is the lab's ha-manager stand-in (pve-ha-manager
// src/PVE/CLI/ha_manager.pm): every command is a call to the node's own
// API, whose HA state is the simulator's; `status`, `config` and
// `groupconfig` print as ha-manager does.
package hamanager

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"

	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
	"github.com/gopve/proxmox/modules-src/lab/tools/pvesh"
)

// API is the node's HTTPS API (apiclient.Client).
type API = cli.Caller

// Tool runs ha-manager on one node.
type Tool struct {
	Env *cli.Env
	API API
}

const usage = `USAGE: ha-manager <COMMAND> [ARGS] [OPTIONS]

       ha-manager add <sid> [OPTIONS]
       ha-manager config  [OPTIONS]
       ha-manager remove <sid> [OPTIONS]
       ha-manager rules add <type> <rule> [OPTIONS]
       ha-manager rules config  [OPTIONS]
       ha-manager rules list  [OPTIONS]
       ha-manager rules remove <rule>
       ha-manager rules set <type> <rule> [OPTIONS]
       ha-manager set <sid> [OPTIONS]
       ha-manager crm-command stop <sid> <timeout>
       ha-manager groupadd <group> --nodes <string> [OPTIONS]
       ha-manager groupconfig
       ha-manager groupremove <group>
       ha-manager groupset <group> [OPTIONS]
       ha-manager status  [OPTIONS]
`

var booleans = map[string]bool{"restricted": true, "nofailback": true, "strict": true, "disable": true,
	"purge": true, "verbose": true, "failback": true, "noborder": true, "noheader": true}

func (t *Tool) die(err error) int { return t.Env.Fail(255, "%v", err) }

// Run executes ha-manager with env.Args.
func (t *Tool) Run() int {
	cmd, code, ok := cli.ParseCommand(t.Env, "ha-manager", usage, booleans)
	if !ok {
		return code
	}
	pos, params, arity := cmd.Pos, cmd.Params, cmd.Arity
	ctx := context.Background()
	call := func(method, path string) int { return cmd.Call(ctx, t.API, method, path) }
	res := "/cluster/ha/resources"
	switch pos[0] {
	case "status":
		return t.status(ctx)
	case "config":
		return t.config(ctx, params)
	case "groupconfig":
		return t.groupconfig(ctx)
	case "add":
		if !arity(2, "add <sid> [OPTIONS]") {
			return 255
		}
		params.Set("sid", pos[1])
		return call(http.MethodPost, res)
	case "set":
		if !arity(2, "set <sid> [OPTIONS]") {
			return 255
		}
		return call(http.MethodPut, res+"/"+url.PathEscape(pos[1]))
	case "remove":
		if !arity(2, "remove <sid> [OPTIONS]") {
			return 255
		}
		return call(http.MethodDelete, res+"/"+url.PathEscape(pos[1]))
	case "groupadd":
		if !arity(2, "groupadd <group> --nodes <string> [OPTIONS]") {
			return 255
		}
		params.Set("group", pos[1])
		return call(http.MethodPost, "/cluster/ha/groups")
	case "groupset":
		if !arity(2, "groupset <group> [OPTIONS]") {
			return 255
		}
		return call(http.MethodPut, "/cluster/ha/groups/"+url.PathEscape(pos[1]))
	case "groupremove":
		if !arity(2, "groupremove <group>") {
			return 255
		}
		return call(http.MethodDelete, "/cluster/ha/groups/"+url.PathEscape(pos[1]))
	case "crm-command":
		if len(pos) >= 2 && pos[1] == "stop" && arity(4, "crm-command stop <sid> <timeout>") {
			// The CRM stops the service: its request state becomes stopped.
			cmd.Params = url.Values{"state": {"stopped"}}
			return call(http.MethodPut, res+"/"+url.PathEscape(pos[2]))
		}
		if len(pos) < 2 || pos[1] != "stop" {
			t.Env.Errf("ERROR: crm-command: only 'stop' is simulated by the lab\n")
		}
		return 255
	case "rules":
		if len(pos) < 2 {
			t.Env.Errf("ERROR: no command specified\n%s", usage)
			return 255
		}
		switch pos[1] {
		case "add", "set":
			if !arity(4, "rules "+pos[1]+" <type> <rule> [OPTIONS]") {
				return 255
			}
			params.Set("type", pos[2])
			if pos[1] == "add" {
				params.Set("rule", pos[3])
				return call(http.MethodPost, "/cluster/ha/rules")
			}
			return call(http.MethodPut, "/cluster/ha/rules/"+url.PathEscape(pos[3]))
		case "remove":
			if !arity(3, "rules remove <rule>") {
				return 255
			}
			return call(http.MethodDelete, "/cluster/ha/rules/"+url.PathEscape(pos[2]))
		case "config", "list":
			return t.rules(ctx, pos[1], params)
		}
	}
	t.Env.Errf("ERROR: unknown command 'ha-manager %s'\n%s", pos[0], usage)
	return 255
}

// status prints "<type> <status>" per entry, as ha-manager status does.
func (t *Tool) status(ctx context.Context) int {
	raw, err := t.API.Call(ctx, http.MethodGet, "/cluster/ha/status/current", nil)
	if err != nil {
		return t.die(err)
	}
	var list []struct {
		Type   string `json:"type"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return t.die(fmt.Errorf("unexpected HA status: %w", err))
	}
	for _, e := range list {
		t.Env.Outf("%s %s\n", e.Type, e.Status)
	}
	return 0
}

func scalar(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// records prints SectionConfig-like records: a header, then "\tkey value".
func (t *Tool) records(list []map[string]any, header func(map[string]any) string, skip ...string) {
	for _, rec := range list {
		t.Env.Outf("%s\n", header(rec))
		keys := make([]string, 0, len(rec))
	next:
		for k := range rec {
			for _, s := range skip {
				if k == s {
					continue next
				}
			}
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			t.Env.Outf("\t%s %s\n", k, scalar(rec[k]))
		}
		t.Env.Outf("\n")
	}
}

func (t *Tool) config(ctx context.Context, params url.Values) int {
	raw, err := t.API.Call(ctx, http.MethodGet, "/cluster/ha/resources", params)
	if err != nil {
		return t.die(err)
	}
	var list []map[string]any
	if err := json.Unmarshal(raw, &list); err != nil {
		return t.die(fmt.Errorf("unexpected HA resources: %w", err))
	}
	sort.Slice(list, func(i, j int) bool { return fmt.Sprint(list[i]["sid"]) < fmt.Sprint(list[j]["sid"]) })
	t.records(list, func(r map[string]any) string { return fmt.Sprint(r["sid"]) }, "digest", "sid", "type", "errors")
	return 0
}

func (t *Tool) groupconfig(ctx context.Context) int {
	raw, err := t.API.Call(ctx, http.MethodGet, "/cluster/ha/groups", nil)
	if err != nil {
		return t.die(err)
	}
	var list []map[string]any
	if err := json.Unmarshal(raw, &list); err != nil {
		return t.die(fmt.Errorf("unexpected HA groups: %w", err))
	}
	sort.Slice(list, func(i, j int) bool { return fmt.Sprint(list[i]["group"]) < fmt.Sprint(list[j]["group"]) })
	t.records(list, func(r map[string]any) string { return "group: " + fmt.Sprint(r["group"]) }, "digest", "group", "type")
	return 0
}

// rules prints `ha-manager rules config|list` as ha_manager.pm does through
// CLIFormatter: config shows enabled (no disable key), state ("ignored
// (conflicts)" for a rule with errors, else "in use"), rule, type,
// resources and comment; list only the rule (the index schema's one
// property). Rows are sorted by the first column, as print_text_table does.
func (t *Tool) rules(ctx context.Context, verb string, params url.Values) int {
	noborder, noheader := params.Get("noborder") == "1", params.Get("noheader") == "1"
	params.Del("noborder")
	params.Del("noheader")
	raw, err := t.API.Call(ctx, http.MethodGet, "/cluster/ha/rules", params)
	if err != nil {
		return t.die(err)
	}
	var list []map[string]any
	if err := json.Unmarshal(raw, &list); err != nil {
		return t.die(fmt.Errorf("unexpected HA rules: %w", err))
	}
	cols := []string{"rule"}
	if verb == "config" {
		cols = []string{"enabled", "state", "rule", "type", "resources", "comment"}
		for _, r := range list {
			_, disabled := r["disable"]
			r["enabled"] = map[bool]int{true: 0, false: 1}[disabled]
			r["state"] = "in use"
			if r["errors"] != nil {
				r["state"] = "ignored (conflicts)"
			}
		}
	}
	sort.SliceStable(list, func(i, j int) bool { return fmt.Sprint(list[i][cols[0]]) < fmt.Sprint(list[j][cols[0]]) })
	var rows [][]string
	for _, r := range list {
		var row []string
		for _, c := range cols {
			v := ""
			if r[c] != nil {
				v = scalar(r[c])
			}
			row = append(row, v)
		}
		rows = append(rows, row)
	}
	pvesh.Table(t.Env, cols, rows, noborder, noheader)
	return 0
}
