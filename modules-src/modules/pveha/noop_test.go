package pveha

import (
	"fmt"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
)

// TestNoOpReadsEachThingOnce (issue 24 §3): a converged run that writes
// nothing reads each thing it needs exactly once, by the lab's request
// log — the members and the guests come from one list of the cluster's
// resources, the replication stage's preflight and the HA stage plan from one
// read of the HA config, wait_first_sync with no new job to wait for reads
// nothing again, and the report takes the guest's live state from the
// guest list the run began with (nothing was written or waited for since)
// instead of listing the guests again. Only the job status is read for the
// report alone. PVE 9 adds the groups probe of H2 (its 500 is the only
// sign that groups are migrated: ha.Detect) and the rules.
func TestNoOpReadsEachThingOnce(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE %d", v), func(t *testing.T) {
			w := newWorld(t, v)
			w.seedGuests()
			args := dokployArgs()
			if res := w.run(args, false); failed(res) || res["changed"] != true {
				t.Fatalf("first run: %v", res["msg"])
			}
			w.sim.WaitIdle()
			w.sim.ResetRequests()
			again := w.run(args, false)
			if failed(again) || again["changed"] != false {
				t.Fatalf("converged run: %v %v", again["msg"], again["changes"])
			}
			if m := w.writes(); len(m) != 0 {
				t.Fatalf("converged run wrote: %v", m)
			}
			// The report still shows the guest's live state and its job's
			// status, read from the cluster.
			if g := again["guest"].(map[string]any); g["node"] != "pve02" || g["status"] != "running" {
				t.Errorf("report's guest: %v", g)
			}
			want := []string{"GET /version", "GET /cluster/resources", "GET /cluster/replication",
				"GET /cluster/ha/resources", "GET /cluster/ha/groups", "GET /nodes/pve02/replication"}
			if v == 9 {
				want = append(want, "GET /cluster/ha/rules") // the groups read is the probe (500)
			}
			got := map[string]int{}
			for _, r := range w.sim.Requests() {
				got[r.Method+" "+r.Path]++
			}
			for _, k := range want {
				if got[k] != 1 {
					t.Errorf("%s sent %d times in a converged run, want once", k, got[k])
				}
			}
			if n := len(w.sim.Requests()); n != len(want) {
				t.Errorf("a converged run sent %d requests, want %d: %v", n, len(want), requestLines(w.sim.Requests()))
			}
		})
	}
}

func requestLines(list []pvesim.Request) []string {
	out := make([]string, len(list))
	for i, r := range list {
		out[i] = fmt.Sprintf("%s %s %d", r.Method, r.Path, r.Status)
	}
	return out
}
