package pveclone

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// isoOnShared makes the node's listing of the shared storage hold one ISO,
// as pve-storage lists a file volume (template/iso/<name>).
func isoOnShared(c *pvesim.Config) {
	c.StorageContent = func(node string, st pvesim.StorageInfo) ([]pvesim.Volume, error) {
		if st.ID != "shared" {
			return nil, nil
		}
		return []pvesim.Volume{{VolID: "shared:iso/debian-13-netinst.iso", Content: "iso", Format: "iso", Size: 700 << 20, CTime: 1700000000}}, nil
	}
}

// seed002Bare is seed 002's VM in this module's options: q35, OVMF with
// an EFI vars disk and a TPM, a scsi disk with drive options, the ISO as a
// CD-ROM, two NICs and an explicit boot order.
func seed002Bare() map[string]any {
	return map[string]any{"vmid": 310, "name": "bare-1", "node": "pve03", "cores": 4, "memory": 8192,
		"machine": "q35", "bios": "ovmf", "ostype": "l26", "scsihw": "virtio-scsi-single",
		"disks":    map[string]any{"scsi0": "local-lvm:32,discard=on,ssd=1"},
		"cdrom":    "shared:iso/debian-13-netinst.iso",
		"efidisk":  map[string]any{"storage": "local-lvm", "efitype": "4m", "pre_enrolled_keys": true},
		"tpmstate": map[string]any{"storage": "local-lvm", "version": "v2.0"},
		"nets":     map[string]any{"net0": "virtio,bridge=vmbr0", "net1": map[string]any{"model": "virtio", "bridge": "vmbr1", "tag": 30}},
		"boot":     "order=scsi0;ide2;net0", "agent": "enabled=1,fstrim_cloned_disks=1", "onboot": true, "tags": []any{"production"}}
}

// A bare VM with every piece the issue lists (machine, bios, ostype,
// scsihw, EFI and TPM disks, the ISO CD-ROM, boot order), on PVE 8 and 9:
// an ISO missing from its storage is refused before anything is sent; check
// mode predicts the config the real run reads back, key by key (values PVE
// draws at creation excepted), with zero writes; the MAC of both NICs is
// returned; the rerun changes nothing and writes nothing.
func TestBareVMFirmwareCDROMBoot(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", v), func(t *testing.T) {
			w := newWorld(t, v, isoOnShared)
			w.sim.ResetRequests()
			res := w.run(with(seed002Bare(), "cdrom", "shared:iso/missing.iso"), false)
			if !failed(res) || res["changed"] != false || !strings.Contains(msg(res), "cdrom: volume 'shared:iso/missing.iso' does not exist") {
				t.Errorf("missing ISO: changed=%v %q", res["changed"], msg(res))
			}
			if m := writes(w.sim); len(m) != 0 {
				t.Errorf("a missing ISO wrote %+v", m)
			}
			if _, ok := clusterguests.Find(w.guests(), 310); ok {
				t.Fatal("VM 310 exists after a refused create")
			}

			check := w.run(seed002Bare(), true)
			if failed(check) || check["changed"] != true || len(writes(w.sim)) != 0 {
				t.Fatalf("check: %v %v", msg(check), writes(w.sim))
			}
			predicted := cfgOf(check)
			res = w.run(seed002Bare(), false)
			if failed(res) || res["changed"] != true || len(writes(w.sim)) == 0 {
				t.Fatalf("bare: %v", msg(res))
			}
			got := w.config("pve03", 310, false)
			for k, pv := range predicted {
				rv := got.Values[k]
				switch {
				case qemu.IsNet(k):
					pn, _ := qemu.ParseNet(k, pv)
					rn, _ := qemu.ParseNet(k, rv)
					pn.MAC = rn.MAC
					if a, _ := pn.Render(); a != rv || rn.MAC == "" {
						t.Errorf("%s predicted %q, read back %q", k, pv, rv)
					}
				case strings.Contains(pv, qemu.AssignedAtCreation):
					if rv == "" {
						t.Errorf("%s predicted %q, missing after the real run", k, pv)
					}
				case pv != rv:
					t.Errorf("%s: predicted %q, read back %q", k, pv, rv)
				}
			}
			for k := range got.Values {
				if _, ok := predicted[k]; !ok {
					t.Errorf("%s=%q read back, not predicted by check mode", k, got.Values[k])
				}
			}
			disks, _ := got.Disks()
			for k, want := range map[string]string{"machine": "q35", "bios": "ovmf", "ostype": "l26", "scsihw": "virtio-scsi-single", "boot": "order=scsi0;ide2;net0"} {
				if got.Values[k] != want {
					t.Errorf("%s = %q, want %q", k, got.Values[k], want)
				}
			}
			if d := disks["ide2"]; d.File != "shared:iso/debian-13-netinst.iso" || !d.IsCDROM() {
				t.Errorf("CD-ROM ide2: %q", got.Values["ide2"])
			}
			if !strings.HasPrefix(got.Values["efidisk0"], "local-lvm:vm-310-disk-") || !strings.Contains(got.Values["efidisk0"], "efitype=4m") ||
				!strings.Contains(got.Values["efidisk0"], "pre-enrolled-keys=1") {
				t.Errorf("efidisk0: %q", got.Values["efidisk0"])
			}
			if !strings.HasPrefix(got.Values["tpmstate0"], "local-lvm:vm-310-disk-") || !strings.Contains(got.Values["tpmstate0"], "version=v2.0") {
				t.Errorf("tpmstate0: %q", got.Values["tpmstate0"])
			}
			if d := disks["scsi0"]; d.Size != 32<<30 || !strings.Contains(got.Values["scsi0"], "discard=on") || !strings.Contains(got.Values["scsi0"], "ssd=1") {
				t.Errorf("scsi0: %q", got.Values["scsi0"])
			}
			macs, _ := res["mac"].(map[string]any)
			nets, _ := got.Nets()
			if len(macs) != 2 || macs["net0"] != nets["net0"].MAC || macs["net1"] != nets["net1"].MAC {
				t.Errorf("K17: returned MACs %v, config %v / %v", macs, nets["net0"].MAC, nets["net1"].MAC)
			}

			w.sim.ResetRequests()
			again := w.run(seed002Bare(), false)
			if failed(again) || again["changed"] != false || len(writes(w.sim)) != 0 {
				t.Errorf("rerun: %v %v %v", msg(again), again["changes"], writes(w.sim))
			}
			if m, _ := again["mac"].(map[string]any); m["net1"] != nets["net1"].MAC {
				t.Errorf("K17: rerun MACs %v", m)
			}
		})
	}
}
