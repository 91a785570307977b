package tasks

import (
	"fmt"
	"testing"
)

// upid_encode's format, read back by upid_decode's pattern (K3: the node in
// it is where the task is polled).
func TestUPIDK3(t *testing.T) {
	tk := New("pve01", 4001, 1234, 0x65000000, "qmclone", "100", "root@pam!lab")
	if tk.UPID != "UPID:pve01:00000FA1:000004D2:65000000:qmclone:100:root@pam!lab:" || tk.Status != "running" {
		t.Errorf("New: %+v", tk)
	}
	for upid, want := range map[string]string{
		tk.UPID: "pve01 true",
		"UPID:pve-2:00000001:123456789:00000001:vzdump::root@pam:": "pve-2 true", // empty id, 9-digit pstart
		"UPID:pve01:1:00000001:00000001:x::root@pam:":              " false",
		"UPID:pve01:00000001:00000001:00000001:x::root@pam":        " false", // no final colon
		"UPID:-pve:00000001:00000001:00000001:x::root@pam:":        " false",
		"garbage": " false",
	} {
		node, ok := ParseUPID(upid)
		if got := fmt.Sprint(node, " ", ok); got != want {
			t.Errorf("ParseUPID(%q) = %s, want %s", upid, got, want)
		}
	}
}

// fork_worker's end: OK and WARNINGS: N succeed with "TASK <status>", an
// error ends "TASK ERROR: <status>", a worker that died with its node
// writes nothing.
func TestFinish(t *testing.T) {
	for _, c := range []struct {
		exit string
		died bool
		last string
		ok   bool
	}{
		{"OK", false, "TASK OK", true},
		{"WARNINGS: 2", false, "TASK WARNINGS: 2", true},
		{"clone failed: disk full", false, "TASK ERROR: clone failed: disk full", false},
		{"unexpected status", true, "working", false},
	} {
		tk := &Task{Status: "running", Log: []string{"working"}}
		tk.Finish(c.exit, c.died, 42)
		if tk.Log[len(tk.Log)-1] != c.last || tk.Status != "stopped" || tk.ExitStatus != c.exit || tk.EndTime != 42 || Succeeded(c.exit) != c.ok {
			t.Errorf("Finish(%q, died %v): %+v, succeeded %v", c.exit, c.died, tk, Succeeded(c.exit))
		}
	}
	running, done := &Task{Status: "running"}, &Task{Status: "stopped", ExitStatus: "OK", EndTime: 1}
	running.Abandon(9)
	done.Abandon(9)
	if running.ExitStatus != "unexpected status" || running.EndTime != 9 || done.ExitStatus != "OK" || done.EndTime != 1 {
		t.Errorf("Abandon: %+v %+v", running, done)
	}
}

// read_task_status and read_task_log.
func TestStatusViewAndLog(t *testing.T) {
	tk := New("pve01", 1, 2, 3, "qmstart", "100", "ci@pve!tok")
	v := tk.StatusView()
	if v["user"] != "ci@pve" || v["tokenid"] != "tok" || v["status"] != "running" || v["exitstatus"] != nil || tk.Owner() != "ci@pve" {
		t.Errorf("running token task: %v", v)
	}
	if got := fmt.Sprint(tk.LogPage(0, 50)); got != "[map[n:1 t:no content]]" {
		t.Errorf("empty running log: %s", got)
	}
	tk.Log = []string{"a", "b", "c"}
	tk.Finish("OK", false, 4)
	if v := tk.StatusView(); v["exitstatus"] != "OK" || v["status"] != "stopped" {
		t.Errorf("stopped: %v", v)
	}
	if got := fmt.Sprint(tk.LogPage(1, 2)); got != "[map[n:2 t:b] map[n:3 t:c]]" {
		t.Errorf("log page: %s", got)
	}
	if got := fmt.Sprint((&Task{Status: "stopped"}).LogPage(0, 50)); got != "[]" {
		t.Errorf("empty stopped log: %s", got)
	}
}

// node_tasks: archive by default, only one's own tasks without Sys.Audit,
// the filters, newest first, paged.
func TestList(t *testing.T) {
	mk := func(start int64, typ, id, user, exit string) *Task {
		tk := New("pve01", int(start), 1, start, typ, id, user)
		if exit != "" {
			tk.Finish(exit, false, start+1)
		}
		return tk
	}
	all := []*Task{
		mk(10, "qmstart", "100", "root@pam", "OK"),
		mk(20, "qmstop", "101", "ci@pve!tok", "WARNINGS: 1"),
		mk(30, "qmstart", "101", "ci@pve", "boom"),
		mk(40, "qmclone", "100", "root@pam", ""),
	}
	ids := func(f Filter, start, limit int) string {
		var out []any
		for _, v := range List(all, f, start, limit) {
			out = append(out, v["starttime"])
		}
		return fmt.Sprint(out)
	}
	i := func(n int64) *int64 { return &n }
	s := func(v string) *string { return &v }
	for _, c := range []struct {
		f     Filter
		start int
		want  string
	}{
		{Filter{Auditor: true}, 0, "[30 20 10]"},
		{Filter{Auditor: true, Source: "active"}, 0, "[40]"},
		{Filter{Auditor: true, Source: "all"}, 0, "[40 30 20 10]"},
		{Filter{User: "ci@pve"}, 0, "[30 20]"},
		{Filter{Auditor: true, Errors: true}, 0, "[30]"},
		{Filter{Auditor: true, TypeFilter: "qmstart"}, 0, "[30 10]"},
		{Filter{Auditor: true, UserFilter: "!tok"}, 0, "[20]"},
		{Filter{Auditor: true, VMID: s("101")}, 0, "[30 20]"},
		{Filter{Auditor: true, Since: i(20), Until: i(30)}, 0, "[30 20]"},
		{Filter{Auditor: true}, 1, "[20 10]"},
	} {
		if got := ids(c.f, c.start, 50); got != c.want {
			t.Errorf("List(%+v, start %d) = %s, want %s", c.f, c.start, got, c.want)
		}
	}
	if got := ids(Filter{Auditor: true}, 0, 1); got != "[30]" {
		t.Errorf("limit 1: %s", got)
	}
	v := List(all, Filter{Auditor: true}, 0, 1)[0]
	if v["status"] != "boom" || v["endtime"] != int64(31) || v["user"] != "ci@pve" {
		t.Errorf("list entry: %v", v)
	}
}
