package volumes

import (
	"fmt"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

// Guest volumes on a zfspool storage are datasets in the node's ZFS (the
// lab's zfs stand-in), created, grown, cloned and destroyed with the zfs
// commands ZFSPoolPlugin.pm runs (zfs_create_zvol, zfs_create_subvol,
// create_base, clone_image, volume_resize, free_image), through
// Config.ZFS. Without the hook (in-process tests) volumes live only in the
// simulator's state. A zfs failure fails the operation with zfs's message,
// as zfs_request dies with it, and leaves the simulator's state unchanged.

// zfsOn runs `zfs args…` on node for a zfspool storage; nothing elsewhere.
func (s Model) zfsOn(node string, st *core.Storage, args ...string) error {
	if s.Cfg.ZFS == nil || st.Type != "zfspool" {
		return nil
	}
	if err := s.Cfg.ZFS(node, args...); err != nil {
		// zfs_request: "zfs error: <stderr>".
		return fmt.Errorf("zfs error: %s", strings.TrimSpace(err.Error()))
	}
	return nil
}

// ZFSCreateVolume is zfs_create_zvol (storage.ZvolCreate).
func (s Model) ZFSCreateVolume(node string, st *core.Storage, name string, size int64) error {
	return s.zfsOn(node, st, storage.ZvolCreate(st, name, size)...)
}

// AllocSubvolLocked creates a container's root or mount point volume:
// subvol-<vmid>-disk-N on zfspool (zfs_create_subvol: a filesystem with a
// refquota, none for size 0), vm-<vmid>-disk-N elsewhere.
func (s Model) AllocSubvolLocked(node string, st *core.Storage, vmid int, size int64) (string, error) {
	prefix, format := "vm", "raw"
	if st.Type == "zfspool" {
		prefix, format = "subvol", "subvol"
	}
	name := s.FreeDiskName(node, st, vmid, prefix, format)
	volid := st.ID + ":" + name
	if storage.HasPath(st) {
		volid = st.ID + ":" + storage.VolName(st, vmid, name, format)
	}
	if err := s.zfsOn(node, st, storage.SubvolCreate(st, name, size)...); err != nil {
		return "", err
	}
	s.VolumesFor(node, st)[volid] = &core.GuestVolume{Size: size, Format: format}
	return volid, nil
}

// MakeBaseLocked turns a VM's volume into its template's base volume
// (create_base): vm- → base- and, on zfspool, the __base__ snapshot
// linked clones are made from.
func (s Model) MakeBaseLocked(node string, volid string) (string, error) {
	vol, st, err := s.VolumeLocked(node, volid)
	if err != nil {
		return "", err
	}
	nb := storage.BaseVolid(volid)
	_, from, _ := storage.ParseVolumeID(volid)
	_, to, _ := storage.ParseVolumeID(nb)
	if err := s.zfsOn(node, st, "rename", storage.Dataset(st, from), storage.Dataset(st, to)); err != nil {
		return "", err
	}
	if err := s.zfsOn(node, st, "snapshot", storage.Dataset(st, to)+"@__base__"); err != nil {
		return "", err
	}
	vols := s.VolumesFor(node, st)
	delete(vols, volid)
	vols[nb] = vol
	return nb, nil
}

// ResizeVolumeLocked is volume_resize (storage.Resize).
func (s Model) ResizeVolumeLocked(node, volid string, size int64) error {
	vol, st, err := s.VolumeLocked(node, volid)
	if err != nil {
		return err
	}
	_, vn, _ := storage.ParseVolumeID(volid)
	if err := s.zfsOn(node, st, storage.Resize(st, vn, vol.Format, size)...); err != nil {
		return err
	}
	vol.Size = size
	return nil
}

// ZFSMigrateLocked is storage_migrate for a migration's local zfspool
// volumes: the dataset appears on the target (PVE sends it with zfs
// send/recv of a __migration__ snapshot; the stand-in holds no data, so it
// is created alike) and is destroyed on the source. Other storages are the
// simulator's alone.
func (s Model) ZFSMigrateLocked(db *core.ConfigDB, from, to string, files []string) error {
	for _, file := range files {
		store, vn, _ := storage.ParseVolumeID(file)
		st := db.Storage[store]
		v := s.State.Nodes[from].Volumes[file]
		if st == nil || st.Type != "zfspool" || v == nil {
			continue
		}
		var err error
		if v.Format == "subvol" {
			err = s.zfsOn(to, st, storage.SubvolCreate(st, vn, v.Size)...)
		} else {
			err = s.ZFSCreateVolume(to, st, vn, v.Size)
		}
		if err != nil {
			return fmt.Errorf("storage migration for '%s' to storage '%s' failed - %w", file, st.ID, err)
		}
		if err := s.zfsOn(from, st, "destroy", "-r", storage.Dataset(st, vn)); err != nil {
			return err
		}
	}
	return nil
}
