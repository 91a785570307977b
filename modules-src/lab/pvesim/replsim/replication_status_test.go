package replsim_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guests"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/replsim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
)

// H5, a job's status as PVE shows it (pve-manager API2/Replication.pm
// $extract_job_status: the config plus last_sync, last_try, fail_count,
// error, duration from the job's state, pid while a run's process lives;
// pvesr status prints SYNCING for a pid, else the error, else OK):
//
//   - contention is never a job's error: a run that cannot take the
//     guest's migration lock (a migration holds it) dies before
//     record_job_start, so the status stays untouched — no error, no
//     fail_count, last_try 0 — and only the journal has the lock line;
//   - a failed run records fail_count and error, keeps last_sync (the
//     replica is the old one), and is not scheduled while the target is
//     offline (next_sync 0);
//   - the retry in progress shows pid and still the last error and
//     fail_count (record_job_start touches neither); its success clears
//     the error and the count and moves last_sync.
func TestReplicationStatusContentionFailureAndSyncingH5(t *testing.T) {
	t.Parallel()
	// pvesr run waits 60 s for /var/lock/pvesr.lck (pve-manager
	// API2/Replication.pm run_jobs): the scheduler's own run, a 600 ms
	// sync here, may hold it when the test runs pvesr itself, so the wait
	// must outlast a sync (the default 200 ms of these tests did not, and
	// CI saw "can't lock file '/var/lock/pvesr.lck' - got timeout").
	s, a, _ := simtest.HACluster(t, pvesim.New, 9, func(c *pvesim.Config) {
		c.TaskDuration = 600 * time.Millisecond
		c.LockTimeout = 3 * time.Second
	})
	simtest.CreateVM(t, a, 100, url.Values{"scsi0": {"tank:4"}})
	status := func() map[string]any {
		return a.Call("GET", "/nodes/pve01/replication/100-0/status", nil).Must(t, "status").Obj()
	}

	mig := guests.MigrationLockKey("pve01", 100)
	if !s.Acquire(mig, false, time.Second) {
		t.Fatal("migration lock")
	}
	a.Call("POST", "/cluster/replication", url.Values{"id": {"100-0"}, "type": {"local"}, "target": {"pve02"}}).Must(t, "job")
	simtest.Eventually(t, "a run skipped for the migration lock", func() bool {
		return strings.Contains(strings.Join(s.Journal(), "\n"),
			"100-0: got unexpected replication job error - can't lock file '/var/lock/pve-manager/pve-migrate-100' - got timeout")
	})
	st := status()
	if st["last_sync"] != float64(0) || st["last_try"] != float64(0) || st["fail_count"] != float64(0) || st["error"] != nil || st["pid"] != nil {
		t.Errorf("H5: contention recorded in the job's status: %v", st)
	}
	if st["vmtype"] != "qemu" || st["guest"] != float64(100) || st["target"] != "pve02" {
		t.Errorf("status fields: %v", st)
	}
	if next := st["next_sync"].(float64); next <= 0 || next > float64(time.Now().Unix()) {
		t.Errorf("a skipped job stays due: next_sync %v", next)
	}
	s.Release(mig, false)
	simtest.Eventually(t, "the first sync once the lock is free", func() bool { return status()["last_sync"] != float64(0) })
	first := status()["last_sync"].(float64)

	if err := s.SetOnline("pve02", false); err != nil {
		t.Fatal(err)
	}
	if _, err := replsim.Run(s.Sim, "pve01", "100-0"); err != nil {
		t.Fatal(err)
	}
	st = status()
	if st["fail_count"] != float64(1) || !strings.Contains(fmt.Sprint(st["error"]), "pvesr prepare-local-job 100-0' failed: exit code 255") ||
		st["last_sync"] != first || st["next_sync"] != float64(0) || st["pid"] != nil {
		t.Errorf("failed run: %v", st)
	}
	failedTry := st["last_try"].(float64)

	if err := s.SetOnline("pve02", true); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := replsim.Run(s.Sim, "pve01", "100-0"); done <- err }()
	simtest.Eventually(t, "the retry running", func() bool { return status()["pid"] != nil })
	st = status()
	if st["fail_count"] != float64(1) || st["error"] == nil || st["last_sync"] != first || st["last_try"].(float64) < failedTry {
		t.Errorf("retry in progress: %v", st)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The target is back, so the job is due again: the lab's scheduler, as
	// pvescheduler, may start its next run the moment ours frees the lock
	// (a loaded machine once saw pid set here). Whatever runs after ours,
	// the status it leaves is the success's.
	simtest.Eventually(t, "no run in progress after the good retry", func() bool { return status()["pid"] == nil })
	st = status()
	if st["fail_count"] != float64(0) || st["error"] != nil || st["last_sync"].(float64) < first {
		t.Errorf("after the good retry: %v", st)
	}
}

// A full removal asks the target to drop its replica first
// (pve-guest-common Replication.pm replicate, remote_prepare_local_job):
// with the target down the removal run fails, the job stays marked with
// the failure in its status, and goes at the first run once the target is
// back.
func TestReplicationRemovalWaitsForItsTarget(t *testing.T) {
	t.Parallel()
	s, a, _ := simtest.HACluster(t, pvesim.New, 9, nil)
	simtest.CreateVM(t, a, 100, url.Values{"scsi0": {"tank:4"}})
	a.Call("POST", "/cluster/replication", url.Values{"id": {"100-0"}, "type": {"local"}, "target": {"pve02"}}).Must(t, "job")
	status := func() map[string]any {
		return a.Call("GET", "/nodes/pve01/replication/100-0/status", nil).Must(t, "status").Obj()
	}
	simtest.Eventually(t, "the first sync", func() bool { return status()["last_sync"] != float64(0) })
	if err := s.SetOnline("pve02", false); err != nil {
		t.Fatal(err)
	}
	a.Call("DELETE", "/cluster/replication/100-0", nil).Must(t, "delete")
	simtest.Eventually(t, "the removal run failing", func() bool { return status()["fail_count"] != float64(0) })
	st := status()
	if st["remove_job"] != "full" || !strings.Contains(fmt.Sprint(st["error"]), "pvesr prepare-local-job 100-0 --scan tank --force' failed: exit code 255") {
		t.Errorf("removal with the target down: %v", st)
	}
	if err := s.SetOnline("pve02", true); err != nil {
		t.Fatal(err)
	}
	simtest.Eventually(t, "the job removed once the target is back", func() bool {
		return len(a.Call("GET", "/cluster/replication", nil).Must(t, "jobs").List()) == 0
	})
}

// pvesr run --id is run_single_job (pve-manager API2/Replication.pm): under
// pvesr.lck it refuses, in this order, a job replication.cfg does not
// hold, a disabled job, and a guest on another node — where the run over
// all due jobs skips a disabled job silently.
func TestRunSingleJobRefusals(t *testing.T) {
	t.Parallel()
	s, a, _ := simtest.HACluster(t, pvesim.New, 9, nil)
	simtest.CreateVM(t, a, 100, url.Values{"scsi0": {"tank:4"}})
	a.Call("POST", "/cluster/replication", url.Values{"id": {"100-0"}, "type": {"local"}, "target": {"pve02"}, "disable": {"1"}}).Must(t, "job")
	for _, c := range []struct{ node, id, want string }{
		{"pve01", "100-7", "no such job '100-7'"},
		{"pve01", "100-0", "job '100-0' is disabled"},
	} {
		if _, err := replsim.Run(s.Sim, c.node, c.id); err == nil || err.Error() != c.want {
			t.Errorf("pvesr run --id %s on %s: %v, want %q", c.id, c.node, err, c.want)
		}
	}
	a.Call("PUT", "/cluster/replication/100-0", url.Values{"delete": {"disable"}}).Must(t, "enable")
	if _, err := replsim.Run(s.Sim, "pve03", "100-0"); err == nil || err.Error() != "guest '100' is not on local node" {
		t.Errorf("pvesr run --id 100-0 on pve03: %v", err)
	}
	if _, err := replsim.Run(s.Sim, "pve01", "100-0"); err != nil {
		t.Errorf("pvesr run --id 100-0 on pve01: %v", err)
	}
}
