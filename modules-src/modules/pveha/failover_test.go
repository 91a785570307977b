package pveha

import (
	"fmt"
	"github.com/gopve/proxmox/modules-src/pveapi/replication"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
)

// waitGuest polls the cluster's guest list until vmid runs on a node that
// cond accepts.
func (w *world) waitGuest(vmid int, what string, cond func(clusterguests.Guest) bool) clusterguests.Guest {
	w.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last clusterguests.Guest
	for time.Now().Before(deadline) {
		list, err := clusterguests.Guests(w.ctx(), w.api)
		if err == nil {
			if g, ok := clusterguests.Find(list, vmid); ok {
				last = g
				if cond(g) {
					return g
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	w.t.Fatalf("guest %d never %s (last seen %+v)", vmid, what, last)
	return last
}

// The seed's failover test, in-process: the node running the guest is
// powered off, HA fences it and recovers the guest on another node, PVE
// switches the replication jobs (the job to the new node now points at the
// node the guest left). A rerun of the same task finds the guest where it
// is now (H3), recognises the switched job as the one that followed the
// guest, and reports changed=0. With failback (the default of PVE 9 rules
// and of groups without nofailback), the guest goes home when its node
// returns, and a rerun is unchanged again (H7).
func TestFailoverRerunUnchanged(t *testing.T) {
	t.Parallel()
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE %d", v), func(t *testing.T) {
			w := newWorld(t, v)
			w.seedGuests()
			args := vmArgs()
			args["wait_first_sync"] = true
			if res := w.run(args, false); failed(res) || res["changed"] != true {
				t.Fatalf("chain: %v", res["msg"])
			}
			if err := w.sim.SetOnline("pve02", false); err != nil {
				t.Fatal(err)
			}
			moved := w.waitGuest(201, "recovered on another node", func(g clusterguests.Guest) bool {
				return g.Node != "pve02" && g.Status == "running"
			})
			w.sim.ResetRequests()
			res := w.run(args, false)
			if failed(res) || res["changed"] != false {
				t.Fatalf("rerun after the failover to %s: %v %v", moved.Node, res["msg"], res["changes"])
			}
			if m := w.writes(); len(m) != 0 {
				t.Errorf("rerun after the failover wrote %v", m)
			}
			followed := 0
			for _, j := range res["jobs"].([]any) {
				if j.(map[string]any)["followed_guest"] == true {
					followed++
				}
			}
			if g := res["guest"].(map[string]any); g["node"] != moved.Node || followed != 1 {
				t.Errorf("H3: guest reported on %v (moved to %s), jobs %v", g["node"], moved.Node, res["jobs"])
			}

			if err := w.sim.SetOnline("pve02", true); err != nil {
				t.Fatal(err)
			}
			w.waitGuest(201, "failed back to pve02", func(g clusterguests.Guest) bool { return g.Node == "pve02" && g.Status == "running" })
			w.sim.ResetRequests()
			if res := w.run(args, false); failed(res) || res["changed"] != false || len(w.writes()) != 0 {
				t.Errorf("rerun after the failback: %v %v %v", res["msg"], res["changes"], w.writes())
			}
		})
	}
}

// H3: right after a failover the guest runs on a node one of its jobs still
// targets (PVE switches that job at the node's next replication run, to the
// node the guest left, most likely down). With targets left to "every other
// member" the jobs stay exactly as they are: nothing created towards the
// down node, nothing removed.
func TestJobsLeftAloneUntilPVESwitchesThem(t *testing.T) {
	jobs := []replication.Job{
		{ID: replication.JobID{Guest: 201, Num: 0}, Target: "pve01"},
		{ID: replication.JobID{Guest: 201, Num: 1}, Target: "pve03"},
	}
	p := matchJobs(jobs, []string{"pve01", "pve02"}, "pve03", true)
	if len(p.create) != 0 || len(p.remove) != 0 || len(p.keep) != 1 || len(p.followed) != 1 || p.followed[0].Target != "pve03" {
		t.Errorf("before the switch: %+v", p)
	}
	// Once switched (pve03 -> pve02, the node the guest left), it is the
	// job for pve02: kept, nothing to do either.
	jobs[1].Target = "pve02"
	p = matchJobs(jobs, []string{"pve01", "pve02"}, "pve03", true)
	if len(p.create) != 0 || len(p.remove) != 0 || len(p.keep) != 2 {
		t.Errorf("after the switch: %+v", p)
	}
	// Explicit targets without the guest's node: a job to it is extra.
	p = matchJobs(jobs[:1], []string{"pve01", "pve02"}, "pve03", false)
	if len(p.create) != 1 || p.create[0] != "pve02" {
		t.Errorf("a missing target: %+v", p)
	}
}
