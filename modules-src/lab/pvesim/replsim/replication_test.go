package replsim_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/replsim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
)

// H1, H6: replication jobs <vmid>-<n> per target, ZFS volumes only; DELETE
// marks the job, the source's next pvesr run removes it.
func TestReplicationJobsH1H6(t *testing.T) {
	t.Parallel()
	_, a, b := simtest.TwoNodes(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond, RestartWindow: 200 * time.Millisecond},
		func(c *pvesim.Config) { c.ReplicationInterval = 300 * time.Millisecond })
	a.Call("POST", "/storage", url.Values{"storage": {"tank"}, "type": {"zfspool"}, "pool": {"tank"}, "content": {"images"}}).Must(t, "zfs storage")
	a.Call("POST", "/storage", url.Values{"storage": {"nfs"}, "type": {"nfs"}, "server": {"10.0.0.9"},
		"export": {"/srv"}, "path": {"/mnt/pve/nfs"}, "content": {"images"}}).Must(t, "nfs storage")
	simtest.CreateVM(t, a, 100, url.Values{"scsi0": {"tank:4"}})
	simtest.CreateVM(t, a, 101, nil) // local-lvm
	simtest.CreateVM(t, a, 102, url.Values{"scsi0": {"nfs:4"}})

	a.Call("POST", "/cluster/replication", url.Values{"id": {"100-0"}, "type": {"local"}, "target": {"pve02"},
		"schedule": {"*/15"}, "rate": {"10"}}).Must(t, "create job")
	jobs := a.Call("GET", "/cluster/replication", nil).Must(t, "jobs").List()
	if len(jobs) != 1 || jobs[0]["id"] != "100-0" || jobs[0]["guest"] != float64(100) || jobs[0]["source"] != "pve01" ||
		jobs[0]["target"] != "pve02" || jobs[0]["rate"] != float64(10) || jobs[0]["schedule"] != "*/15" {
		t.Errorf("jobs: %v", jobs)
	}
	for _, c := range []struct {
		p    url.Values
		want string
	}{
		{url.Values{"id": {"100-1"}, "target": {"pve02"}}, "replication job for guest '100' to target 'local/pve02' already exists"},
		{url.Values{"id": {"100-0"}, "target": {"pve02"}}, "replication job '100-0' already exists"},
		{url.Values{"id": {"100-2"}, "target": {"pve01"}}, "Source and target must not be identical"},
		{url.Values{"id": {"101-0"}, "target": {"pve02"}}, "missing replicate feature on volume 'local-lvm:vm-101-disk-0'"},
		{url.Values{"id": {"102-0"}, "target": {"pve02"}}, "No replicatable volumes found"},
		{url.Values{"id": {"103-0"}, "target": {"pve02"}}, "Guest '103' does not exist."},
		{url.Values{"id": {"100-3"}, "target": {"pve09"}}, "Target 'pve09' does not exist."},
	} {
		c.p.Set("type", "local")
		r := a.Call("POST", "/cluster/replication", c.p)
		if r.Status != 500 || r.Reason != c.want {
			t.Errorf("create %v: %d %q, want %q", c.p, r.Status, r.Reason, c.want)
		}
	}
	// The source's scheduler runs the job: a full sync, then the replica is
	// on the target (H1).
	simtest.Eventually(t, "first sync", func() bool {
		st := a.Call("GET", "/nodes/pve01/replication/100-0/status", nil).Must(t, "status").Obj()
		return st["last_sync"] != float64(0) && st["fail_count"] == float64(0)
	})
	log := fmt.Sprint(a.Call("GET", "/nodes/pve01/replication/100-0/log", nil).Must(t, "log").List())
	if !strings.Contains(log, "full sync 'tank:vm-100-disk-0'") {
		t.Errorf("replication log: %s", log)
	}
	var replica bool
	for _, v := range b.Call("GET", "/nodes/pve02/storage/tank/content", nil).Must(t, "pve02 tank").List() {
		replica = replica || v["volid"] == "tank:vm-100-disk-0"
	}
	if !replica {
		t.Error("no replica of tank:vm-100-disk-0 on pve02 after the sync")
	}
	a.Call("POST", "/nodes/pve01/replication/100-0/schedule_now", nil).Must(t, "schedule now")
	if jobs := a.Call("GET", "/nodes/pve01/replication", nil).Must(t, "node jobs").List(); len(jobs) != 1 || jobs[0]["id"] != "100-0" {
		t.Errorf("pve01's replication status list: %v", jobs)
	}
	r := a.Call("DELETE", "/nodes/pve01/qemu/100", nil)
	if r.Status != 500 || r.Reason != "There is a replication job '100-0' for guest '100' - Please remove that first." {
		t.Errorf("destroy with a job: %d %q", r.Status, r.Reason)
	}
	a.Call("DELETE", "/cluster/replication/100-0", nil).Must(t, "delete job")
	// The mark is read right after the DELETE; on a loaded machine the
	// source's next run (the lab's short minute) may already have removed
	// the job, which is what the mark leads to: then it is gone, and the
	// list below must be empty.
	if r := a.Call("GET", "/cluster/replication/100-0", nil); r.Status == 500 && r.Reason == "no such replication job '100-0'" {
		t.Log("the job was removed by a run before it could be read marked")
	} else if j := r.Must(t, "job").Obj(); j["remove_job"] != "full" {
		t.Errorf("job right after DELETE: %v, want it marked remove_job=full", j)
	}
	simtest.Eventually(t, "job removed by the next run", func() bool {
		return len(a.Call("GET", "/cluster/replication", nil).Must(t, "jobs").List()) == 0
	})
}

// H5: `pvesr run` takes /var/lock/pvesr.lck; a second run while the first
// syncs times out with PVE's message, and succeeds once the lock is free.
func TestPvesrLockH5(t *testing.T) {
	t.Parallel()
	s, a, _ := simtest.TwoNodes(t, pvesim.New, simtest.Opts{TaskDuration: 400 * time.Millisecond, RestartWindow: 200 * time.Millisecond, LockTimeout: 150 * time.Millisecond},
		func(c *pvesim.Config) { c.ReplicationInterval = time.Hour })
	a.Call("POST", "/storage", url.Values{"storage": {"tank"}, "type": {"zfspool"}, "pool": {"tank"}, "content": {"images"}}).Must(t, "zfs storage")
	if err := s.AddGuest("pve01", pvesim.GuestSpec{VMID: 100, Config: map[string]string{"scsi0": "tank:1"}}); err != nil {
		t.Fatal(err)
	}
	a.Call("POST", "/cluster/replication", url.Values{"id": {"100-0"}, "type": {"local"}, "target": {"pve02"}}).Must(t, "job")
	first := make(chan error, 1)
	go func() {
		_, err := replsim.Run(s.Sim, "pve01", "")
		first <- err
	}()
	time.Sleep(100 * time.Millisecond)
	ctl := simtest.ControlAPI(t, s)
	if st, body := ctl("POST", "/v1/nodes/pve01/replication/run", `{}`); st != 409 || body["error"] != "can't lock file '/var/lock/pvesr.lck' - got timeout" {
		t.Errorf("second pvesr run while one syncs: %d %v", st, body)
	}
	if err := <-first; err != nil {
		t.Fatalf("first pvesr run: %v", err)
	}
	st, body := ctl("POST", "/v1/nodes/pve01/replication/run", `{"id":"100-0"}`)
	if st != 200 || !strings.Contains(fmt.Sprint(body["log"]), "incremental sync 'tank:vm-100-disk-0'") {
		t.Errorf("pvesr run once the lock is free: %d %v", st, body)
	}
}
