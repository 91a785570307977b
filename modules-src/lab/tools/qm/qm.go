// Package qm is the lab's qm and pct stand-in: guests live in the simulator
// (their configs in /etc/pve), so every command is a call to the node's own
// API, as qemu-server's CLI (src/PVE/CLI/qm.pm) and pve-container's
// (src/PVE/CLI/pct.pm) call their API methods. Output follows them: `list`
// and `config` formats, `status: <state>`, and for commands that run a
// worker the task's log on stdout, its error on stderr with exit status 255.
package qm

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
)

// API is what qm needs (apiclient.Client implements it).
type API interface {
	Call(ctx context.Context, method, path string, params url.Values) (json.RawMessage, error)
}

// Tool runs qm on one node.
type Tool struct {
	Env  *cli.Env
	Node string
	API  API
	// Poll is the task polling interval (default 200 ms).
	Poll time.Duration
	// CT makes it pct: containers (/nodes/{node}/lxc).
	CT bool
}

const usage = `USAGE: qm <COMMAND> [ARGS] [OPTIONS]

       qm clone <vmid> <newid> [OPTIONS]
       qm config <vmid> [OPTIONS]
       qm create <vmid> [OPTIONS]
       qm destroy <vmid> [OPTIONS]
       qm disk resize <vmid> <disk> <size> [OPTIONS]
       qm disk unlink <vmid> --idlist <string> [OPTIONS]
       qm list  [OPTIONS]
       qm migrate <vmid> <target> [OPTIONS]
       qm set <vmid> [OPTIONS]
       qm shutdown <vmid> [OPTIONS]
       qm start <vmid> [OPTIONS]
       qm status <vmid> [OPTIONS]
       qm stop <vmid> [OPTIONS]
       qm template <vmid> [OPTIONS]
`

// booleans are qm options that may be given bare.
var booleans = map[string]bool{"full": true, "online": true, "force": true, "purge": true, "skiplock": true,
	"with-local-disks": true, "current": true, "start": true, "verbose": true, "keepActive": true, "forceStop": true,
	"destroy-unreferenced-disks": true, "template": true, "onboot": true, "agent": false}

// args is the number of positional arguments after the command.
var args = map[string][]string{
	"clone": {"vmid", "newid"}, "config": {"vmid"}, "create": {"vmid"}, "destroy": {"vmid"},
	"migrate": {"vmid", "target"}, "set": {"vmid"}, "shutdown": {"vmid"}, "start": {"vmid"},
	"status": {"vmid"}, "stop": {"vmid"}, "template": {"vmid"}, "resize": {"vmid", "disk", "size"}, "list": {},
	"unlink": {"vmid"},
}

// ctArgs are pct's commands (pct.pm $cmddef), the simulated ones.
var ctArgs = map[string][]string{
	"config": {"vmid"}, "create": {"vmid", "ostemplate"}, "destroy": {"vmid"}, "set": {"vmid"},
	"shutdown": {"vmid"}, "start": {"vmid"}, "status": {"vmid"}, "stop": {"vmid"}, "list": {},
	"resize": {"vmid", "disk", "size"},
}

const ctUsage = `USAGE: pct <COMMAND> [ARGS] [OPTIONS]

       pct config <vmid> [OPTIONS]
       pct create <vmid> <ostemplate> [OPTIONS]
       pct destroy <vmid> [OPTIONS]
       pct list
       pct resize <vmid> <disk> <size> [OPTIONS]
       pct set <vmid> [OPTIONS]
       pct shutdown <vmid> [OPTIONS]
       pct start <vmid> [OPTIONS]
       pct status <vmid> [OPTIONS]
       pct stop <vmid> [OPTIONS]
`

func (t *Tool) die(err error) int { return t.Env.Fail(255, "%v", err) }

func (t *Tool) name() string {
	if t.CT {
		return "pct"
	}
	return "qm"
}

// Run executes qm (or pct) with env.Args.
func (t *Tool) Run() int {
	a := t.Env.Args
	if len(a) >= 2 && a[0] == "disk" && (a[1] == "resize" || a[1] == "unlink") {
		a = append([]string{a[1]}, a[2:]...)
	}
	pos, opts, err := cli.PVEArgs(a, booleans)
	if err != nil {
		return t.die(err)
	}
	table, help, kind := args, usage, "qemu"
	if t.CT {
		table, help, kind = ctArgs, ctUsage, "lxc"
	}
	if len(pos) == 0 {
		t.Env.Errf("ERROR: no command specified\n%s", help)
		return 255
	}
	cmd := pos[0]
	names, known := table[cmd]
	if !known {
		t.Env.Errf("ERROR: unknown command '%s %s'\n%s", t.name(), cmd, help)
		return 255
	}
	if len(pos)-1 != len(names) {
		return t.die(fmt.Errorf("400 wrong number of arguments\n%s %s <%s> [OPTIONS]", t.name(), cmd, strings.Join(names, "> <")))
	}
	params := url.Values{}
	for k, v := range opts {
		for _, x := range strings.Split(v, "\x00") {
			params.Add(k, x)
		}
	}
	for i, n := range names {
		if n != "vmid" {
			params.Set(n, pos[i+1])
		}
	}
	ctx := context.Background()
	vm := ""
	if len(pos) > 1 {
		vm = "/nodes/" + url.PathEscape(t.Node) + "/" + kind + "/" + url.PathEscape(pos[1])
	}
	switch cmd {
	case "list":
		return t.list(ctx)
	case "config":
		return t.config(ctx, vm, params)
	case "status":
		return t.status(ctx, vm)
	case "set":
		if _, err := t.API.Call(ctx, http.MethodPut, vm+"/config", params); err != nil {
			return t.die(err)
		}
		if t.CT {
			return 0
		}
		// update_vm prints its log line; qm runs it in the foreground.
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(params)) {
			if k == "digest" {
				continue
			}
			v := strings.Join(params[k], ",")
			if k == "cipassword" {
				v = "<hidden>"
			}
			parts = append(parts, "-"+k, v)
		}
		t.Env.Outf("update VM %s: %s\n", pos[1], strings.Join(parts, " "))
		return 0
	case "create":
		params.Set("vmid", pos[1])
		return t.task(ctx, http.MethodPost, "/nodes/"+url.PathEscape(t.Node)+"/"+kind, params)
	case "destroy":
		return t.task(ctx, http.MethodDelete, vm, params)
	case "resize":
		return t.task(ctx, http.MethodPut, vm+"/resize", params)
	case "unlink":
		// qm.pm: unlink is synchronous (update_vm), no task to wait for.
		if _, err := t.API.Call(ctx, http.MethodPut, vm+"/unlink", params); err != nil {
			return t.die(err)
		}
		return 0
	case "start", "stop", "shutdown":
		return t.task(ctx, http.MethodPost, vm+"/status/"+cmd, params)
	default: // clone, migrate, template
		return t.task(ctx, http.MethodPost, vm+"/"+cmd, params)
	}
}

// task starts a worker and waits for it as the CLI's foreground worker
// does: its log on stdout, a failure on stderr (exit 255).
func (t *Tool) task(ctx context.Context, method, path string, params url.Values) int {
	raw, err := t.API.Call(ctx, method, path, params)
	if err != nil {
		return t.die(err)
	}
	var upid string
	if err := json.Unmarshal(raw, &upid); err != nil || upid == "" {
		return 0 // nothing to wait for
	}
	node := t.Node
	if parts := strings.Split(upid, ":"); len(parts) > 2 {
		node = parts[1]
	}
	poll := t.Poll
	if poll == 0 {
		poll = 200 * time.Millisecond
	}
	base := "/nodes/" + url.PathEscape(node) + "/tasks/" + url.PathEscape(upid)
	var st struct {
		Status     string `json:"status"`
		ExitStatus string `json:"exitstatus"`
	}
	for {
		raw, err := t.API.Call(ctx, http.MethodGet, base+"/status", nil)
		if err != nil {
			return t.die(err)
		}
		if err := json.Unmarshal(raw, &st); err != nil {
			return t.die(fmt.Errorf("unexpected task status: %w", err))
		}
		if st.Status == "stopped" {
			break
		}
		time.Sleep(poll)
	}
	raw, err = t.API.Call(ctx, http.MethodGet, base+"/log", url.Values{"limit": {"10000"}})
	if err != nil {
		return t.die(err)
	}
	var lines []struct {
		T string `json:"t"`
	}
	_ = json.Unmarshal(raw, &lines)
	for _, l := range lines {
		if strings.HasPrefix(l.T, "TASK ") {
			continue
		}
		t.Env.Outf("%s\n", l.T)
	}
	if st.ExitStatus != "OK" && !strings.HasPrefix(st.ExitStatus, "WARNINGS: ") {
		return t.Env.Fail(255, "%s", st.ExitStatus)
	}
	return 0
}

// num accepts JSON numbers and numeric strings.
type num float64

func (n *num) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*n = 0
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	*n = num(f)
	return err
}

func (t *Tool) list(ctx context.Context) int {
	if t.CT {
		return t.ctList(ctx)
	}
	raw, err := t.API.Call(ctx, http.MethodGet, "/nodes/"+url.PathEscape(t.Node)+"/qemu", nil)
	if err != nil {
		return t.die(err)
	}
	var list []struct {
		VMID      num    `json:"vmid"`
		Name      string `json:"name"`
		Status    string `json:"status"`
		QMPStatus string `json:"qmpstatus"`
		MaxMem    num    `json:"maxmem"`
		MaxDisk   num    `json:"maxdisk"`
		PID       num    `json:"pid"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return t.die(fmt.Errorf("unexpected answer from GET /nodes/%s/qemu: %w", t.Node, err))
	}
	if len(list) == 0 {
		return 0
	}
	sort.Slice(list, func(i, j int) bool { return list[i].VMID < list[j].VMID })
	t.Env.Outf("%10s %-20s %-10s %-10s %12s %-10s\n", "VMID", "NAME", "STATUS", "MEM(MB)", "BOOTDISK(GB)", "PID")
	for _, v := range list {
		status := v.QMPStatus
		if status == "" {
			status = v.Status
		}
		t.Env.Outf("%10d %-20s %-10s %-10d %12.2f %-10d\n", int64(v.VMID), v.Name, status,
			int64(v.MaxMem)/(1024*1024), float64(v.MaxDisk)/(1024*1024*1024), int64(v.PID))
	}
	return 0
}

// ctList is pct list: "%-10s %-10s %-12s %-20s".
func (t *Tool) ctList(ctx context.Context) int {
	raw, err := t.API.Call(ctx, http.MethodGet, "/nodes/"+url.PathEscape(t.Node)+"/lxc", nil)
	if err != nil {
		return t.die(err)
	}
	var list []struct {
		VMID   num    `json:"vmid"`
		Name   string `json:"name"`
		Status string `json:"status"`
		Lock   string `json:"lock"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return t.die(fmt.Errorf("unexpected answer from GET /nodes/%s/lxc: %w", t.Node, err))
	}
	if len(list) == 0 {
		return 0
	}
	sort.Slice(list, func(i, j int) bool { return list[i].VMID < list[j].VMID })
	const format = "%-10s %-10s %-12s %-20s\n"
	t.Env.Outf(format, "VMID", "Status", "Lock", "Name")
	for _, c := range list {
		t.Env.Outf(format, strconv.FormatInt(int64(c.VMID), 10), c.Status, c.Lock, c.Name)
	}
	return 0
}

func (t *Tool) config(ctx context.Context, vm string, params url.Values) int {
	raw, err := t.API.Call(ctx, http.MethodGet, vm+"/config", params)
	if err != nil {
		return t.die(err)
	}
	var conf map[string]any
	if err := json.Unmarshal(raw, &conf); err != nil {
		return t.die(fmt.Errorf("unexpected config answer: %w", err))
	}
	keys := make([]string, 0, len(conf))
	for k := range conf {
		if k != "digest" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := conf[k]
		s := fmt.Sprint(v)
		if f, ok := v.(float64); ok {
			s = strconv.FormatFloat(f, 'f', -1, 64)
		}
		if k == "description" {
			// PVE::Tools::encode_text keeps a description on one line
			// (reconstruction: only % and newlines are encoded here).
			s = strings.NewReplacer("%", "%25", "\n", "%0A").Replace(s)
		}
		t.Env.Outf("%s: %s\n", k, s)
	}
	return 0
}

func (t *Tool) status(ctx context.Context, vm string) int {
	raw, err := t.API.Call(ctx, http.MethodGet, vm+"/status/current", nil)
	if err != nil {
		return t.die(err)
	}
	var st struct {
		Status    string `json:"status"`
		QMPStatus string `json:"qmpstatus"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return t.die(fmt.Errorf("unexpected status answer: %w", err))
	}
	s := st.QMPStatus
	if t.CT {
		s = st.Status
	}
	if s == "" {
		s = "unknown"
	}
	t.Env.Outf("status: %s\n", s)
	return 0
}
