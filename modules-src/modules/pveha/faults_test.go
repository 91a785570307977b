package pveha

import (
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/ha"
	"github.com/gopve/proxmox/modules-src/pveapi/replication"
)

func vmArgs() map[string]any {
	return map[string]any{"vmid": 201, "targets": []any{"pve01", "pve03"}, "node_affinity": map[string]any{"pve02": 100},
		"wait_timeout": 30}
}

// H5: replication.cfg's cluster lock not obtained is contention, and PVE
// takes it before changing anything: the create is sent again and
// succeeds. Every other write is sent once.
func TestLockContentionRetried(t *testing.T) {
	w := newWorld(t, 9)
	w.seedGuests()
	if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: "/cluster/replication", Kind: pvesim.FaultError, Status: 500,
		Message: "cfs-lock 'file-replication_cfg' error: got lock request timeout", Count: 1}); err != nil {
		t.Fatal(err)
	}
	w.sim.ResetRequests()
	res := w.run(vmArgs(), false)
	if failed(res) || res["changed"] != true {
		t.Fatalf("H5: %v", res["msg"])
	}
	if n := count(w.writes(), "POST /cluster/replication"); n != 3 {
		t.Errorf("POST /cluster/replication sent %d times, want 3 (two jobs, one re-sent after the lock timeout)", n)
	}
	jobs, _ := replication.Jobs(w.ctx(), w.api)
	if len(jobs) != 2 {
		t.Errorf("jobs in the lab: %+v", jobs)
	}
}

// An unanswered create (the lab makes it, then resets the connection) is
// settled by reading the object back: reported changed with a warning,
// never sent again — for a replication job and for the HA resource.
func TestLostCreateSettledNotResent(t *testing.T) {
	for _, path := range []string{"/cluster/replication", "/cluster/ha/resources", "/cluster/ha/rules"} {
		t.Run(path, func(t *testing.T) {
			w := newWorld(t, 9)
			w.seedGuests()
			if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: path, Kind: pvesim.FaultLostAnswer, Count: 1}); err != nil {
				t.Fatal(err)
			}
			w.sim.ResetRequests()
			res := w.run(vmArgs(), false)
			if failed(res) || res["changed"] != true {
				t.Fatalf("lost answer on %s: %v", path, res["msg"])
			}
			want := map[string]int{"/cluster/replication": 2, "/cluster/ha/resources": 1, "/cluster/ha/rules": 1}[path]
			if n := count(w.writes(), "POST "+path); n != want {
				t.Errorf("POST %s sent %d times, want %d (never re-sent after a lost answer)", path, n, want)
			}
			if !strings.Contains(pveapi.String(res["warnings"]), "was lost") {
				t.Errorf("the lost answer is not reported: %v", res["warnings"])
			}
			if again := w.run(vmArgs(), false); failed(again) || again["changed"] != false {
				t.Errorf("after the settled create: %v %v", again["msg"], again["changes"])
			}
		})
	}
}

// state=absent removes in reverse order — the rule (9) or, after the
// resource, the group (8) — and waits until PVE really dropped the jobs (a
// removal is carried out by the source node's next replication run).
func TestAbsentReverseOrderWaitsForJobs(t *testing.T) {
	for _, v := range []int{8, 9} {
		w := newWorld(t, v)
		w.seedGuests()
		if res := w.run(vmArgs(), false); failed(res) {
			t.Fatalf("PVE %d: %v", v, res["msg"])
		}
		absent := map[string]any{"vmid": 201, "state": "absent", "wait_timeout": 30}
		w.sim.ResetRequests()
		if res := w.run(absent, true); failed(res) || res["changed"] != true || len(w.writes()) != 0 {
			t.Fatalf("PVE %d absent check: %v %v", v, res["msg"], w.writes())
		}
		res := w.run(absent, false)
		if failed(res) || res["changed"] != true {
			t.Fatalf("PVE %d absent: %v", v, res["msg"])
		}
		want := []string{"DELETE /cluster/ha/rules/gopve-vm-201", "DELETE /cluster/ha/resources/vm:201",
			"DELETE /cluster/replication/201-0", "DELETE /cluster/replication/201-1"}
		if v == 8 {
			want = []string{"DELETE /cluster/ha/resources/vm:201", "DELETE /cluster/ha/groups/gopve-vm-201",
				"DELETE /cluster/replication/201-0", "DELETE /cluster/replication/201-1"}
		}
		if got := w.writes(); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("PVE %d removal order %v, want %v", v, got, want)
		}
		if jobs, _ := replication.Jobs(w.ctx(), w.api); len(jobs) != 0 {
			t.Errorf("PVE %d: jobs still listed after the run: %+v", v, jobs)
		}
		if list, _ := ha.Resources(w.ctx(), w.api); len(list) != 0 {
			t.Errorf("PVE %d: resources left: %+v", v, list)
		}
		w.sim.ResetRequests()
		if again := w.run(absent, false); failed(again) || again["changed"] != false || len(w.writes()) != 0 {
			t.Errorf("PVE %d absent again: %v %v", v, again["msg"], again["changes"])
		}
	}
}

// A 5xx from a proxy on a read (the node briefly unreachable) is retried;
// the run goes on as if nothing happened.
func TestRead5xxRetried(t *testing.T) {
	w := newWorld(t, 8)
	w.seedGuests()
	for _, path := range []string{"/cluster/replication", "/cluster/ha/resources"} {
		if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "GET", Path: path, Kind: pvesim.FaultError, Status: 503,
			Message: "proxy: service unavailable", Count: 1}); err != nil {
			t.Fatal(err)
		}
	}
	res := w.run(vmArgs(), false)
	if failed(res) || res["changed"] != true {
		t.Fatalf("5xx on reads: %v", res["msg"])
	}
	if n := count(w.writes(), "POST /cluster/replication"); n != 2 {
		t.Errorf("jobs created %d times, want 2", n)
	}
	for _, f := range w.sim.Faults().List() {
		if f.Fired != 1 {
			t.Errorf("fault on %s fired %d times: the retry was not exercised", f.Path, f.Fired)
		}
	}
}
