package pveclone

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// samePrediction compares check mode's config with the real run's
// read-back key by key: only what PVE draws when it acts (MACs, SMBIOS
// UUID, vmgenid) is allowed to differ, and only where check mode says so.
func samePrediction(t *testing.T, predicted, got map[string]string) {
	t.Helper()
	for k, pv := range predicted {
		rv, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s: predicted %q, missing after the real run", k, pv)
		case qemu.IsNet(k):
			pn, _ := qemu.ParseNet(k, pv)
			rn, _ := qemu.ParseNet(k, rv)
			pn.MAC = rn.MAC
			if a, _ := pn.Render(); a != rv {
				t.Errorf("%s: predicted %q, read back %q", k, pv, rv)
			}
		case strings.Contains(pv, qemu.AssignedAtClone) || strings.Contains(pv, qemu.AssignedAtCreation):
		case k == "sshkeys":
			if !slices.Equal(qemu.DecodeSSHKeys(pv), qemu.DecodeSSHKeys(rv)) {
				t.Errorf("sshkeys predicted %q, read back %q", pv, rv)
			}
		case pv != rv:
			t.Errorf("%s: predicted %q, read back %q", k, pv, rv)
		}
	}
	for k, rv := range got {
		if _, ok := predicted[k]; !ok && k != "digest" {
			t.Errorf("%s=%q read back, not predicted by check mode", k, rv)
		}
	}
}

// allocVolume makes a volume of vmid on a storage (POST …/content, as PVE's
// pvesm alloc does), left there as an orphan no config names.
func (w *world) allocVolume(node, store string, vmid int, filename string) string {
	w.t.Helper()
	var volid string
	if _, err := w.client().Dispatch(context.Background(), pveapi.Write{Method: "POST", Path: pveapi.Path("/nodes/%s/storage/%s/content", node, store),
		Params: url.Values{"vmid": {fmt.Sprint(vmid)}, "filename": {filename}, "size": {"1G"}}, What: "alloc " + filename,
		Settle: func(context.Context) (bool, error) { return false, nil }, Creates: true}); err != nil {
		w.t.Fatalf("alloc %s: %v", filename, err)
	}
	return volid
}

// Check mode names every disk PVE allocates as the storage plugin will
// (find_free_diskname: the first free vm-<vmid>-disk-<n> of the VMID on
// that storage, an orphan volume's number skipped; <vmid>/….<format> on a
// file storage, counted per format; no format key left), the EFI disk
// with its vars image size, and the prediction equals the real run's
// read-back key by key (K15: check mode tells the truth). Bare VM of seed
// 002, PVE 8 and 9.
func TestCheckModeNamesBareDisks(t *testing.T) {
	for _, ver := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", ver), func(t *testing.T) {
			w := newWorld(t, ver)
			w.allocVolume("pve03", "local-lvm", 310, "vm-310-disk-0")  // an orphan: its number is taken
			w.allocVolume("pve03", "shared", 310, "vm-310-disk-0.raw") // another format: does not take qcow2's 0
			args := map[string]any{"vmid": 310, "name": "bare-1", "node": "pve03", "cores": 4, "memory": 8192,
				"machine": "q35", "bios": "ovmf", "ostype": "l26", "scsihw": "virtio-scsi-single",
				"disks": map[string]any{"scsi0": "local-lvm:32,discard=on,ssd=1",
					"scsi1": map[string]any{"storage": "shared", "size": "2G", "format": "qcow2"}, "virtio0": "shared:1"},
				"efidisk":  map[string]any{"storage": "local-lvm", "efitype": "4m", "pre_enrolled_keys": true},
				"tpmstate": map[string]any{"storage": "local-lvm", "version": "v2.0"},
				"nets":     map[string]any{"net0": "virtio,bridge=vmbr0", "net1": map[string]any{"model": "virtio", "bridge": "vmbr1", "tag": 30}},
				"onboot":   true, "tags": []any{"production"}}
			w.sim.ResetRequests()
			check := w.run(args, true)
			if failed(check) || check["changed"] != true || len(writes(w.sim)) != 0 {
				t.Fatalf("check: %v %v", msg(check), writes(w.sim))
			}
			predicted := cfgOf(check)
			want := map[string]string{
				"efidisk0":  "local-lvm:vm-310-disk-1,",
				"scsi0":     "local-lvm:vm-310-disk-2,",
				"tpmstate0": "local-lvm:vm-310-disk-3,",
				"scsi1":     "shared:310/vm-310-disk-0.qcow2,",
				"virtio0":   "shared:310/vm-310-disk-1.raw,",
			}
			for k, prefix := range want {
				if !strings.HasPrefix(predicted[k], prefix) || strings.Contains(predicted[k], "format=") {
					t.Errorf("check mode %s = %q, want %s…", k, predicted[k], prefix)
				}
			}
			res := w.run(args, false)
			if failed(res) || res["changed"] != true {
				t.Fatalf("real: %v", msg(res))
			}
			samePrediction(t, predicted, w.config("pve03", 310, false).Values)
		})
	}
}

// The same for disks the configuration adds after a clone: a new disk on
// the template's shared storage and one on the target's local-lvm are
// predicted with their final names (after the clone's own volumes), and
// equal the read-back. The full config check of TestCloneAcrossNodes
// covers the clone itself (K15).
func TestCheckModeNamesAddedDisks(t *testing.T) {
	for _, ver := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", ver), func(t *testing.T) {
			w := newWorld(t, ver)
			w.allocVolume("pve02", "local-lvm", 201, "vm-201-disk-0") // an orphan on the target
			disks := map[string]any{"scsi0": "8G", "scsi1": "shared:2,discard=on", "virtio1": map[string]any{"storage": "local-lvm", "size": "3G", "iothread": true}}
			args := with(webArgs(), "disks", disks)
			w.sim.ResetRequests()
			check := w.run(args, true)
			if failed(check) || len(writes(w.sim)) != 0 {
				t.Fatalf("check: %v %v", msg(check), writes(w.sim))
			}
			predicted := cfgOf(check)
			if !strings.HasPrefix(predicted["scsi1"], "shared:201/vm-201-disk-1.raw,") || !strings.HasPrefix(predicted["virtio1"], "local-lvm:vm-201-disk-1,") {
				t.Errorf("check mode: scsi1 %q, virtio1 %q", predicted["scsi1"], predicted["virtio1"])
			}
			res := w.run(args, false)
			if failed(res) || res["changed"] != true {
				t.Fatalf("real: %v", msg(res))
			}
			got := w.config("pve02", 201, false).Values
			samePrediction(t, predicted, got)
			// The existing VM with one more disk: predicted from what it owns.
			more := maps.Clone(disks)
			more["sata0"] = "local-lvm:1"
			w.sim.ResetRequests()
			c2 := w.run(with(args, "disks", more), true)
			if failed(c2) || len(writes(w.sim)) != 0 || !strings.HasPrefix(cfgOf(c2)["sata0"], "local-lvm:vm-201-disk-2,") {
				t.Fatalf("check on the existing VM: %v sata0 %q", msg(c2), cfgOf(c2)["sata0"])
			}
			r2 := w.run(with(args, "disks", more), false)
			if failed(r2) || r2["changed"] != true {
				t.Fatalf("real on the existing VM: %v", msg(r2))
			}
			samePrediction(t, cfgOf(c2), w.config("pve02", 201, false).Values)
		})
	}
}

// On a dir storage every disk name of the VMID counts, whatever its
// format: DirPlugin's formats include subvol, so pve-storage's
// $get_vm_disk_number matches (vm|base|subvol|basevol)-<vmid>-disk-N
// without the suffix (Plugin.pm; pveapi/storagetype), unlike nfs above,
// where a .raw leaves 0 free for a qcow2. Check mode predicts it and the
// real run's read-back equals it, PVE 8 and 9.
func TestCheckModeNamesDiskOnDir(t *testing.T) {
	for _, ver := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", ver), func(t *testing.T) {
			w := newWorld(t, ver)
			if _, err := w.client().Dispatch(context.Background(), pveapi.Write{Method: "POST", Path: "/storage", What: "storage d1",
				Params: url.Values{"storage": {"d1"}, "type": {"dir"}, "path": {"/srv/d1"}, "content": {"images"}},
				Settle: func(context.Context) (bool, error) { return false, nil }, Creates: true}); err != nil {
				t.Fatal(err)
			}
			w.allocVolume("pve03", "d1", 311, "vm-311-disk-0.raw") // takes 0 from a qcow2 too
			args := map[string]any{"vmid": 311, "name": "bare-2", "node": "pve03", "cores": 1, "memory": 1024,
				"disks": map[string]any{"scsi0": map[string]any{"storage": "d1", "size": "2G", "format": "qcow2"}}}
			w.sim.ResetRequests()
			check := w.run(args, true)
			if failed(check) || check["changed"] != true || len(writes(w.sim)) != 0 {
				t.Fatalf("check: %v %v", msg(check), writes(w.sim))
			}
			predicted := cfgOf(check)
			if !strings.HasPrefix(predicted["scsi0"], "d1:311/vm-311-disk-1.qcow2,") {
				t.Errorf("check mode scsi0 = %q, want d1:311/vm-311-disk-1.qcow2,…", predicted["scsi0"])
			}
			res := w.run(args, false)
			if failed(res) || res["changed"] != true {
				t.Fatalf("real: %v", msg(res))
			}
			samePrediction(t, predicted, w.config("pve03", 311, false).Values)
		})
	}
}
