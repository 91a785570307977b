package pveha

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
	"github.com/gopve/proxmox/modules-src/pveapi/replication"
)

// jobsByID indexes the result's jobs.
func jobsByID(res map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	list, _ := res["jobs"].([]any)
	for _, j := range list {
		e := j.(map[string]any)
		out[pveapi.String(e["id"])] = e
	}
	return out
}

// H1/H5: a job whose first sync failed (its target powered off) is not
// waited for in vain: PVE does not try it again while the target is
// offline, so wait_first_sync fails at once — well before wait_timeout —
// naming the job, its fail_count and PVE's error, declares nothing (no
// write, by the request log), and the result shows the job as PVE's status
// does (state error, never "ok"), next to the other job that synced.
func TestWaitFirstSyncFailedJobFailsAtOnceH1H5(t *testing.T) {
	w := newWorld(t, 9)
	w.seedGuests()
	if err := w.sim.SetOnline("pve03", false); err != nil {
		t.Fatal(err)
	}
	for i, target := range []string{"pve01", "pve03"} {
		pveapitest.Write(t, w.api, "POST", "/cluster/replication", url.Values{"id": {fmt.Sprintf("201-%d", i)}, "type": {"local"}, "target": {target}})
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := replication.GetStatus(w.ctx(), w.api, "pve02", replication.JobID{Guest: 201, Num: 1})
		if err == nil && st.FailCount > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lab never failed the job to the powered-off node: %+v %v", st, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.sim.ResetRequests()
	args := vmArgs()
	args["wait_first_sync"], args["wait_timeout"] = true, 60
	start := time.Now()
	res := w.run(args, false)
	took := time.Since(start)
	msg := pveapi.String(res["msg"])
	if !failed(res) || res["changed"] != false {
		t.Fatalf("failed %v changed %v: %s", res["failed"], res["changed"], msg)
	}
	for _, want := range []string{"wait_first_sync:", "replication job 201-1 (to pve03) has never synced", "fail_count 1",
		"pvesr prepare-local-job 201-1' failed: exit code 255", "only once pve03 is online", "the HA resource was not declared"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message does not say %q: %s", want, msg)
		}
	}
	// Waiting out wait_timeout would take 60 s; a generous margin.
	if took > 30*time.Second {
		t.Errorf("the wait took %s: it waited for a retry PVE does not make", took)
	}
	if m := w.writes(); len(m) != 0 {
		t.Errorf("wrote %v", m)
	}
	jobs := jobsByID(res)
	if j := jobs["201-1"]; j == nil || j["state"] != replication.StateError || pveapi.String(j["fail_count"]) != "1" ||
		!strings.Contains(pveapi.String(j["error"]), "exit code 255") {
		t.Errorf("job 201-1 in the result: %v", j)
	}
	lab, _ := replication.GetStatus(w.ctx(), w.api, "pve02", replication.JobID{Guest: 201, Num: 0})
	if j := jobs["201-0"]; j == nil || j["state"] != lab.State() {
		t.Errorf("job 201-0 in the result %v, the lab says %s", j, lab.State())
	}
}

// H1: without wait_first_sync, a chain whose jobs have not synced yet (the
// lab's replication minute is an hour here, so no run comes) is declared,
// but not reported as replicated: each job's state is pending, as the
// lab's status says, and a warning per job says HA has no data on its
// target yet. With wait_first_sync and a short wait_timeout, the wait
// fails naming the jobs, having written nothing.
func TestUnsyncedJobsReportedNotOKH1(t *testing.T) {
	w := newWorldWith(t, 9, func(c *pvesim.Config) { c.ReplicationInterval = time.Hour })
	w.seedGuests()
	args := vmArgs()
	args["wait_first_sync"], args["wait_timeout"] = true, 2
	w.sim.ResetRequests()
	res := w.run(args, false)
	if !failed(res) || !strings.Contains(pveapi.String(res["msg"]), "waited 2s (wait_timeout) for the first sync") ||
		!strings.Contains(pveapi.String(res["msg"]), "201-0 not synced yet") {
		t.Fatalf("wait_first_sync with no run coming: %v", res["msg"])
	}
	// Only the jobs were written; nothing of HA.
	if writes := w.writes(); strings.Join(writes, ",") != "POST /cluster/replication,POST /cluster/replication" {
		t.Errorf("writes %v", writes)
	}
	args["wait_first_sync"] = false
	res = w.run(args, false)
	if failed(res) || res["changed"] != true {
		t.Fatalf("declared without waiting: %v", res["msg"])
	}
	warns := pveapi.String(res["warnings"])
	for id, j := range jobsByID(res) {
		jid, err := replication.ParseJobID(id)
		if err != nil {
			t.Fatal(err)
		}
		lab, err := replication.GetStatus(w.ctx(), w.api, "pve02", jid)
		if err != nil || lab.Synced() || lab.State() != replication.StatePending {
			t.Fatalf("the lab's status of %s: %+v %v", id, lab, err)
		}
		if j["state"] != replication.StatePending || pveapi.String(j["last_sync"]) != "0" {
			t.Errorf("job %s reported %v, the lab says pending", id, j)
		}
		if !strings.Contains(warns, "replication job "+id+" (to ") || !strings.Contains(warns, "has never completed a sync (its first sync has not run yet)") {
			t.Errorf("no warning for %s: %s", id, warns)
		}
	}
}
