package pveclone

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// K2: a clone to another node of a template with anything on local storage is
// refused before anything is sent, with PVE's reason (API2/Qemu.pm
// clone_vm: "can't clone VM to node '<target>' (VM uses local storage)"),
// full or linked — and $check_storage_access_clone counts a CD-ROM's ISO
// and the cloud-init drive too, so a template on shared disks with a local
// ISO is refused as well. On the template's own node the same clones are
// made. PVE 8 and 9; the lab, which runs the same check, is the witness
// that nothing was sent (no mutating request) and nothing was made.
func TestCrossNodeLocalRefused(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", v), func(t *testing.T) {
			w := newWorld(t, v, func(c *pvesim.Config) {
				c.StorageContent = func(node string, st pvesim.StorageInfo) ([]pvesim.Volume, error) {
					if st.ID != "local" {
						return nil, nil
					}
					return []pvesim.Volume{{VolID: "local:iso/tools.iso", Content: "iso", Format: "iso", Size: 1 << 20, CTime: 1700000000}}, nil
				}
			})
			if err := w.sim.AddGuest("pve01", pvesim.GuestSpec{VMID: 9004, Template: true, Config: map[string]string{
				"name": "iso-tpl", "scsi0": "shared:1", "ide0": "local:iso/tools.iso,media=cdrom", "net0": "virtio,bridge=vmbr0"}}); err != nil {
				t.Fatal(err)
			}
			if err := w.sim.AddGuest("pve01", pvesim.GuestSpec{VMID: 9005, Template: true, Config: map[string]string{
				"name": "ci-local-tpl", "scsi0": "shared:1", "ide2": "local-lvm:cloudinit", "net0": "virtio,bridge=vmbr0"}}); err != nil {
				t.Fatal(err)
			}
			w.sim.ResetRequests()
			for _, c := range []struct {
				args map[string]any
				want string
			}{
				{map[string]any{"vmid": 211, "name": "a", "template": "local-tpl", "node": "pve02"}, "template 9001's disk scsi0 is on lvmthin storage 'local-lvm' of node pve01"},
				{map[string]any{"vmid": 212, "name": "b", "template": "local-tpl", "node": "pve02", "full": false}, "template 9001's disk scsi0"},
				{map[string]any{"vmid": 213, "name": "c", "template": "iso-tpl", "node": "pve02"}, "template 9004's CD-ROM ISO ide0 is on dir storage 'local'"},
				{map[string]any{"vmid": 214, "name": "d", "template": "ci-local-tpl", "node": "pve02"}, "template 9005's cloud-init drive ide2"},
			} {
				res := w.run(c.args, false)
				if !failed(res) || res["changed"] != false || !strings.Contains(msg(res), "node: can't clone VM to node 'pve02' (VM uses local storage)") ||
					!strings.Contains(msg(res), c.want) {
					t.Errorf("%v: changed=%v %q, want PVE's reason and %q", c.args["template"], res["changed"], msg(res), c.want)
				}
			}
			if m := writes(w.sim); len(m) != 0 {
				t.Errorf("refused cross-node clones sent %+v", m)
			}
			// The same, kept on the template's node: linked from lvmthin, and
			// full with the local ISO.
			for _, a := range []map[string]any{
				{"vmid": 212, "name": "b", "template": "local-tpl", "full": false},
				{"vmid": 213, "name": "c", "template": "iso-tpl"},
			} {
				if res := w.run(a, false); failed(res) || res["changed"] != true {
					t.Errorf("%v on its own node: %v", a["template"], msg(res))
				}
				if g, ok := clusterguests.Find(w.guests(), a["vmid"].(int)); !ok || g.Node != "pve01" {
					t.Errorf("VM %v: %+v %v", a["vmid"], g, ok)
				}
			}

			// A linked clone across nodes from a template on shared NFS
			// (a raw base: file storages link any base format, clone_image
			// writes a qcow2 overlay) is made, and check mode predicted its
			// volume; from LVM (thick) it is refused before anything is sent.
			args := map[string]any{"vmid": 215, "name": "e", "template": "debian-12", "node": "pve02", "full": false}
			w.sim.ResetRequests()
			check := w.run(args, true)
			if failed(check) || len(writes(w.sim)) != 0 {
				t.Fatalf("linked across nodes, check: %v", msg(check))
			}
			res := w.run(args, false)
			if failed(res) || res["changed"] != true {
				t.Fatalf("linked across nodes: %v", msg(res))
			}
			got := w.config("pve02", 215, false).Values["scsi0"]
			if p := cfgOf(check)["scsi0"]; p != got || !strings.HasPrefix(got, "shared:9000/base-9000-disk-0.raw/215/vm-215-disk-0.qcow2") {
				t.Errorf("linked across nodes scsi0: predicted %q, read back %q", p, got)
			}
			pveapitest.Write(t, w.client(), "POST", "/storage", url.Values{"storage": {"thick"}, "type": {"lvm"}, "vgname": {"vg0"}, "content": {"images"}})
			if err := w.sim.AddGuest("pve01", pvesim.GuestSpec{VMID: 9006, Template: true, Config: map[string]string{"name": "thick-tpl", "scsi0": "thick:1"}}); err != nil {
				t.Fatal(err)
			}
			w.sim.ResetRequests()
			res = w.run(map[string]any{"vmid": 216, "name": "f", "template": "thick-tpl", "full": false}, false)
			if !failed(res) || res["changed"] != false || !strings.Contains(msg(res), "full: Linked clone feature is not supported for 'thick:base-9006-disk-0' (scsi0)") || len(writes(w.sim)) != 0 {
				t.Errorf("linked from LVM: changed=%v %q writes %v", res["changed"], msg(res), writes(w.sim))
			}
		})
	}
}
