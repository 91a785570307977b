package qemuserver

import (
	"iter"
	"maps"
	"regexp"
	"slices"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

// newDiskRe is NEW_DISK_RE of QemuServer/Drive.pm: "[storage:]size"
// allocates a disk.
var newDiskRe = regexp.MustCompile(`^(([^/:\s]+):)?(\d+(\.\d+)?)$`)

// CheckStorageAccessNew is the new-disk branch of $check_storage_access
// (src/PVE/API2/Qemu.pm), over conf's drives sorted:
// Datastore.AllocateSpace on the storage a "storage:size" drive allocates
// on, or on defaultStorage for a bare size (create's storage parameter);
// 'cdrom' needs Sys.Console on /. Existing volumes (check_volume_access)
// are left to the handlers that read them.
func CheckStorageAccessNew(p Perm, conf map[string]string, defaultStorage string) error {
	if p.Root {
		return nil
	}
	for d := range drives(conf) {
		f := d.File()
		var path, priv string
		switch m := newDiskRe.FindStringSubmatch(f); {
		case d.CDROM() && f == "cdrom":
			path, priv = "/", "Sys.Console"
		case !d.CDROM() && m != nil && (m[2] != "" || defaultStorage != ""):
			store := m[2]
			if store == "" {
				store = defaultStorage
			}
			path, priv = "/storage/"+store, "Datastore.AllocateSpace"
		default:
			continue
		}
		if err := p.Check(path, priv); err != nil {
			return err
		}
	}
	return nil
}

// CheckStorageAccessClone is $check_storage_access_clone (src/PVE/API2/
// Qemu.pm) over the source's config: for each disk (not CD-ROMs:
// cloud-init drives are media=cdrom), Datastore.AllocateSpace on the
// clone's target storage, or on the disk's own storage when none is
// given; then on vmstatestorage. clone_vm's check_bridge_access comes
// after it, the caller's.
func CheckStorageAccessClone(p Perm, src map[string]string, target string) error {
	if p.Root {
		return nil
	}
	for d := range drives(src) {
		f := d.File()
		if f == "" || f == "none" {
			continue
		}
		path, priv := "", "Datastore.AllocateSpace"
		if d.CDROM() {
			if f != "cdrom" {
				continue // "we simply allow access"
			}
			path, priv = "/", "Sys.Console"
		} else {
			sid, _, _ := storage.ParseVolumeID(f)
			if target != "" {
				sid = target
			}
			path = "/storage/" + sid
		}
		if err := p.Check(path, priv); err != nil {
			return err
		}
	}
	if v := src["vmstatestorage"]; v != "" {
		return p.Check("/storage/"+v, "Datastore.AllocateSpace")
	}
	return nil
}

// drives yields conf's drives (unusedN too), keys sorted.
func drives(conf map[string]string) iter.Seq[Drive] {
	return func(yield func(Drive) bool) {
		for _, k := range slices.Sorted(maps.Keys(conf)) {
			if IsDriveKey(k) && !yield(ParseDrive(conf[k])) {
				return
			}
		}
	}
}
