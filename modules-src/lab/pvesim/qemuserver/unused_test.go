package qemuserver

import (
	"fmt"
	"maps"
	"testing"
)

// add_unused_volume: the lowest free unusedN; a volume already there is
// not added twice; 256 taken is AbstractConfig.pm's die.
func TestUnusedSlot(t *testing.T) {
	keys := map[string]string{"unused0": "local-lvm:vm-100-disk-0", "unused2": "local-lvm:vm-100-disk-2"}
	if k, err := UnusedSlot(keys, "local-lvm:vm-100-disk-5"); k != "unused1" || err != nil {
		t.Fatalf("UnusedSlot = %q, %v; want unused1", k, err)
	}
	if k, err := UnusedSlot(keys, "local-lvm:vm-100-disk-2"); k != "" || err != nil {
		t.Fatalf("a volume already unused: %q, %v", k, err)
	}
	full := map[string]string{}
	for i := range MaxUnusedDisks {
		full[fmt.Sprintf("unused%d", i)] = fmt.Sprintf("local-lvm:vm-100-disk-%d", i)
	}
	if _, err := UnusedSlot(full, "local-lvm:vm-100-disk-999"); err == nil || err.Error() != "Too many unused volumes - please delete them first." {
		t.Fatalf("all taken: %v", err)
	}
}

// is_volume_in_use: another drive, current or pending, not an unusedN.
func TestVolumeInUse(t *testing.T) {
	cur := map[string]string{"scsi0": "local-lvm:vm-100-disk-0,size=4G", "unused0": "local-lvm:vm-100-disk-1"}
	pend := map[string]string{"scsi1": "local-lvm:vm-100-disk-2"}
	for _, c := range []struct {
		skip, volid string
		want        bool
	}{
		{"scsi5", "local-lvm:vm-100-disk-0", true},
		{"scsi0", "local-lvm:vm-100-disk-0", false},
		{"scsi5", "local-lvm:vm-100-disk-1", false},
		{"scsi5", "local-lvm:vm-100-disk-2", true},
	} {
		if got := VolumeInUse(cur, pend, c.skip, c.volid); got != c.want {
			t.Errorf("VolumeInUse(skip %s, %s) = %v", c.skip, c.volid, got)
		}
	}
}

// write_vm_config drops an unusedN whose volume a drive uses again.
func TestDropReusedUnused(t *testing.T) {
	cur := map[string]string{"scsi0": "local-lvm:vm-100-disk-0", "unused0": "local-lvm:vm-100-disk-0",
		"unused1": "local-lvm:vm-100-disk-1", "unused2": "local-lvm:vm-100-disk-2"}
	pend := map[string]string{"scsi1": "local-lvm:vm-100-disk-2,size=4G", "unused1": "x"}
	DropReusedUnused(cur, pend)
	want := map[string]string{"scsi0": "local-lvm:vm-100-disk-0", "unused1": "local-lvm:vm-100-disk-1"}
	if !maps.Equal(cur, want) {
		t.Fatalf("after DropReusedUnused %v, want %v", cur, want)
	}
}
