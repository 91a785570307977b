package pveha

import (
	"fmt"
	"testing"
)

// TestNoOpReadsHAConfigOnce (issue 24 §3): a converged run that writes
// nothing plans both stages from one read of the HA config — the
// replication stage's preflight and the HA stage share it, and
// wait_first_sync, with no new job to wait for, reads nothing again — so
// every HA config list is read exactly once, by the lab's request log.
// PVE 8 (groups) and 9 (rules; the groups probe of H2 once).
func TestNoOpReadsHAConfigOnce(t *testing.T) {
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
			reads := map[string]int{}
			for _, r := range w.sim.Requests() {
				reads[r.Method+" "+r.Path]++
			}
			lists := []string{"GET /cluster/ha/resources", "GET /cluster/ha/groups"}
			if v == 9 {
				lists = append(lists, "GET /cluster/ha/rules")
			}
			for _, l := range lists {
				if reads[l] != 1 {
					t.Errorf("%s read %d times in a converged run, want once: %v", l, reads[l], reads)
				}
			}
		})
	}
}
