// Package pvesr is the lab's pvesr stand-in (pve-manager PVE/CLI/pvesr.pm):
// the job commands call the node's own API, `run` asks the simulator to run
// the node's jobs in the foreground under /var/lock/pvesr.lck, so a run
// during another one fails as PVE's does (H5).
package pvesr

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
	"github.com/gopve/proxmox/modules-src/lab/tools/pvesh"
)

// API is the node's HTTPS API (apiclient.Client).
type API = cli.Caller

// Control is the lab's control socket (control.Client).
type Control interface {
	Do(ctx context.Context, method, path string, body, out any) error
}

// Tool runs pvesr on one node.
type Tool struct {
	Env     *cli.Env
	Node    string
	API     API
	Control Control
}

const usage = `USAGE: pvesr <COMMAND> [ARGS] [OPTIONS]

       pvesr create-local-job <id> <target> [OPTIONS]
       pvesr delete <id> [OPTIONS]
       pvesr list
       pvesr read <id>
       pvesr run  [OPTIONS]
       pvesr schedule-now <id>
       pvesr status  [OPTIONS]
       pvesr update <id> [OPTIONS]
`

var booleans = map[string]bool{"force": true, "keep": true, "verbose": true, "disable": true, "mail": true}

func (t *Tool) die(err error) int { return t.Env.Fail(255, "%v", err) }

// Run executes pvesr with env.Args.
func (t *Tool) Run() int {
	cmd, code, ok := cli.ParseCommand(t.Env, "pvesr", usage, booleans)
	if !ok {
		return code
	}
	pos, params, arity := cmd.Pos, cmd.Params, cmd.Arity
	ctx := context.Background()
	call := func(method, path string) int { return cmd.Call(ctx, t.API, method, path) }
	switch pos[0] {
	case "list":
		return t.list(ctx)
	case "status":
		return t.status(ctx, params)
	case "create-local-job":
		if !arity(3, "create-local-job <id> <target> [OPTIONS]") {
			return 255
		}
		params.Set("id", pos[1])
		params.Set("target", pos[2])
		params.Set("type", "local")
		return call(http.MethodPost, "/cluster/replication")
	case "update":
		if !arity(2, "update <id> [OPTIONS]") {
			return 255
		}
		return call(http.MethodPut, "/cluster/replication/"+url.PathEscape(pos[1]))
	case "delete":
		if !arity(2, "delete <id> [OPTIONS]") {
			return 255
		}
		code := call(http.MethodDelete, "/cluster/replication/"+url.PathEscape(pos[1]))
		if code == 0 && params.Get("force") == "" {
			t.Env.Errf("Replication job removal is a background task and will take some time.\n")
		}
		return code
	case "schedule-now":
		if !arity(2, "schedule-now <id>") {
			return 255
		}
		return call(http.MethodPost, "/nodes/"+url.PathEscape(t.Node)+"/replication/"+url.PathEscape(pos[1])+"/schedule_now")
	case "read":
		if !arity(2, "read <id>") {
			return 255
		}
		raw, err := t.API.Call(ctx, http.MethodGet, "/cluster/replication/"+url.PathEscape(pos[1]), nil)
		if err != nil {
			return t.die(err)
		}
		var v any
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.UseNumber()
		_ = dec.Decode(&v)
		t.Env.Outf("%s\n", pvesh.PerlPretty(v))
		return 0
	case "run":
		var out struct {
			Log []string `json:"log"`
		}
		err := t.Control.Do(ctx, http.MethodPost, "/v1/nodes/"+url.PathEscape(t.Node)+"/replication/run",
			map[string]any{"id": params.Get("id")}, &out)
		if err != nil {
			return t.die(err)
		}
		if params.Get("verbose") == "1" {
			for _, l := range out.Log {
				t.Env.Outf("%s\n", l)
			}
		}
		return 0
	}
	t.Env.Errf("ERROR: unknown command 'pvesr %s'\n%s", pos[0], usage)
	return 255
}

// job is one entry of /cluster/replication or /nodes/{node}/replication.
type job struct {
	ID        string          `json:"id"`
	Guest     float64         `json:"guest"`
	Target    string          `json:"target"`
	Schedule  *string         `json:"schedule"`
	RawRate   json.RawMessage `json:"rate"`
	Disable   float64         `json:"disable"`
	LastSync  float64         `json:"last_sync"`
	NextSync  float64         `json:"next_sync"`
	Duration  *float64        `json:"duration"`
	FailCount float64         `json:"fail_count"`
	Error     *string         `json:"error"`
	PID       float64         `json:"pid"`
}

func (t *Tool) jobs(ctx context.Context, path string, params url.Values) ([]job, error) {
	raw, err := t.API.Call(ctx, http.MethodGet, path, params)
	if err != nil {
		return nil, err
	}
	var list []job
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("unexpected answer from GET %s: %w", path, err)
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].Guest < list[j].Guest })
	return list, nil
}

func (t *Tool) list(ctx context.Context) int {
	list, err := t.jobs(ctx, "/cluster/replication", nil)
	if err != nil {
		return t.die(err)
	}
	const format = "%-20s %-20s %10s %5s %8s\n"
	t.Env.Outf(format, "JobID", "Target", "Schedule", "Rate", "Enabled")
	for _, j := range list {
		sched := "*/15"
		if j.Schedule != nil {
			sched = *j.Schedule
		}
		rate := "-"
		if len(j.RawRate) > 0 && string(j.RawRate) != "null" {
			rate = strings.Trim(string(j.RawRate), `"`)
		}
		enabled := "yes"
		if j.Disable != 0 {
			enabled = "no"
		}
		t.Env.Outf(format, j.ID, "local/"+j.Target, sched, rate, enabled)
	}
	return 0
}

func (t *Tool) status(ctx context.Context, params url.Values) int {
	list, err := t.jobs(ctx, "/nodes/"+url.PathEscape(t.Node)+"/replication", params)
	if err != nil {
		return t.die(err)
	}
	const format = "%-10s %-10s %-20s %20s %20s %10s %10s %s\n"
	t.Env.Outf(format, "JobID", "Enabled", "Target", "LastSync", "NextSync", "Duration", "FailCount", "State")
	stamp := func(ts float64) string { return time.Unix(int64(ts), 0).Format("2006-01-02_15:04:05") }
	for _, j := range list {
		last, next := "-", "-"
		if j.LastSync > 0 {
			last = stamp(j.LastSync)
		}
		if j.NextSync > 0 {
			next = "pending"
			if int64(j.NextSync) > time.Now().Unix() {
				next = stamp(j.NextSync)
			}
		}
		state := "OK"
		if j.Error != nil {
			state = *j.Error
		}
		if j.PID != 0 {
			state = "SYNCING"
		}
		enabled := "Yes"
		if j.Disable != 0 {
			enabled = "No"
		}
		dur := "-"
		if j.Duration != nil {
			dur = strconv.FormatFloat(*j.Duration, 'f', -1, 64)
		}
		t.Env.Outf(format, j.ID, enabled, "local/"+j.Target, last, next, dur, strconv.Itoa(int(j.FailCount)), state)
	}
	return 0
}
