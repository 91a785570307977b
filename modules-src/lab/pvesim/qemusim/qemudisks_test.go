package qemusim_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
)

// A disk replaced or removed from a stopped VM's config is kept as unusedN
// (qemu-server vmconfig_apply_pending → vmconfig_register_unused_drive,
// add_unused_volume: lowest free index, no duplicate); delete=unusedN frees
// it (try_deallocate_drive); re-attaching an unused volume drops its
// unusedN (write_vm_config); force=1 and `qm disk unlink --force` free at
// once; removing a disk takes it out of the boot order. K16: nothing is
// ever recreated — the volumes keep their names.
func TestUnusedDisksK16(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("pve%d", v), func(t *testing.T) {
			t.Parallel()
			s := simtest.Start(t, pvesim.New, simtest.Opts{Version: v, TaskDuration: 30 * time.Millisecond})
			c := simtest.NewClient(t, s, "pve01").LabToken()
			simtest.CreateVM(t, c, 100, url.Values{"scsi1": {"local-lvm:1"}})
			conf := simtest.VMConfig(t, c, "pve01", 100)
			if conf["boot"] != "order=scsi0;scsi1;net0" {
				t.Fatalf("boot %v", conf["boot"])
			}
			simtest.PutConfig(t, c, 100, url.Values{"scsi0": {"local-lvm:4"}}) // replaced by a new 4 GiB volume
			conf = simtest.VMConfig(t, c, "pve01", 100)
			if conf["scsi0"] != "local-lvm:vm-100-disk-2,size=4G" || conf["unused0"] != "local-lvm:vm-100-disk-0" {
				t.Errorf("after replacing scsi0: %v", conf)
			}
			simtest.PutConfig(t, c, 100, url.Values{"delete": {"scsi1"}})
			conf = simtest.VMConfig(t, c, "pve01", 100)
			if conf["scsi1"] != nil || conf["unused1"] != "local-lvm:vm-100-disk-1" || conf["boot"] != "order=scsi0;net0" {
				t.Errorf("after removing scsi1: %v", conf)
			}
			want := []string{"local-lvm:vm-100-disk-0", "local-lvm:vm-100-disk-1", "local-lvm:vm-100-disk-2"}
			if got := simtest.Volids(t, c, "local-lvm"); !slices.Equal(got, want) {
				t.Errorf("volumes %v, want %v: qemu-server keeps replaced disks", got, want)
			}
			// Re-attach unused1: its unusedN goes, the volume is the same.
			simtest.PutConfig(t, c, 100, url.Values{"scsi1": {"local-lvm:vm-100-disk-1"}})
			conf = simtest.VMConfig(t, c, "pve01", 100)
			if conf["unused1"] != nil || conf["scsi1"] != "local-lvm:vm-100-disk-1,size=1G" {
				t.Errorf("re-attached: %v", conf)
			}
			simtest.PutConfig(t, c, 100, url.Values{"delete": {"unused0"}})
			if got := simtest.Volids(t, c, "local-lvm"); slices.Contains(got, "local-lvm:vm-100-disk-0") {
				t.Errorf("delete=unused0 kept the volume: %v", got)
			}
			simtest.PutConfig(t, c, 100, url.Values{"delete": {"scsi1"}, "force": {"1"}})
			conf = simtest.VMConfig(t, c, "pve01", 100)
			if got := simtest.Volids(t, c, "local-lvm"); slices.Contains(got, "local-lvm:vm-100-disk-1") || conf["unused0"] != nil || conf["unused1"] != nil {
				t.Errorf("force delete: volumes %v config %v", got, conf)
			}
			// qm disk unlink: without force an unusedN, with force gone.
			simtest.PutConfig(t, c, 100, url.Values{"scsi2": {"local-lvm:1"}})
			c.Call("PUT", "/nodes/pve01/qemu/100/unlink", url.Values{"idlist": {"scsi2"}}).Must(t, "unlink")
			if conf = simtest.VMConfig(t, c, "pve01", 100); conf["unused0"] != "local-lvm:vm-100-disk-0" {
				t.Errorf("unlink without force: %v", conf)
			}
			c.Call("PUT", "/nodes/pve01/qemu/100/unlink", url.Values{"idlist": {"unused0"}, "force": {"1"}}).Must(t, "unlink --force")
			if got := simtest.Volids(t, c, "local-lvm"); !slices.Equal(got, []string{"local-lvm:vm-100-disk-2"}) {
				t.Errorf("after unlink --force: %v", got)
			}
			// Protection keeps disks.
			simtest.PutConfig(t, c, 100, url.Values{"protection": {"1"}})
			if r := c.Call("PUT", "/nodes/pve01/qemu/100/config", url.Values{"delete": {"scsi0"}}); r.Status != 500 ||
				r.Reason != "can't remove drive 'scsi0' - protection mode enabled" {
				t.Errorf("protected: %d %q", r.Status, r.Reason)
			}
		})
	}
}

// A running VM: a new SCSI disk is hotplugged, a replaced one is unplugged
// and kept as unusedN (vmconfig_update_disk); an IDE disk cannot be
// unplugged (hotplug_pending skips efidisk/ide/sata/tpmstate), so its
// removal waits in [PENDING] as `delete`, which GET pending shows (1, or 2
// with force) and GET config applies while current=1 does not; a cache
// change waits too. The start applies it all, with the same unusedN rules.
func TestRunningVMDiskPendingK10(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond})
	c := simtest.NewClient(t, s, "pve01").LabToken()
	simtest.CreateVM(t, c, 100, url.Values{"ide0": {"local-lvm:1"}})
	simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/100/status/start", nil)
	simtest.PutConfig(t, c, 100, url.Values{"scsi1": {"local-lvm:2"}})
	simtest.PutConfig(t, c, 100, url.Values{"scsi0": {"local-lvm:3"}})
	simtest.PutConfig(t, c, 100, url.Values{"delete": {"ide0"}, "force": {"1"}})
	simtest.PutConfig(t, c, 100, url.Values{"scsi1": {"local-lvm:vm-100-disk-2,cache=writeback,size=2G"}})
	cur := c.Call("GET", "/nodes/pve01/qemu/100/config", url.Values{"current": {"1"}}).Must(t, "current").Obj()
	if cur["scsi1"] != "local-lvm:vm-100-disk-2,size=2G" || cur["scsi0"] != "local-lvm:vm-100-disk-3,size=3G" ||
		cur["unused0"] != "local-lvm:vm-100-disk-1" || cur["ide0"] != "local-lvm:vm-100-disk-0,size=1G" {
		t.Errorf("live config: %v", cur)
	}
	withPending := simtest.VMConfig(t, c, "pve01", 100)
	if withPending["ide0"] != nil || !strings.Contains(fmt.Sprint(withPending["scsi1"]), "cache=writeback") {
		t.Errorf("GET config applies pending values: %v", withPending)
	}
	rows := map[string]map[string]any{}
	for _, e := range c.Call("GET", "/nodes/pve01/qemu/100/pending", nil).Must(t, "pending").List() {
		rows[e["key"].(string)] = e
	}
	if rows["ide0"]["delete"] != float64(2) || rows["ide0"]["value"] == nil {
		t.Errorf("pending ide0: %v", rows["ide0"])
	}
	if rows["scsi1"]["pending"] != "local-lvm:vm-100-disk-2,cache=writeback,size=2G" || rows["digest"]["value"] == nil {
		t.Errorf("pending rows: %v", rows)
	}
	// A CD-ROM cannot become a disk while running: the option stays
	// pending and the answer is a 400 naming it (vmconfig_update_disk).
	if r := c.Call("PUT", "/nodes/pve01/qemu/100/config", url.Values{"scsi0": {"none,media=cdrom"}}); r.Status != 400 || r.Errs["scsi0"] != "hotplug problem - unable to change media type\n" {
		t.Errorf("media change on a running VM: %d %v", r.Status, r.Errs)
	}
	if p := simtest.VMConfig(t, c, "pve01", 100); p["scsi0"] != "none,media=cdrom" {
		t.Errorf("the refused change is not pending: %v", p["scsi0"])
	}
	simtest.PutConfig(t, c, 100, url.Values{"revert": {"scsi0"}})
	simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/100/status/stop", nil)
	simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/100/status/start", nil)
	cur = c.Call("GET", "/nodes/pve01/qemu/100/config", url.Values{"current": {"1"}}).Must(t, "current").Obj()
	if cur["ide0"] != nil || !strings.Contains(fmt.Sprint(cur["scsi1"]), "cache=writeback") {
		t.Errorf("after the restart: %v", cur)
	}
	if got := simtest.Volids(t, c, "local-lvm"); slices.Contains(got, "local-lvm:vm-100-disk-0") || !slices.Contains(got, "local-lvm:vm-100-disk-1") {
		t.Errorf("force-deleted ide0 kept its volume, or the unused scsi0 went: %v", got)
	}
	if p := c.Call("GET", "/nodes/pve01/qemu/100/pending", nil).Must(t, "pending").List(); slices.ContainsFunc(p, func(e map[string]any) bool {
		return e["pending"] != nil || e["delete"] != nil
	}) {
		t.Errorf("pending left after the restart: %v", p)
	}
}

// DELETE (qm destroy) frees every volume the VM owns that its config
// references — drives, unusedN, cloud-init, pending values — but not a CD
// or another VM's disk; destroy-unreferenced-disks also frees the VMID's
// other images (destroy_vm, purge_unreferenced). A template whose base
// volume carries a linked clone is not destroyed.
func TestDestroyFreesOwnedVolumes(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond})
	c := simtest.NewClient(t, s, "pve01").LabToken()
	simtest.CreateVM(t, c, 101, nil)
	simtest.CreateVM(t, c, 100, url.Values{"ide2": {"local-lvm:cloudinit"}, "scsi1": {"local-lvm:1"}, "scsi2": {"local-lvm:vm-101-disk-0"}})
	simtest.PutConfig(t, c, 100, url.Values{"delete": {"scsi1"}})
	c.Call("POST", "/nodes/pve01/storage/local-lvm/content", url.Values{"filename": {"vm-100-disk-9"}, "vmid": {"100"}, "size": {"1G"}}).Must(t, "stray image")
	if st := simtest.MustTask(t, c, "DELETE", "/nodes/pve01/qemu/100", nil); st["exitstatus"] != "OK" {
		t.Fatalf("destroy: %v", st)
	}
	want := []string{"local-lvm:vm-100-disk-9", "local-lvm:vm-101-disk-0"}
	if got := simtest.Volids(t, c, "local-lvm"); !slices.Equal(got, want) {
		t.Errorf("after destroy: %v, want %v", got, want)
	}
	simtest.CreateVM(t, c, 100, nil) // vm-100-disk-0 (disk-9 is taken)
	if st := simtest.MustTask(t, c, "DELETE", "/nodes/pve01/qemu/100", url.Values{"destroy-unreferenced-disks": {"1"}}); st["exitstatus"] != "OK" {
		t.Fatalf("destroy: %v", st)
	}
	if got := simtest.Volids(t, c, "local-lvm"); !slices.Equal(got, []string{"local-lvm:vm-101-disk-0"}) {
		t.Errorf("destroy-unreferenced-disks left %v", got)
	}
	simtest.MakeTemplate(t, c, 9000, nil)
	if st := simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/9000/clone", url.Values{"newid": {"102"}, "full": {"0"}}); st["exitstatus"] != "OK" {
		t.Fatalf("linked clone: %v", st)
	}
	if st := simtest.MustTask(t, c, "DELETE", "/nodes/pve01/qemu/9000", nil); st["exitstatus"] != "base volume 'local-lvm:base-9000-disk-0' is still in use by linked cloned" {
		t.Errorf("destroy of a template with a linked clone: %v", st)
	}
	if _, ok, _ := s.ReadPmxcfs("pve01", "nodes/pve01/qemu-server/9000.conf"); !ok {
		t.Error("the template's config went although its base is in use")
	}
}
