package pvesim

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

// Migration: offline with local disks moves config and volumes; a running
// VM needs online (and with-local-disks for local disks); a linked clone
// on local storage cannot leave its template's node (H8); a storage missing on
// the target is refused before any task.
func TestMigrate(t *testing.T) {
	t.Parallel()
	_, a, b := twoNodes(t, simOpts{taskDuration: 30 * time.Millisecond, restartWindow: 200 * time.Millisecond})
	createVM(t, a, 100, nil)
	if st := mustTask(t, a, "POST", "/nodes/pve01/qemu/100/migrate", url.Values{"target": {"pve02"}}); st["type"] != "qmigrate" || st["exitstatus"] != "OK" {
		t.Fatalf("offline migration: %v", st)
	}
	if n, _ := vmNode(t, a, 100); n != "pve02" {
		t.Errorf("VM 100 on %s after migrating to pve02", n)
	}
	content := func(c *apiClient, node string) string {
		return fmt.Sprint(c.call("GET", "/nodes/"+node+"/storage/local-lvm/content", nil).must(t, "content").list())
	}
	if !strings.Contains(content(b, "pve02"), "local-lvm:vm-100-disk-0") || strings.Contains(content(a, "pve01"), "local-lvm:vm-100-disk-0") {
		t.Errorf("the local disk did not move: pve01 %s / pve02 %s", content(a, "pve01"), content(b, "pve02"))
	}

	mustTask(t, b, "POST", "/nodes/pve02/qemu/100/status/start", nil)
	r := b.call("POST", "/nodes/pve02/qemu/100/migrate", url.Values{"target": {"pve01"}})
	if r.status != 500 || r.reason != "can't migrate running VM without --online" {
		t.Errorf("running VM without online: %d %q", r.status, r.reason)
	}
	st := mustTask(t, b, "POST", "/nodes/pve02/qemu/100/migrate", url.Values{"target": {"pve01"}, "online": {"1"}})
	if st["exitstatus"] != "migration aborted" {
		t.Errorf("online with a local disk, no with-local-disks: %v", st)
	}
	st = mustTask(t, b, "POST", "/nodes/pve02/qemu/100/migrate", url.Values{"target": {"pve01"}, "online": {"1"}, "with-local-disks": {"1"}})
	if n, status := vmNode(t, a, 100); st["exitstatus"] != "OK" || n != "pve01" || status != "running" {
		t.Errorf("live migration with local disks: %v, now on %s %s", st, n, status)
	}

	makeTemplate(t, a, 9000, nil)
	mustTask(t, a, "POST", "/nodes/pve01/qemu/9000/clone", url.Values{"newid": {"101"}})
	st = mustTask(t, a, "POST", "/nodes/pve01/qemu/101/migrate", url.Values{"target": {"pve02"}})
	logs := fmt.Sprint(a.call("GET", "/nodes/pve01/tasks/"+url.PathEscape(fmt.Sprint(st["upid"]))+"/log", nil).must(t, "log").list())
	if st["exitstatus"] != "migration aborted" || !strings.Contains(logs, "can't migrate 'local-lvm:base-9000-disk-0/vm-101-disk-0' as it's a clone of 'base-9000-disk-0'") {
		t.Errorf("linked clone migration: %v\n%s", st, logs)
	}

	a.call("PUT", "/storage/local-lvm", url.Values{"nodes": {"pve01"}}).must(t, "restrict local-lvm")
	r = a.call("POST", "/nodes/pve01/qemu/101/migrate", url.Values{"target": {"pve02"}})
	if r.status != 500 || r.reason != "storage 'local-lvm' is not available on node 'pve02'" {
		t.Errorf("storage missing on the target: %d %q", r.status, r.reason)
	}
}
