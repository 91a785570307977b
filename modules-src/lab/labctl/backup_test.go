package labctl

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestLabCTBackupRestore, PVE 9 and 8: a backup PutCTBackup writes on a
// node is a real file in local's dump/ (listed as content backup of its
// VMID), its config
// is what extractconfig returns, and a restore through pvesh rebuilds the
// container from it on the storage asked.
func TestLabCTBackupRestorePVE9(t *testing.T) {
	t.Parallel()
	testLabCTBackupRestore(t, 9)
}
func TestLabCTBackupRestorePVE8(t *testing.T) {
	t.Parallel()
	testLabCTBackupRestore(t, 8)
}

func testLabCTBackupRestore(t *testing.T, pve int) {
	lab := startLab(t, pve, func(o *Options) { o.Nodes = 1 })
	const conf = "arch: amd64\ncores: 2\nhostname: runner\nmemory: 1024\nnet0: name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:07,ip=dhcp,type=veth\n" +
		"ostype: debian\nrootfs: tank:subvol-300-disk-0,size=3G\nswap: 0\nunprivileged: 1\n"
	volid, err := lab.PutCTBackup("pve01", 300, time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC), conf)
	if err != nil {
		t.Fatal(err)
	}
	if volid != "local:backup/vzdump-lxc-300-2026_12_01-03_00_00.tar.zst" {
		t.Errorf("volid %q", volid)
	}
	var content []map[string]any
	if err := labAPI(lab, "pve01", "/nodes/pve01/storage/local/content?content=backup", &content); err != nil {
		t.Fatal(err)
	}
	if len(content) != 1 || content[0]["volid"] != volid || content[0]["vmid"] != float64(300) || content[0]["subtype"] != "lxc" {
		t.Errorf("local's backups: %v", content)
	}
	var raw string
	if err := labAPI(lab, "pve01", "/nodes/pve01/vzdump/extractconfig?volume="+volid, &raw); err != nil {
		t.Fatal(err)
	}
	if raw != conf {
		t.Errorf("extractconfig: %q", raw)
	}
	onNode(t, lab, "pve01", "pvesh create /nodes/pve01/lxc --vmid 310 --ostemplate "+volid+" --restore 1 --storage local-lvm")
	var cfg map[string]any
	waitFor(t, func() bool {
		cfg = nil
		return labAPI(lab, "pve01", "/nodes/pve01/lxc/310/config", &cfg) == nil && cfg["lock"] == nil && cfg["rootfs"] != nil
	}, "CT 310 never restored")
	if cfg["rootfs"] != "local-lvm:vm-310-disk-0,size=3G" || cfg["hostname"] != "runner" || cfg["swap"] != float64(0) ||
		cfg["unprivileged"] != float64(1) || !strings.Contains(fmt.Sprint(cfg["net0"]), "hwaddr=BC:24:11:00:00:07") {
		t.Errorf("restored CT 310: %v", cfg)
	}
}
