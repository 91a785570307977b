package pveclone

import (
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
)

// A lock held on the template (a backup running on it) is PVE's refusal
// that a read decides (clone_vm's load_and_check: check_lock): the run
// fails naming the lock before anything is sent, unchanged as the lab saw;
// once the lock is gone, the rerun clones once.
func TestTemplateLockHeld(t *testing.T) {
	w := newWorld(t, 9)
	if err := w.sim.AddGuest("pve01", pvesim.GuestSpec{VMID: 9008, Template: true, Config: map[string]string{
		"name": "busy-tpl", "scsi0": "shared:1", "net0": "virtio,bridge=vmbr0", "lock": "backup"}}); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"vmid": 231, "name": "busy-1", "template": "busy-tpl", "node": "pve02"}
	w.sim.ResetRequests()
	res := w.run(args, false)
	if !failed(res) || res["changed"] != false || !strings.Contains(msg(res), "template: VM 9008 is locked (backup)") || len(writes(w.sim)) != 0 {
		t.Fatalf("lock held: changed=%v %q writes %v", res["changed"], msg(res), writes(w.sim))
	}
	path := "nodes/pve01/qemu-server/9008.conf"
	conf, _, err := w.sim.ReadPmxcfs("pve01", path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.sim.WritePmxcfs("pve01", path, strings.Replace(conf, "lock: backup\n", "", 1), false); err != nil {
		t.Fatal(err)
	}
	res = w.run(args, false)
	clones := 0
	for _, r := range writes(w.sim) {
		if strings.HasSuffix(r.Path, "/clone") {
			clones++
		}
	}
	if failed(res) || res["changed"] != true || clones != 1 {
		t.Fatalf("after the lock: %v, %d clones", msg(res), clones)
	}
	if g, ok := clusterguests.Find(w.guests(), 231); !ok || g.Node != "pve02" {
		t.Errorf("VM 231: %+v %v", g, ok)
	}
}
