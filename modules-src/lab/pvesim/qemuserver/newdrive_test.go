package qemuserver

import (
	"errors"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

// $check_drive_param's storage part: each refusal, and what passes.
func TestCheckNewDrive(t *testing.T) {
	cfg := map[string]*storage.Section{
		"local":     {ID: "local", Type: "dir", Options: map[string]any{"path": "/var/lib/vz", "content": "iso,vztmpl,backup"}},
		"local-lvm": {ID: "local-lvm", Type: "lvmthin", Options: map[string]any{"vgname": "pve", "thinpool": "data", "content": "images,rootdir"}},
		"far":       {ID: "far", Type: "dir", Options: map[string]any{"path": "/far", "content": "images", "nodes": "pve2"}},
	}
	ok := []string{
		"none", "cdrom,media=cdrom", "/dev/sdb", "32", "local-lvm:32", "local-lvm:cloudinit",
		"local-lvm:vm-100-disk-0,size=4G", "local:iso/debian.iso,media=cdrom",
		"local:32,media=cdrom", // a cdrom takes no images content
	}
	for _, v := range ok {
		if err := CheckNewDrive("scsi0", v, "pve1", cfg); err != nil {
			t.Errorf("CheckNewDrive(%q) = %v, want nil", v, err)
		}
	}
	params := map[string]string{
		"local:iso/debian.iso":        "explicit 'media=cdrom' is required for iso images",
		"local:vztmpl/debian.tar.zst": "content type needs to be 'images' or 'iso'",
		"x y":                         "unable to parse volume ID 'x y'",
	}
	for v, msg := range params {
		var pe *ParamError
		if err := CheckNewDrive("scsi0", v, "pve1", cfg); !errors.As(err, &pe) || pe.Param != "scsi0" || pe.Msg != msg {
			t.Errorf("CheckNewDrive(%q) = %v, want scsi0: %s", v, err, msg)
		}
	}
	dies := map[string]string{
		"nope:32":         "storage 'nope' does not exist",
		"far:32":          "storage 'far' is not available on node 'pve1'",
		"local:32":        "storage 'local' does not support content type 'images'",
		"local:cloudinit": "storage 'local' does not support content type 'images'",
		"local-lvm:foo":   "unable to parse lvm volume name 'foo'",
	}
	for v, msg := range dies {
		var pe *ParamError
		if err := CheckNewDrive("scsi0", v, "pve1", cfg); err == nil || errors.As(err, &pe) || err.Error() != msg {
			t.Errorf("CheckNewDrive(%q) = %v, want the die %q", v, err, msg)
		}
	}
}

// create_efidisk's size: the vars image's, in whole extents on LVM.
func TestEFIDiskSize(t *testing.T) {
	for _, c := range []struct {
		typ, efitype string
		want         int64
	}{
		{"dir", "", 128 << 10}, {"dir", "2m", 128 << 10}, {"zfspool", "4m", 528 << 10},
		{"lvm", "4m", 4 << 20}, {"lvmthin", "", 4 << 20},
	} {
		if got := EFIDiskSize(c.typ, c.efitype); got != c.want {
			t.Errorf("EFIDiskSize(%q, %q) = %d, want %d", c.typ, c.efitype, got, c.want)
		}
	}
}
