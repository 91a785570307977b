package pvecontainer

import (
	"maps"
	"slices"
	"testing"
)

// $storage_only_mode: only a request without rootfs and mpN.
func TestRestoreStorageOnly(t *testing.T) {
	if !RestoreStorageOnly(map[string]string{"hostname": "a", "net0": "name=eth0", "unused0": "x"}) {
		t.Error("a request without mount points is not storage-only")
	}
	for _, k := range []string{"rootfs", "mp3"} {
		if RestoreStorageOnly(map[string]string{"hostname": "a", k: "local:8"}) {
			t.Errorf("a request with %s is storage-only", k)
		}
	}
}

// Storage-only restore: each archive mount point becomes storage:<GiB>
// with its other options; the refusals in create_vm's order.
func TestRestoreMountPoints(t *testing.T) {
	got, err := RestoreMountPoints(map[string]string{
		"rootfs":  "local-lvm:vm-100-disk-0,size=8G",
		"mp0":     "local-lvm:vm-100-disk-1,mp=/data,size=512M,backup=1",
		"memory":  "512",
		"unused0": "local-lvm:vm-100-disk-2",
	}, "tank")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"rootfs": "tank:8", "mp0": "tank:0.5,backup=1,mp=/data"}
	if !maps.Equal(got, want) {
		t.Errorf("RestoreMountPoints = %v, want %v", got, want)
	}
	for _, c := range []struct {
		orig map[string]string
		want string
	}{
		{map[string]string{"mp0": "local:vm-1-disk-0,size=1G,mp=/a"}, "rootfs configuration could not be recovered, please check and specify manually!"},
		{map[string]string{"rootfs": "/srv/ct,size=1G"}, "restoring rootfs to bind mount is only possible by specifying -rootfs manually!"},
		{map[string]string{"rootfs": "local:vm-1-disk-0", "mp0": "local:vm-1-disk-1,size=1G"}, "unable to detect disk size - please specify rootfs (size)"},
		{map[string]string{"rootfs": "local:vm-1-disk-0,size=1G", "mp1": "/dev/sdb,mp=/b"}, "restoring 'mp1' (a bind or device mount) is not simulated by the lab"},
	} {
		if _, err := RestoreMountPoints(c.orig, "tank"); err == nil || err.Error() != c.want {
			t.Errorf("RestoreMountPoints(%v) error %v, want %q", c.orig, err, c.want)
		}
	}
}

// sanitize_and_merge_config: the archive fills in what the request does
// not give, never its volumes or identity keys; features are dropped for
// a restricted unprivileged→privileged restore; unique gives each NIC a
// new MAC over the request's NIC.
func TestMergeRestored(t *testing.T) {
	mac := func() string { return "BC:24:11:00:00:02" }
	orig := map[string]string{
		"hostname": "old", "memory": "1024", "digest": "d", "rootfs": "r", "mp0": "m", "unused1": "u",
		"snapshots": "s", "parent": "p", "template": "1", "unprivileged": "1", "features": "nesting=1",
		"net0": "name=eth0,bridge=vmbr0,hwaddr=AA:AA:AA:AA:AA:AA,type=veth",
	}
	keys := map[string]string{"hostname": "new", "net0": "name=eth9,bridge=vmbr1"}
	warn := MergeRestored(keys, orig, false, false, mac)
	want := map[string]string{"hostname": "new", "memory": "1024", "features": "nesting=1", "net0": "name=eth9,bridge=vmbr1"}
	if !maps.Equal(keys, want) || len(warn) != 0 {
		t.Errorf("MergeRestored = %v %v, want %v and no warning", keys, warn, want)
	}

	keys = map[string]string{"hostname": "new", "net0": "name=eth9,bridge=vmbr1"}
	warn = MergeRestored(keys, orig, true, true, mac)
	want = map[string]string{"hostname": "new", "memory": "1024", "net0": "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:02,type=veth"}
	if !maps.Equal(keys, want) || !slices.Equal(warn, []string{"changing from unprivileged to privileged, skipping features"}) {
		t.Errorf("MergeRestored (restricted, unique) = %v %v, want %v and the features warning", keys, warn, want)
	}

	keys = map[string]string{"unprivileged": "1"}
	if warn = MergeRestored(keys, orig, true, false, mac); keys["features"] != "nesting=1" || len(warn) != 0 {
		t.Errorf("an unprivileged restore lost features: %v %v", keys, warn)
	}
}
