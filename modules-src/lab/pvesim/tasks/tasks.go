// Package tasks is the simulator's model of PVE's worker tasks, after
// pve-common and pve-manager: a task's id (src/PVE/UPID.pm encode and
// decode, src/PVE/Tools.pm upid_encode and upid_decode before it), its end
// as src/PVE/RESTEnvironment.pm fork_worker writes it (exit status "OK",
// "WARNINGS: N" — a success, UPID.pm status_is_error — or an error text,
// and the log's last line "TASK OK", "TASK WARNINGS: N" or "TASK ERROR:
// …"; a log without one reads "unexpected status", UPID.pm read_status),
// and the views of pve-manager's PVE/API2/Tasks.pm: read_task_status,
// read_task_log (a running task's empty log reads "no content") and
// node_tasks' filters, and their lookup of a task by its UPID (Find).
// fork_worker's choice of the exit status (Result: the worker's, an
// injected one, or "OK"; none for a worker that died with its node) is
// here; core keeps only the goroutine, the lock and the hooks around it.
//
// It is a backend out of the one-package simulator (issue 27 §1), as
// pvesim/access is: pvesim starts the workers, holds the lock the task
// list is read and written under, persists the tasks (state.json's
// nodes.*.tasks) and checks who may read them; it never imports pvesim.
package tasks

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Task is one worker task on its node.
type Task struct {
	UPID       string   `json:"upid"`
	Node       string   `json:"node"`
	PID        int      `json:"pid"`
	PStart     int      `json:"pstart"`
	StartTime  int64    `json:"starttime"`
	EndTime    int64    `json:"endtime,omitempty"`
	Type       string   `json:"type"`
	ID         string   `json:"id"`
	User       string   `json:"user"` // user@realm or user@realm!token
	Status     string   `json:"status"`
	ExitStatus string   `json:"exitstatus,omitempty"`
	Log        []string `json:"log"`
}

// New is a running task with its UPID (upid_encode:
// UPID:node:pid:pstart:starttime:type:id:user:, the numbers in hex).
func New(node string, pid, pstart int, start int64, typ, id, user string) *Task {
	upid := fmt.Sprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", node, pid, pstart, start, typ, id, user)
	return &Task{UPID: upid, Node: node, PID: pid, PStart: pstart, StartTime: start,
		Type: typ, ID: id, User: user, Status: "running"}
}

// upidRe is upid_decode's pattern (pstart may have 9 digits). Newer
// UPID.pm decode also refuses a "/" in type, id and user; this is the
// older pattern the lab has always used.
var upidRe = regexp.MustCompile(`^UPID:([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?):([0-9A-Fa-f]{8}):([0-9A-Fa-f]{8,9}):([0-9A-Fa-f]{8}):([^:\s]+):([^:\s]*):([^:\s]+):$`)

// ParseUPID returns the node a task runs on (where it must be polled).
func ParseUPID(upid string) (node string, ok bool) {
	m := upidRe.FindStringSubmatch(upid)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// IsWarnings tells whether an exit status is "WARNINGS: N".
func IsWarnings(exit string) bool { return strings.HasPrefix(exit, "WARNINGS: ") }

// Succeeded tells whether an exit status is a success: OK or WARNINGS: N.
func Succeeded(exit string) bool { return exit == "OK" || IsWarnings(exit) }

// Logf appends a line to the task log (the caller holds the lock the
// task list is read and written under).
func (t *Task) Logf(format string, args ...any) {
	t.Log = append(t.Log, fmt.Sprintf(format, args...))
}

// Result is the exit status fork_worker records: the worker's (exit, ""
// for a clean end), or else injected's — an exit status the request was
// made to end with ("" for none; a worker that ends with warnings) —, or
// "OK"; a worker that died with its node (died) never wrote one, and the
// task reads "unexpected status" (UPID.pm read_status).
func Result(exit, injected string, died bool) string {
	if exit == "" {
		exit = injected
	}
	if exit == "" {
		exit = "OK"
	}
	if died {
		// The node lost power while the task ran: the worker died with it,
		// its last steps never happened and its log has no TASK line;
		// after boot the task is one whose process is gone ("unexpected
		// status", as a lab restart records it). Reconstruction of what
		// PVE's task list shows for a worker that vanished.
		exit = "unexpected status"
	}
	return exit
}

// Find is Tasks.pm's upid check and lookup of upid among a node's tasks;
// paramErr is the 400's parameter error when it is not one of them.
func Find(list []*Task, upid string) (t *Task, paramErr map[string]string) {
	if _, ok := ParseUPID(upid); !ok {
		return nil, map[string]string{"upid": "unable to parse worker upid '" + upid + "'"}
	}
	for _, t := range list {
		if t.UPID == upid {
			return t, nil
		}
	}
	return nil, map[string]string{"upid": "no such task"}
}

// Finish ends the task with exit at now (Unix seconds) and writes
// fork_worker's last log line; a task whose worker died with its node
// (died) has none.
func (t *Task) Finish(exit string, died bool, now int64) {
	switch {
	case died:
	case Succeeded(exit):
		t.Log = append(t.Log, "TASK "+exit)
	default:
		t.Log = append(t.Log, "TASK ERROR: "+exit)
	}
	t.Status, t.ExitStatus, t.EndTime = "stopped", exit, now
}

// Abandon is a task that was running when the simulator stopped: its
// process is gone and its log has no TASK line, so PVE reads it stopped
// with "unexpected status" (UPID.pm read_status).
func (t *Task) Abandon(now int64) {
	if t.Status == "running" {
		t.Status, t.ExitStatus, t.EndTime = "stopped", "unexpected status", now
	}
}

// Owner is the user a task belongs to: a token's task is its user's.
func (t *Task) Owner() string {
	owner, _, _ := strings.Cut(t.User, "!")
	return owner
}

// StatusView is read_task_status: a token's task shows user and tokenid
// separately; exitstatus once stopped.
func (t *Task) StatusView() map[string]any {
	v := map[string]any{
		"upid": t.UPID, "node": t.Node, "pid": t.PID, "pstart": t.PStart, "starttime": t.StartTime,
		"type": t.Type, "id": t.ID, "status": t.Status,
	}
	user, tok, isTok := strings.Cut(t.User, "!")
	v["user"] = user
	if isTok {
		v["tokenid"] = tok
	}
	if t.Status == "stopped" {
		v["exitstatus"] = t.ExitStatus
	}
	return v
}

// LogPage is read_task_log: lines numbered from 1, from start, at most
// limit; a running task with no line yet reads "no content".
func (t *Task) LogPage(start, limit int) []map[string]any {
	out := []map[string]any{}
	for i, l := range t.Log {
		if i < start || len(out) >= limit {
			continue
		}
		out = append(out, map[string]any{"n": i + 1, "t": l})
	}
	if len(t.Log) == 0 && t.Status == "running" {
		out = append(out, map[string]any{"n": 1, "t": "no content"})
	}
	return out
}

// Filter is node_tasks' choice of tasks.
type Filter struct {
	// Source is "archive" (stopped tasks, the default), "active"
	// (running) or "all".
	Source string
	// Auditor has Sys.Audit on the node; others see only User's tasks.
	Auditor bool
	User    string
	// TypeFilter is a task type; UserFilter a part of the task's user.
	TypeFilter, UserFilter string
	// Errors keeps only the tasks that failed.
	Errors bool
	// VMID, Since and Until apply when set (Since and Until bound the
	// start time, both inclusive).
	VMID         *string
	Since, Until *int64
}

func (f Filter) keep(t *Task) bool {
	switch {
	case f.Source == "archive" && t.Status == "running", f.Source == "active" && t.Status != "running":
		return false
	case !f.Auditor && t.Owner() != f.User:
		return false
	case f.TypeFilter != "" && t.Type != f.TypeFilter, f.UserFilter != "" && !strings.Contains(t.User, f.UserFilter):
		return false
	case f.Errors && (t.Status == "running" || Succeeded(t.ExitStatus)):
		return false
	case f.VMID != nil && t.ID != *f.VMID:
		return false
	case f.Since != nil && t.StartTime < *f.Since, f.Until != nil && t.StartTime > *f.Until:
		return false
	}
	return true
}

// List is node_tasks: the tasks f keeps, newest first, from start, at
// most limit.
func List(tasks []*Task, f Filter, start, limit int) []map[string]any {
	if f.Source == "" {
		f.Source = "archive"
	}
	var list []*Task
	for _, t := range tasks {
		if f.keep(t) {
			list = append(list, t)
		}
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].StartTime > list[j].StartTime })
	out := []map[string]any{}
	for i, t := range list {
		if i < start || len(out) >= limit {
			continue
		}
		v := map[string]any{"upid": t.UPID, "node": t.Node, "pid": t.PID, "pstart": t.PStart,
			"starttime": t.StartTime, "type": t.Type, "id": t.ID, "user": t.User}
		if t.Status == "stopped" {
			v["endtime"] = t.EndTime
			v["status"] = t.ExitStatus
		}
		out = append(out, v)
	}
	return out
}
