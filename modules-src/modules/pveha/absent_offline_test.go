package pveha

import (
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/replication"
)

// state=absent with a replication target powered off: PVE's removal of
// the job to it fails at every run (it drops the replica on the target
// first) and the job stays until the target is back. The run says so at
// once — which job, why, PVE's error — instead of waiting wait_timeout
// for a removal that cannot happen; it reports changed (the rule, the
// resource and the jobs' DELETEs were made, by the request log). Once the
// target is back, a rerun writes nothing and ends with the job gone.
func TestAbsentWithTargetOfflineSaysWhy(t *testing.T) {
	w := newWorld(t, 9)
	w.seedGuests()
	args := vmArgs()
	args["wait_first_sync"] = true
	if res := w.run(args, false); failed(res) {
		t.Fatal(res["msg"])
	}
	if err := w.sim.SetOnline("pve03", false); err != nil {
		t.Fatal(err)
	}
	w.sim.ResetRequests()
	absent := map[string]any{"vmid": 201, "state": "absent", "wait_timeout": 60}
	start := time.Now()
	res := w.run(absent, false)
	took := time.Since(start)
	msg := pveapi.String(res["msg"])
	if !failed(res) || res["changed"] != true {
		t.Fatalf("failed %v changed %v: %s", res["failed"], res["changed"], msg)
	}
	for _, want := range []string{"replication job 201-1 cannot be removed while its target pve03 is offline", "failed (fail_count ",
		"pvesr prepare-local-job 201-1", "exit code 255", "once pve03 is back"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message does not say %q: %s", want, msg)
		}
	}
	if took > 40*time.Second {
		t.Errorf("took %s: it waited out wait_timeout for a removal PVE cannot make", took)
	}
	if writes := w.writes(); count(writes, "DELETE /cluster/replication/201-1") != 1 || count(writes, "DELETE /cluster/ha/resources/vm:201") != 1 {
		t.Errorf("writes %v", writes)
	}
	jobs, _ := replication.Jobs(w.ctx(), w.api)
	if len(jobs) != 1 || jobs[0].ID.String() != "201-1" || jobs[0].RemoveJob != "full" {
		t.Fatalf("jobs in the lab: %+v", jobs)
	}
	if err := w.sim.SetOnline("pve03", true); err != nil {
		t.Fatal(err)
	}
	w.sim.ResetRequests()
	again := w.run(absent, false)
	if failed(again) || len(w.writes()) != 0 {
		t.Errorf("rerun with pve03 back: %v writes %v", again["msg"], w.writes())
	}
	if jobs, _ := replication.Jobs(w.ctx(), w.api); len(jobs) != 0 {
		t.Errorf("jobs left: %+v", jobs)
	}
}
