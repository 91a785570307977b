// Package pvesh is the lab's pvesh stand-in: a thin client of the node's own
// API (real pvesh also runs the API handlers), printing `data` in the
// requested output format.
package pvesh

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
	"github.com/gopve/proxmox/modules-src/lab/tools/nodecfg"
	"github.com/gopve/proxmox/modules-src/lab/tools/pvesm"
)

// DefaultStartup is what one pvesh call costs before it does anything on a
// real node: pvesh loads PVE's whole Perl API (PVE::API2 and every module
// it uses) at each start. Reconstruction: the figure is issue 16's ("about
// half a second each on a real node"), not measured here, for want of a
// real node or a published timing; node.json's pvesh_startup_ms (labctl
// Options.PveshStartup) or $GOPVE_LAB_PVESH_STARTUP_MS replace it.
const DefaultStartup = 500 * time.Millisecond

// EnvStartup overrides the start-up delay of one call (milliseconds).
const EnvStartup = "GOPVE_LAB_PVESH_STARTUP_MS"

// Startup is the delay the stand-in waits before its work on node.
func Startup(node *nodecfg.Node, getenv func(string) string) time.Duration {
	if v := getenv(EnvStartup); v != "" {
		if ms, err := strconv.Atoi(v); err == nil && ms >= 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	if node != nil && node.PveshStartupMS != nil && *node.PveshStartupMS >= 0 {
		return time.Duration(*node.PveshStartupMS) * time.Millisecond
	}
	return DefaultStartup
}

// Tool runs pvesh on one node.
type Tool struct {
	Env *cli.Env
	API pvesm.API
}

const usage = `USAGE: pvesh <COMMAND> [ARGS] [OPTIONS]

       pvesh create <api_path> [OPTIONS] [FORMAT_OPTIONS]
       pvesh delete <api_path> [OPTIONS] [FORMAT_OPTIONS]
       pvesh get <api_path> [OPTIONS] [FORMAT_OPTIONS]
       pvesh set <api_path> [OPTIONS] [FORMAT_OPTIONS]
       pvesh ls <api_path> [OPTIONS] [FORMAT_OPTIONS]
`

var methods = map[string]string{"get": http.MethodGet, "ls": http.MethodGet, "create": http.MethodPost,
	"set": http.MethodPut, "delete": http.MethodDelete}

// Run executes pvesh with env.Args.
func (t *Tool) Run() int {
	pos, opts, err := cli.PVEArgs(t.Env.Args, map[string]bool{"noborder": true, "noheader": true, "human-readable": true, "quiet": true})
	if err != nil {
		return t.Env.Fail(255, "%v", err)
	}
	if len(pos) == 0 {
		t.Env.Errf("ERROR: no command specified\n%s", usage)
		return 255
	}
	method, ok := methods[pos[0]]
	if !ok {
		if pos[0] == "help" || pos[0] == "usage" {
			t.Env.Outf("%s", usage)
			return 0
		}
		t.Env.Errf("ERROR: unknown command 'pvesh %s'\n%s", pos[0], usage)
		return 255
	}
	if len(pos) != 2 {
		return t.Env.Fail(255, "400 not enough arguments\npvesh %s <api_path> [OPTIONS] [FORMAT_OPTIONS]", pos[0])
	}
	format := opts["output-format"]
	if format == "" {
		format = "text"
	}
	noborder, noheader := opts["noborder"] == "1", opts["noheader"] == "1"
	for _, k := range []string{"output-format", "noborder", "noheader", "human-readable", "quiet"} {
		delete(opts, k)
	}
	params := url.Values{}
	for k, v := range opts {
		for _, x := range strings.Split(v, "\x00") {
			params.Add(k, x)
		}
	}
	data, err := t.API.Call(context.Background(), method, pos[1], params)
	if err != nil {
		return t.Env.Fail(255, "%v", err)
	}
	if pos[0] == "ls" {
		return t.ls(data)
	}
	switch format {
	case "json":
		var v any
		if len(bytes.TrimSpace(data)) == 0 {
			data = []byte("null")
		}
		if err := json.Unmarshal(data, &v); err != nil {
			return t.Env.Fail(255, "bad API answer: %v", err)
		}
		b, _ := json.Marshal(v) // compact, keys sorted (PVE's canonical JSON)
		t.Env.Outf("%s\n", b)
	case "json-pretty":
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			return t.Env.Fail(255, "bad API answer: %v", err)
		}
		var b strings.Builder
		perlPretty(&b, v, 0)
		t.Env.Outf("%s\n", b.String())
	case "text", "yaml":
		t.text(data, noborder, noheader)
	default:
		return t.Env.Fail(255, "400 Parameter verification failed.\noutput-format: value '%s' does not have a value in the enumeration 'text, json, json-pretty, yaml'", format)
	}
	return 0
}

// PerlPretty renders v as Perl's JSON->pretty->canonical does (pvesh's
// json-pretty, pvesr read).
func PerlPretty(v any) string {
	var b strings.Builder
	perlPretty(&b, v, 0)
	return b.String()
}

// perlPretty writes JSON like Perl's JSON->pretty->canonical, which pvesh
// uses: three-space indent and " : " between key and value.
func perlPretty(b *strings.Builder, v any, depth int) {
	ind := strings.Repeat("   ", depth)
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			b.WriteString("{}")
			return
		}
		keys := slices.Sorted(maps.Keys(x))
		b.WriteString("{\n")
		for i, k := range keys {
			kb, _ := json.Marshal(k)
			fmt.Fprintf(b, "%s   %s : ", ind, kb)
			perlPretty(b, x[k], depth+1)
			if i < len(keys)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString(ind + "}")
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i, e := range x {
			b.WriteString(ind + "   ")
			perlPretty(b, e, depth+1)
			if i < len(x)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString(ind + "]")
	default:
		j, _ := json.Marshal(x)
		b.Write(j)
	}
}

func scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%f", x), "0"), ".")
	case bool:
		if x {
			return "1"
		}
		return "0"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// text prints data as PVE's text formatter does in spirit: scalars as is,
// objects as a key/value table, arrays of objects as a table with one column
// per key (sorted), framed with box-drawing characters unless --noborder.
func (t *Tool) text(data json.RawMessage, noborder, noheader bool) {
	var v any
	if json.Unmarshal(data, &v) != nil || v == nil {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		var rows [][]string
		for _, k := range keys {
			rows = append(rows, []string{k, scalar(x[k])})
		}
		t.table([]string{"key", "value"}, rows, noborder, noheader)
	case []any:
		cols := map[string]bool{}
		objects := true
		for _, e := range x {
			m, ok := e.(map[string]any)
			if !ok {
				objects = false
				break
			}
			for k := range m {
				cols[k] = true
			}
		}
		if !objects {
			for _, e := range x {
				t.Env.Outf("%s\n", scalar(e))
			}
			return
		}
		names := slices.Sorted(maps.Keys(cols))
		var rows [][]string
		for _, e := range x {
			m := e.(map[string]any)
			var r []string
			for _, k := range names {
				r = append(r, scalar(m[k]))
			}
			rows = append(rows, r)
		}
		t.table(names, rows, noborder, noheader)
	default:
		t.Env.Outf("%s\n", scalar(v))
	}
}

func (t *Tool) table(header []string, rows [][]string, noborder, noheader bool) {
	Table(t.Env, header, rows, noborder, noheader)
}

// Table prints rows under header as PVE's CLIFormatter text output does:
// framed with box-drawing characters, or aligned columns with noborder.
func Table(env *cli.Env, header []string, rows [][]string, noborder, noheader bool) {
	w := make([]int, len(header))
	for i, h := range header {
		w[i] = utf8.RuneCountInString(h)
		for _, r := range rows {
			w[i] = max(w[i], utf8.RuneCountInString(r[i]))
		}
	}
	pad := func(s string, n int) string { return s + strings.Repeat(" ", n-utf8.RuneCountInString(s)) }
	if noborder {
		if !noheader {
			var cells []string
			for i, h := range header {
				cells = append(cells, pad(h, w[i]))
			}
			env.Outf("%s\n", strings.TrimRight(strings.Join(cells, " "), " "))
		}
		for _, r := range rows {
			var cells []string
			for i, c := range r {
				cells = append(cells, pad(c, w[i]))
			}
			env.Outf("%s\n", strings.TrimRight(strings.Join(cells, " "), " "))
		}
		return
	}
	rule := func(l, m, r string) {
		var segs []string
		for _, n := range w {
			segs = append(segs, strings.Repeat("─", n+2))
		}
		env.Outf("%s%s%s\n", l, strings.Join(segs, m), r)
	}
	line := func(cells []string) {
		var segs []string
		for i, c := range cells {
			segs = append(segs, " "+pad(c, w[i])+" ")
		}
		env.Outf("│%s│\n", strings.Join(segs, "│"))
	}
	rule("┌", "┬", "┐")
	if !noheader {
		line(header)
		rule("╞", "╪", "╡")
	}
	for i, r := range rows {
		if i > 0 {
			rule("├", "┼", "┤")
		}
		line(r)
	}
	rule("└", "┴", "┘")
}

func (t *Tool) ls(data json.RawMessage) int {
	var list []map[string]any
	if json.Unmarshal(data, &list) != nil {
		return 0
	}
	for _, m := range list {
		for _, k := range []string{"subdir", "name", "id", "node", "storage", "vmid"} {
			if v, ok := m[k]; ok {
				t.Env.Outf("Dr--d        %s\n", scalar(v))
				break
			}
		}
	}
	return 0
}
