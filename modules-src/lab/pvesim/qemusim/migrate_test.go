package qemusim_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
)

// Migration: offline with local disks moves config and volumes; a running
// VM needs online (and with-local-disks for local disks); a linked clone
// on local storage cannot leave its template's node (H8); a storage missing on
// the target is refused before any task.
func TestMigrate(t *testing.T) {
	t.Parallel()
	_, a, b := simtest.TwoNodes(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond, RestartWindow: 200 * time.Millisecond})
	simtest.CreateVM(t, a, 100, nil)
	if st := simtest.MustTask(t, a, "POST", "/nodes/pve01/qemu/100/migrate", url.Values{"target": {"pve02"}}); st["type"] != "qmigrate" || st["exitstatus"] != "OK" {
		t.Fatalf("offline migration: %v", st)
	}
	if n, _ := simtest.VMNode(t, a, 100); n != "pve02" {
		t.Errorf("VM 100 on %s after migrating to pve02", n)
	}
	content := func(c *simtest.Client, node string) string {
		return fmt.Sprint(c.Call("GET", "/nodes/"+node+"/storage/local-lvm/content", nil).Must(t, "content").List())
	}
	if !strings.Contains(content(b, "pve02"), "local-lvm:vm-100-disk-0") || strings.Contains(content(a, "pve01"), "local-lvm:vm-100-disk-0") {
		t.Errorf("the local disk did not move: pve01 %s / pve02 %s", content(a, "pve01"), content(b, "pve02"))
	}

	simtest.MustTask(t, b, "POST", "/nodes/pve02/qemu/100/status/start", nil)
	r := b.Call("POST", "/nodes/pve02/qemu/100/migrate", url.Values{"target": {"pve01"}})
	if r.Status != 500 || r.Reason != "can't migrate running VM without --online" {
		t.Errorf("running VM without online: %d %q", r.Status, r.Reason)
	}
	st := simtest.MustTask(t, b, "POST", "/nodes/pve02/qemu/100/migrate", url.Values{"target": {"pve01"}, "online": {"1"}})
	if st["exitstatus"] != "migration aborted" {
		t.Errorf("online with a local disk, no with-local-disks: %v", st)
	}
	st = simtest.MustTask(t, b, "POST", "/nodes/pve02/qemu/100/migrate", url.Values{"target": {"pve01"}, "online": {"1"}, "with-local-disks": {"1"}})
	if n, status := simtest.VMNode(t, a, 100); st["exitstatus"] != "OK" || n != "pve01" || status != "running" {
		t.Errorf("live migration with local disks: %v, now on %s %s", st, n, status)
	}

	simtest.MakeTemplate(t, a, 9000, nil)
	simtest.MustTask(t, a, "POST", "/nodes/pve01/qemu/9000/clone", url.Values{"newid": {"101"}})
	st = simtest.MustTask(t, a, "POST", "/nodes/pve01/qemu/101/migrate", url.Values{"target": {"pve02"}})
	logs := fmt.Sprint(a.Call("GET", "/nodes/pve01/tasks/"+url.PathEscape(fmt.Sprint(st["upid"]))+"/log", nil).Must(t, "log").List())
	if st["exitstatus"] != "migration aborted" || !strings.Contains(logs, "can't migrate 'local-lvm:base-9000-disk-0/vm-101-disk-0' as it's a clone of 'base-9000-disk-0'") {
		t.Errorf("linked clone migration: %v\n%s", st, logs)
	}

	a.Call("PUT", "/storage/local-lvm", url.Values{"nodes": {"pve01"}}).Must(t, "restrict local-lvm")
	r = a.Call("POST", "/nodes/pve01/qemu/101/migrate", url.Values{"target": {"pve02"}})
	if r.Status != 500 || r.Reason != "storage 'local-lvm' is not available on node 'pve02'" {
		t.Errorf("storage missing on the target: %d %q", r.Status, r.Reason)
	}
}

// What a migration leaves when it fails half-way, and the storage map:
// targetstorage moves a local disk to another storage of the target (the
// drive names the new volume), a target storage the node lacks is refused
// before any task ($check_storage_access_migrate), a local device fails
// the task (QemuMigrate.pm prepare); migrate-abort copies, cleans up and
// leaves the VM where it was, unlocked ("migration aborted");
// migrate-problems moves the VM and then fails its cleanup ("migration
// problems": the VM is on the target).
func TestMigrateStorageMapAndHalfWayFailures(t *testing.T) {
	t.Parallel()
	s, a, b := simtest.TwoNodes(t, pvesim.New, simtest.Opts{TaskDuration: 20 * time.Millisecond})
	a.Call("POST", "/storage", url.Values{"storage": {"fast"}, "type": {"lvmthin"}, "vgname": {"pve"}, "thinpool": {"fast"}, "content": {"images"}}).Must(t, "storage fast")
	simtest.CreateVM(t, a, 100, nil)

	a.Call("PUT", "/storage/fast", url.Values{"nodes": {"pve01"}}).Must(t, "restrict fast")
	r := a.Call("POST", "/nodes/pve01/qemu/100/migrate", url.Values{"target": {"pve02"}, "targetstorage": {"fast"}})
	if r.Status != 500 || r.Reason != "storage 'fast' is not available on node 'pve02'" {
		t.Errorf("targetstorage missing on the target: %d %q", r.Status, r.Reason)
	}
	a.Call("PUT", "/storage/fast", url.Values{"delete": {"nodes"}}).Must(t, "unrestrict fast")

	if _, err := s.Faults().Add(pvesim.Fault{Method: "POST", Path: "/nodes/*/qemu/*/migrate", Kind: pvesim.FaultMigrateAbort, Message: "rsync: connection unexpectedly closed", Count: 1}); err != nil {
		t.Fatal(err)
	}
	st := simtest.MustTask(t, a, "POST", "/nodes/pve01/qemu/100/migrate", url.Values{"target": {"pve02"}, "targetstorage": {"fast"}})
	logs := fmt.Sprint(a.Call("GET", "/nodes/pve01/tasks/"+url.PathEscape(fmt.Sprint(st["upid"]))+"/log", nil).Must(t, "log").List())
	if n, _ := simtest.VMNode(t, a, 100); st["exitstatus"] != "migration aborted" || n != "pve01" || !strings.Contains(logs, "rsync: connection unexpectedly closed") {
		t.Errorf("aborted migration: %v, VM on %s\n%s", st, n, logs)
	}
	if c := simtest.VMConfig(t, a, "pve01", 100); c["lock"] != nil || c["scsi0"] != "local-lvm:vm-100-disk-0,size=8G" {
		t.Errorf("config after the abort: %v", c)
	}

	st = simtest.MustTask(t, a, "POST", "/nodes/pve01/qemu/100/migrate", url.Values{"target": {"pve02"}, "targetstorage": {"fast"}})
	if n, _ := simtest.VMNode(t, a, 100); st["exitstatus"] != "OK" || n != "pve02" {
		t.Fatalf("migration with targetstorage: %v, VM on %s", st, n)
	}
	if c := simtest.VMConfig(t, b, "pve02", 100); c["scsi0"] != "fast:vm-100-disk-0,size=8G" {
		t.Errorf("scsi0 after targetstorage fast: %v", c["scsi0"])
	}

	if _, err := s.Faults().Add(pvesim.Fault{Method: "POST", Path: "/nodes/*/qemu/*/migrate", Kind: pvesim.FaultMigrateProblems, Count: 1}); err != nil {
		t.Fatal(err)
	}
	st = simtest.MustTask(t, b, "POST", "/nodes/pve02/qemu/100/migrate", url.Values{"target": {"pve01"}})
	if n, _ := simtest.VMNode(t, a, 100); st["exitstatus"] != "migration problems" || n != "pve01" {
		t.Errorf("migration with problems: %v, VM on %s", st, n)
	}

	simtest.CreateVM(t, a, 101, url.Values{"serial0": {"/dev/ttyS0"}})
	st = simtest.MustTask(t, a, "POST", "/nodes/pve01/qemu/101/migrate", url.Values{"target": {"pve02"}})
	logs = fmt.Sprint(a.Call("GET", "/nodes/pve01/tasks/"+url.PathEscape(fmt.Sprint(st["upid"]))+"/log", nil).Must(t, "log").List())
	if st["exitstatus"] != "migration aborted" || !strings.Contains(logs, "can't migrate VM which uses local devices: serial0") {
		t.Errorf("local device: %v\n%s", st, logs)
	}
}
