package pvecontainer

import (
	"net/url"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
)

// state: absent refuses what pve-container's destroy_vm refuses, before
// any write and in check mode alike (protection, a lock, HA without
// purge, replication jobs without purge); with purge a running HA-managed
// CT is stopped through HA (hastop, H4), polled until stopped, then
// destroyed with its HA resource and jobs. Each change is checked against
// the request log.
func TestAbsentRefusalsThenPurge(t *testing.T) {
	t.Parallel()
	for _, v := range []int{8, 9} {
		w := newWorld(t, v)
		if res := w.run(with(runnerArgs(), "state", "started"), false); failed(res) || res["changed"] != true {
			t.Fatalf("PVE %d create started: %v", v, msg(res))
		}
		absent := map[string]any{"vmid": 200, "hostname": "gitlab-runner", "state": "absent"}
		w.write("PUT", "/nodes/pve01/lxc/200/config", url.Values{"protection": {"1"}})
		steps := []struct {
			fix  func()
			want string
		}{
			{nil, "has protection enabled; PVE refuses to destroy it (can't remove CT 200 - protection mode enabled)"},
			{func() {
				w.write("PUT", "/nodes/pve01/lxc/200/config", url.Values{"delete": {"protection"}})
				w.write("POST", "/cluster/replication", url.Values{"id": {"200-0"}, "type": {"local"}, "target": {"pve02"}})
			}, "purge: CT 200 has replication jobs 200-0"},
			{func() { w.write("POST", "/cluster/ha/resources", url.Values{"sid": {"ct:200"}, "state": {"started"}}) },
				"purge: CT 200 is managed by HA; PVE refuses to destroy it unless purge is set, which also removes its HA resource (unable to remove CT 200 - used in HA resources and purge parameter not set.)"},
		}
		for _, s := range steps {
			if s.fix != nil {
				s.fix()
			}
			for _, check := range []bool{true, false} {
				w.sim.ResetRequests()
				res := w.run(absent, check)
				if !failed(res) || res["changed"] != false || !strings.Contains(msg(res), s.want) {
					t.Errorf("PVE %d check=%v: %q, want %q", v, check, msg(res), s.want)
				}
				if m := writes(w.sim); len(m) != 0 {
					t.Errorf("PVE %d: a refused absent wrote %+v", v, m)
				}
			}
		}
		if res := w.run(with(absent, "hostname", "other", "purge", true), false); !failed(res) || !strings.Contains(msg(res), `not "other"`) {
			t.Errorf("PVE %d: absent of another's CT: %v", v, msg(res))
		}
		purge := with(absent, "purge", true)
		w.sim.ResetRequests()
		check := w.run(purge, true)
		if failed(check) || check["changed"] != true || len(writes(w.sim)) != 0 {
			t.Fatalf("PVE %d purge check: %v", v, msg(check))
		}
		res := w.run(purge, false)
		if failed(res) || res["changed"] != true {
			t.Fatalf("PVE %d purge: %v", v, msg(res))
		}
		var sent []string
		for _, r := range writes(w.sim) {
			sent = append(sent, r.Method+" "+r.Path)
		}
		if strings.Join(sent, "; ") != "POST /nodes/pve01/lxc/200/status/stop; DELETE /nodes/pve01/lxc/200" {
			t.Errorf("PVE %d purge sent %v", v, sent)
		}
		if !strings.Contains(msg(res), "stop CT 200 (gitlab-runner) on pve01 through HA") {
			t.Errorf("PVE %d: the stop did not go through HA: %v", v, msg(res))
		}
		if _, ok := w.guest(200); ok {
			t.Errorf("PVE %d: CT 200 still there", v)
		}
		w.sim.ResetRequests()
		if again := w.run(purge, false); again["changed"] != false || len(writes(w.sim)) != 0 {
			t.Errorf("PVE %d absent rerun: %v", v, msg(again))
		}
	}
}

// H4: a CT under HA is started and stopped through HA (PVE answers the
// start with an hastart request, the CRM acts in its round), and the task
// waits until PVE reports the state; the rerun changes nothing.
func TestHAManagedStartStop(t *testing.T) {
	t.Parallel()
	for _, v := range []int{8, 9} {
		w := newWorld(t, v)
		if res := w.run(runnerArgs(), false); failed(res) {
			t.Fatalf("PVE %d create: %v", v, msg(res))
		}
		w.write("POST", "/cluster/ha/resources", url.Values{"sid": {"ct:200"}, "state": {"stopped"}})
		for _, state := range []string{"started", "stopped"} {
			w.sim.ResetRequests()
			res := w.run(with(runnerArgs(), "state", state), false)
			if failed(res) || res["changed"] != true || !strings.Contains(msg(res), "through HA") {
				t.Fatalf("PVE %d %s: %v %v", v, state, res["changed"], msg(res))
			}
			running := w.config("pve01", 200, true) != nil && w.statusRunning()
			if running != (state == "started") {
				t.Errorf("PVE %d %s: running %v", v, state, running)
			}
			w.sim.ResetRequests()
			if again := w.run(with(runnerArgs(), "state", state), false); again["changed"] != false || len(writes(w.sim)) != 0 {
				t.Errorf("PVE %d %s rerun: %v", v, state, msg(again))
			}
		}
	}
}

// On a running CT, PVE applies what it hot-plugs (memory) and keeps the
// rest (features) pending until the next start: the task is changed,
// returns features in pending with restart_required, and says so; the
// rerun sends nothing (the pending value is what the task asked).
func TestRunningCTPendingReturned(t *testing.T) {
	w := newWorld(t, 9)
	if res := w.run(with(runnerArgs(), "state", "started"), false); failed(res) {
		t.Fatalf("create: %v", msg(res))
	}
	args := with(runnerArgs(), "state", "started", "memory", 3072, "features", map[string]any{"nesting": true, "keyctl": true, "fuse": true})
	check := w.run(args, true)
	res := w.run(args, false)
	if failed(res) || res["changed"] != true || res["restart_required"] != true {
		t.Fatalf("running update: %v %v", res["restart_required"], msg(res))
	}
	pending, _ := res["pending"].([]any)
	var row map[string]any
	if len(pending) == 1 {
		row, _ = pending[0].(map[string]any)
	}
	if row["key"] != "features" || row["pending"] != "fuse=1,keyctl=1,nesting=1" || row["value"] != "keyctl=1,nesting=1" {
		t.Errorf("pending %v", res["pending"])
	}
	if check["restart_required"] != true || cfgOf(check)["memory"] != "3072" || cfgOf(check)["features"] != "keyctl=1,nesting=1" {
		t.Errorf("check mode: live config %v, restart_required %v", cfgOf(check), check["restart_required"])
	}
	if live := w.config("pve01", 200, true); live["memory"] != "3072" || live["features"] != "keyctl=1,nesting=1" {
		t.Errorf("live config %v", live)
	}
	w.sim.ResetRequests()
	if again := w.run(args, false); again["changed"] != false || len(writes(w.sim)) != 0 {
		t.Errorf("rerun: %v", msg(again))
	}
}

// A lost answer to the create (the vzcreate ran, the connection reset
// before the UPID came back) is settled by a read that proves the new CT
// is this task's (its task in the node's list, run as this token, and the
// hostname this write sent): changed, the create sent once.
func TestLostCreateAnswerSettledWithProof(t *testing.T) {
	for _, v := range []int{8, 9} {
		w := newWorld(t, v)
		if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: "/nodes/pve01/lxc", Kind: pvesim.FaultLostAnswer, Count: 1}); err != nil {
			t.Fatal(err)
		}
		w.sim.ResetRequests()
		res := w.run(runnerArgs(), false)
		if failed(res) || res["changed"] != true {
			t.Fatalf("PVE %d: %v", v, msg(res))
		}
		var creates int
		for _, r := range writes(w.sim) {
			if r.Method == "POST" && r.Path == "/nodes/pve01/lxc" {
				creates++
			}
		}
		if creates != 1 {
			t.Errorf("PVE %d: the create was sent %d times", v, creates)
		}
		if c := w.config("pve01", 200, false); c["hostname"] != "gitlab-runner" || c["lock"] != "" {
			t.Errorf("PVE %d: %v", v, c)
		}
		if again := w.run(runnerArgs(), false); again["changed"] != false {
			t.Errorf("PVE %d rerun: %v", v, msg(again))
		}
	}
}

// The stop before a destroy is sent once; when its answer is lost
// (FaultLostAnswer: PVE stopped the CT, the caller never heard), the
// guest's power, read back, settles it: the task goes on to the destroy,
// reports both changes, and never sends the stop twice.
func TestLostStopAnswerBeforeDestroySettledByRead(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 9)
	if res := w.run(with(runnerArgs(), "state", "started"), false); failed(res) || !w.statusRunning() {
		t.Fatalf("create started: %v", msg(res))
	}
	if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: "/nodes/pve01/lxc/200/status/stop", Kind: pvesim.FaultLostAnswer, Count: 1}); err != nil {
		t.Fatal(err)
	}
	w.sim.ResetRequests()
	res := w.run(map[string]any{"vmid": 200, "hostname": "gitlab-runner", "state": "absent"}, false)
	if failed(res) || res["changed"] != true || !strings.Contains(msg(res), "stop CT 200 (gitlab-runner) on pve01 before destroying it") {
		t.Fatalf("absent after a lost stop answer: %v %v", res["changed"], msg(res))
	}
	var sent []string
	lost := false
	for _, r := range writes(w.sim) {
		sent = append(sent, r.Method+" "+r.Path)
		lost = lost || (r.Path == "/nodes/pve01/lxc/200/status/stop" && r.Fault != "")
	}
	if strings.Join(sent, "; ") != "POST /nodes/pve01/lxc/200/status/stop; DELETE /nodes/pve01/lxc/200" {
		t.Errorf("sent %v, want the stop once, then the destroy", sent)
	}
	if !lost {
		t.Error("the stop's answer was not lost: the fault never fired")
	}
	if _, ok := w.guest(200); ok {
		t.Error("CT 200 still there")
	}
}
