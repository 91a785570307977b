package pvecluster

import (
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// Issue 16 (C5): the answer to the API join is lost (PVE started the
// clusterjoin task, the UPID never arrived). The join is not sent again:
// the task is found in the joiner's task list, followed to its end, and
// the membership read back; the lost answer is a warning.
func TestAPIJoinLostAnswerFoundInTaskList(t *testing.T) {
	l := newLab(t, 9, 2)
	if res := l.run("pve01", l.args(map[string]any{"prepare": []any{"hosts"}}), false); failed(res) {
		t.Fatalf("create: %v", res["msg"])
	}
	l.sim.Faults().Add(pvesim.Fault{Node: "pve02", Method: "POST", Path: "/cluster/config/join", Kind: pvesim.FaultLostAnswer, Count: 1})
	l.sim.ResetRequests()
	args := l.args(map[string]any{"join_method": "api", "api_password": l.sim.RootPassword(), "validate_certs": false, "prepare": []any{"hosts"}})
	res := l.run("pve02", args, false)
	if failed(res) || res["changed"] != true {
		t.Fatalf("join with a lost answer: %v %v", res["msg"], res["evidence"])
	}
	if c := clusterOf(res); c == nil || !c.holds("pve02") {
		t.Errorf("read back %v", c)
	}
	if !strings.Contains(pveapiString(res["warnings"]), "was lost") {
		t.Errorf("the lost answer is not reported: %v", res["warnings"])
	}
	l.sim.WaitIdle()
	joins, lookups := 0, 0
	for _, r := range l.sim.Requests() {
		switch {
		case r.Method == "POST" && r.Path == "/cluster/config/join":
			joins++
		case r.Method == "GET" && r.Path == "/nodes/pve02/tasks" && r.Params["typefilter"] == "clusterjoin":
			lookups++
		}
	}
	if joins != 1 || lookups == 0 {
		t.Errorf("%d join requests (want 1), %d task list lookups (want some)", joins, lookups)
	}
}

// Check mode by construction: whatever clients the environment hands out,
// the module's check-mode environment makes them refuse writes.
func TestCheckModeClientsReadOnly(t *testing.T) {
	l := newLab(t, 9, 1)
	e := l.env("pve01").readOnly()
	local, err := e.Local(nil)
	if err != nil || !local.ReadOnly() {
		t.Errorf("local client in check mode: read-only=%v %v", err == nil && local.ReadOnly(), err)
	}
	other, err := e.Connect(nil, pveapitest.TokenConn(t, l.sim, "pve01"))
	if err != nil || !other.ReadOnly() {
		t.Errorf("connected client in check mode: %v", err)
	}
}
