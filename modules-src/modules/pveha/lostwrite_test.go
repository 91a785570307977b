package pveha

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/ha"
	"github.com/gopve/proxmox/modules-src/pveapi/replication"
)

// loseAnswers makes the lab handle the first request of each method and
// path completely, then reset the connection instead of answering.
func (w *world) loseAnswers(method string, paths ...string) {
	w.t.Helper()
	for _, p := range paths {
		if _, err := w.sim.Faults().Add(pvesim.Fault{Method: method, Path: p, Kind: pvesim.FaultLostAnswer, Count: 1}); err != nil {
			w.t.Fatal(err)
		}
	}
}

// assertFaultsFired fails unless every installed fault fired (a count-1
// fault is dropped once it fired): a lost answer that never happened
// proves nothing.
func (w *world) assertFaultsFired() {
	w.t.Helper()
	if left := w.sim.Faults().List(); len(left) != 0 {
		w.t.Errorf("faults that never fired (the case was not exercised): %+v", left)
	}
}

// lostWarnings counts the warnings that say an answer was lost and a
// read-back settled it.
func lostWarnings(res map[string]any) int {
	n := 0
	ws, _ := res["warnings"].([]any)
	for _, w := range ws {
		if strings.Contains(pveapi.String(w), "was lost") && strings.Contains(pveapi.String(w), "not sent again") {
			n++
		}
	}
	return n
}

// A PUT whose answer is lost (PVE made the change, the connection reset):
// the module reads the object back to learn that it happened, reports
// changed with a warning, and never sends the PUT again — for a
// replication job, the HA resource and the placement (a PVE 9 rule, a
// PVE 8 group). The lab's config holds the new values, and a rerun
// changes nothing and writes nothing.
func TestLostUpdateSettledNotResent(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE %d", v), func(t *testing.T) {
			w := newWorld(t, v)
			w.seedGuests()
			if res := w.run(vmArgs(), false); failed(res) {
				t.Fatal(res["msg"])
			}
			placement := "/cluster/ha/rules/gopve-vm-201"
			if v == 8 {
				placement = "/cluster/ha/groups/gopve-vm-201"
			}
			w.loseAnswers("PUT", "/cluster/replication/201-0", "/cluster/ha/resources/vm:201", placement)
			w.sim.ResetRequests()
			args := vmArgs()
			args["schedule"], args["max_restart"], args["node_affinity"] = "*/5", 3, map[string]any{"pve01": 100}
			res := w.run(args, false)
			if failed(res) || res["changed"] != true {
				t.Fatalf("lost PUT answers: %v", res["msg"])
			}
			w.assertFaultsFired()
			if n := lostWarnings(res); n != 3 {
				t.Errorf("%d lost answers reported, want 3: %v", n, res["warnings"])
			}
			writes := w.writes()
			for _, p := range []string{"/cluster/replication/201-0", "/cluster/replication/201-1", "/cluster/ha/resources/vm:201", placement} {
				if n := count(writes, "PUT "+p); n != 1 {
					t.Errorf("PUT %s sent %d times, want 1 (never re-sent after a lost answer): %v", p, n, writes)
				}
			}
			if len(writes) != 4 {
				t.Errorf("writes %v, want the four PUTs only", writes)
			}
			// What the lab holds now, read without the module.
			jobs, _ := replication.Jobs(w.ctx(), w.api)
			for _, j := range jobs {
				if j.Schedule != "*/5" {
					t.Errorf("job %s schedule %q in the lab", j.ID, j.Schedule)
				}
			}
			list, _ := ha.Resources(w.ctx(), w.api)
			if r, ok := ha.FindResource(list, ha.SID{Type: "vm", VMID: 201}); !ok || r.MaxRestart == nil || *r.MaxRestart != 3 {
				t.Errorf("resource in the lab: %+v", list)
			}
			w.sim.ResetRequests()
			if again := w.run(args, false); failed(again) || again["changed"] != false || len(w.writes()) != 0 {
				t.Errorf("rerun after the settled PUTs: %v %v writes %v", again["msg"], again["changes"], w.writes())
			}
		})
	}
}

// A DELETE whose answer is lost, for every object state=absent removes:
// the rule (9) or group (8), the resource, the jobs. Each is read back
// (gone, or a job marked for removal), reported changed with a warning,
// sent once; the lab holds none of them after the run, and a rerun writes
// nothing.
func TestLostDeleteSettledNotResent(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE %d", v), func(t *testing.T) {
			w := newWorld(t, v)
			w.seedGuests()
			if res := w.run(vmArgs(), false); failed(res) {
				t.Fatal(res["msg"])
			}
			placement := "/cluster/ha/rules/gopve-vm-201"
			if v == 8 {
				placement = "/cluster/ha/groups/gopve-vm-201"
			}
			w.loseAnswers("DELETE", placement, "/cluster/ha/resources/vm:201", "/cluster/replication/201-0")
			w.sim.ResetRequests()
			absent := map[string]any{"vmid": 201, "state": "absent", "wait_timeout": 30}
			res := w.run(absent, false)
			if failed(res) || res["changed"] != true {
				t.Fatalf("lost DELETE answers: %v", res["msg"])
			}
			w.assertFaultsFired()
			if n := lostWarnings(res); n != 3 {
				t.Errorf("%d lost answers reported, want 3: %v", n, res["warnings"])
			}
			writes := w.writes()
			for _, p := range []string{placement, "/cluster/ha/resources/vm:201", "/cluster/replication/201-0", "/cluster/replication/201-1"} {
				if n := count(writes, "DELETE "+p); n != 1 {
					t.Errorf("DELETE %s sent %d times, want 1: %v", p, n, writes)
				}
			}
			if len(writes) != 4 {
				t.Errorf("writes %v, want the four DELETEs only", writes)
			}
			if jobs, _ := replication.Jobs(w.ctx(), w.api); len(jobs) != 0 {
				t.Errorf("jobs left in the lab: %+v", jobs)
			}
			if list, _ := ha.Resources(w.ctx(), w.api); len(list) != 0 {
				t.Errorf("resources left in the lab: %+v", list)
			}
			w.sim.ResetRequests()
			if again := w.run(absent, false); failed(again) || again["changed"] != false || len(w.writes()) != 0 {
				t.Errorf("rerun: %v %v writes %v", again["msg"], again["changes"], w.writes())
			}
		})
	}
}

// A DELETE that never reached PVE (the connection reset before the
// handler ran): no read can prove it did not happen yet, so the run says
// changed, unverified — never "nothing changed" — and sends it once. The
// lab still holds the resource; the rerun reads that, sends the DELETE
// once more (a new run's own write) and converges.
func TestDeleteResetUnverifiedThenRerunConverges(t *testing.T) {
	w := newWorld(t, 9)
	w.seedGuests()
	if res := w.run(vmArgs(), false); failed(res) {
		t.Fatal(res["msg"])
	}
	if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "DELETE", Path: "/cluster/ha/resources/vm:201", Kind: pvesim.FaultReset, Count: 1}); err != nil {
		t.Fatal(err)
	}
	w.sim.ResetRequests()
	absent := map[string]any{"vmid": 201, "state": "absent", "wait_timeout": 30, "timeout": 4}
	res := w.run(absent, false)
	msg := pveapi.String(res["msg"])
	if !failed(res) || res["changed"] != true || !strings.Contains(pveapi.String(res["changes_unverified"]), "remove HA resource vm:201") ||
		strings.Contains(msg, "nothing was changed") || !strings.Contains(msg, "not sent again") {
		t.Errorf("reset DELETE: changed=%v unverified=%v msg=%s", res["changed"], res["changes_unverified"], msg)
	}
	w.assertFaultsFired()
	writes := w.writes()
	// The rule went first (a change the lab saw), then the DELETE of the
	// resource, once, which the lab never carried out.
	if count(writes, "DELETE /cluster/ha/rules/gopve-vm-201") != 1 || count(writes, "DELETE /cluster/ha/resources/vm:201") != 1 {
		t.Errorf("writes %v", writes)
	}
	list, _ := ha.Resources(w.ctx(), w.api)
	if _, ok := ha.FindResource(list, ha.SID{Type: "vm", VMID: 201}); !ok {
		t.Fatalf("the lab removed the resource despite the reset: %+v", list)
	}
	w.sim.ResetRequests()
	again := w.run(map[string]any{"vmid": 201, "state": "absent", "wait_timeout": 30}, false)
	if failed(again) || again["changed"] != true || count(w.writes(), "DELETE /cluster/ha/resources/vm:201") != 1 {
		t.Errorf("rerun: %v %v writes %v", again["msg"], again["changes"], w.writes())
	}
	if list, _ := ha.Resources(w.ctx(), w.api); len(list) != 0 {
		t.Errorf("resources left: %+v", list)
	}
}
