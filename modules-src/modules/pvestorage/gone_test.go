package pvestorage

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// Issue 23 §3: a DELETE whose goal is absence that meets "does not exist"
// (another run removed the storage between this task's read and its
// DELETE) is not a failure: the read back decides, and it shows the goal
// met. PVE 8 and 9.
func TestAbsentMeetsAlreadyGone(t *testing.T) {
	for _, v := range []int{8, 9} {
		w := newWorld(t, v)
		other, err := pveapi.Connect(context.Background(), pveapitest.TokenConn(t, w.sim, "pve02"), pveapi.Options{})
		if err != nil {
			t.Fatal(err)
		}
		pveapitest.Write(t, other, "POST", "/storage", url.Values{"storage": {"scratch"}, "type": {"dir"}, "path": {"/srv/scratch"}})
		if _, err := w.sim.Faults().Add(pvesim.Fault{Node: "pve01", Method: "DELETE", Path: "/storage/scratch", Kind: pvesim.FaultLatency, Delay: 2 * time.Second, Count: 1}); err != nil {
			t.Fatal(err)
		}
		w.sim.ResetRequests()
		done := make(chan map[string]any)
		go func() { done <- w.run(map[string]any{"storage": "scratch", "state": "absent"}, false) }()
		pveapitest.WaitFaultsLeft(t, w.sim, 0) // the task has read it and sent its DELETE, held by the latency
		pveapitest.Write(t, other, "DELETE", "/storage/scratch", nil)
		res := <-done
		var answered *pvesim.Request
		for _, r := range pveapitest.Mutating(w.sim) {
			if r.Method == "DELETE" && r.Node == "pve01" {
				answered = &r
			}
		}
		if answered == nil || answered.Status != 500 {
			t.Fatalf("PVE %d: the task's DELETE was not answered 'does not exist': %+v", v, answered)
		}
		warns := pveapi.String(res["warnings"])
		if failed(res) || res["changed"] != true || !strings.Contains(warns, "storage 'scratch' does not exist") || !strings.Contains(warns, "reading back shows it absent") {
			t.Errorf("PVE %d: %v / %v", v, res["msg"], res["warnings"])
		}
		if err := other.Get(context.Background(), "/storage/scratch", nil, nil); !pveapi.IsNotFound(err) {
			t.Errorf("PVE %d: storage still there: %v", v, err)
		}
	}
}
