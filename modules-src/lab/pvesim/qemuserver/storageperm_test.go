package qemuserver

import (
	"slices"
	"testing"
)

// $check_storage_access's new disks: the storage each "[store:]size"
// allocates on (a bare size: create's storage parameter, none without
// it); cdrom needs Sys.Console; existing volumes and ISOs are not asked.
func TestCheckStorageAccessNew(t *testing.T) {
	conf := map[string]string{
		"scsi0":   "local-lvm:4",
		"scsi1":   "8",
		"virtio0": "local-zfs:vm-100-disk-0",
		"ide2":    "cdrom,media=cdrom",
		"ide3":    "local:iso/d.iso,media=cdrom",
		"net0":    "virtio,bridge=vmbr0",
		"sata0":   "tank:1.5",
	}
	r := &recorder{granted: map[string]bool{"/storage/local-lvm:Datastore.AllocateSpace": true, "/:Sys.Console": true,
		"/storage/big:Datastore.AllocateSpace": true, "/storage/tank:Datastore.AllocateSpace": true}}
	if err := CheckStorageAccessNew(r.perm(false), conf, "big"); err != nil {
		t.Fatal(err)
	}
	want := []string{"/:Sys.Console", "/storage/tank:Datastore.AllocateSpace", "/storage/local-lvm:Datastore.AllocateSpace", "/storage/big:Datastore.AllocateSpace"}
	if !slices.Equal(r.asked, want) {
		t.Fatalf("asked %q, want %q", r.asked, want)
	}
	r = &recorder{granted: map[string]bool{"/storage/local-lvm:Datastore.AllocateSpace": true, "/:Sys.Console": true, "/storage/tank:Datastore.AllocateSpace": true}}
	if err := CheckStorageAccessNew(r.perm(false), conf, ""); err != nil || slices.Contains(r.asked, "/storage/big:Datastore.AllocateSpace") {
		t.Fatalf("a bare size without a storage parameter: %v (asked %q)", err, r.asked)
	}
	r = &recorder{granted: map[string]bool{"/:Sys.Console": true}}
	if err := CheckStorageAccessNew(r.perm(false), conf, ""); err == nil {
		t.Fatal("allocation on tank without Datastore.AllocateSpace passed")
	}
	if r := (&recorder{}); CheckStorageAccessNew(r.perm(true), conf, "x") != nil || len(r.asked) != 0 {
		t.Fatal("root is asked")
	}
}

// $check_storage_access_clone: each disk's storage, or the target
// storage for all; CD-ROMs (cloud-init's too) are not asked, a physical
// cdrom needs Sys.Console; vmstatestorage too.
func TestCheckStorageAccessClone(t *testing.T) {
	src := map[string]string{
		"scsi0":          "local-lvm:base-100-disk-0",
		"virtio1":        "nfs:100/vm-100-disk-1.qcow2",
		"ide0":           "local-lvm:vm-100-cloudinit,media=cdrom",
		"ide1":           "cdrom,media=cdrom",
		"ide2":           "none,media=cdrom",
		"vmstatestorage": "nfs",
	}
	all := map[string]bool{"/storage/local-lvm:Datastore.AllocateSpace": true, "/storage/nfs:Datastore.AllocateSpace": true,
		"/storage/fast:Datastore.AllocateSpace": true, "/:Sys.Console": true}
	r := &recorder{granted: all}
	if err := CheckStorageAccessClone(r.perm(false), src, ""); err != nil {
		t.Fatal(err)
	}
	want := []string{"/:Sys.Console", "/storage/local-lvm:Datastore.AllocateSpace", "/storage/nfs:Datastore.AllocateSpace", "/storage/nfs:Datastore.AllocateSpace"}
	if !slices.Equal(r.asked, want) {
		t.Fatalf("asked %q, want %q", r.asked, want)
	}
	r = &recorder{granted: all}
	if err := CheckStorageAccessClone(r.perm(false), src, "fast"); err != nil {
		t.Fatal(err)
	}
	want = []string{"/:Sys.Console", "/storage/fast:Datastore.AllocateSpace", "/storage/fast:Datastore.AllocateSpace", "/storage/nfs:Datastore.AllocateSpace"}
	if !slices.Equal(r.asked, want) {
		t.Fatalf("with a target: asked %q, want %q", r.asked, want)
	}
	r = &recorder{granted: map[string]bool{"/storage/local-lvm:Datastore.AllocateSpace": true, "/:Sys.Console": true}}
	if err := CheckStorageAccessClone(r.perm(false), src, ""); err == nil {
		t.Fatal("nfs without Datastore.AllocateSpace passed")
	}
}
