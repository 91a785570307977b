package volumes

import (
	"fmt"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

// VolumesFor returns the map holding st's volumes as node sees them.
func (s Model) VolumesFor(node string, st *core.Storage) map[string]*core.GuestVolume {
	if st.Shared() {
		db := s.DBOf(node)
		if db.SharedVolumes == nil {
			db.SharedVolumes = map[string]*core.GuestVolume{}
		}
		return db.SharedVolumes
	}
	n := s.State.Nodes[node]
	if n.Volumes == nil {
		n.Volumes = map[string]*core.GuestVolume{}
	}
	return n.Volumes
}

// VolumeLocked returns a volume as node sees it.
func (s Model) VolumeLocked(node, volid string) (*core.GuestVolume, *core.Storage, error) {
	store, _, ok := storage.ParseVolumeID(volid)
	if !ok {
		return nil, nil, fmt.Errorf("unable to parse volume ID '%s'", volid)
	}
	st := s.DBOf(node).Storage[store]
	if st == nil {
		return nil, nil, fmt.Errorf("storage '%s' does not exist", store)
	}
	v := s.VolumesFor(node, st)[volid]
	if v == nil {
		return nil, st, fmt.Errorf("volume '%s' does not exist", volid)
	}
	return v, st, nil
}

// FreeDiskName is storage.FreeDiskName among st's volumes as node sees them.
func (s Model) FreeDiskName(node string, st *core.Storage, vmid int, prefix, format string) string {
	return storage.FreeDiskName(st, s.VolumesFor(node, st), vmid, prefix, format)
}

// AllocVolumeLocked creates a volume of size bytes for vmid on st.
// On zfspool it is a zvol in the node's ZFS (zvols.go).
func (s Model) AllocVolumeLocked(node string, st *core.Storage, vmid int, size int64, format string) (string, error) {
	if format == "" {
		format = storage.DefaultFormat(st)
	}
	name := s.FreeDiskName(node, st, vmid, "vm", format)
	volid := st.ID + ":" + storage.VolName(st, vmid, name, format)
	if err := s.ZFSCreateVolume(node, st, name, size); err != nil {
		return "", err
	}
	s.VolumesFor(node, st)[volid] = &core.GuestVolume{Size: size, Format: format}
	return volid, nil
}

// AllocCloudinitLocked creates vm-<vmid>-cloudinit (4 MiB, as PVE):
// qemu-server's create_disks names it itself (API2/Qemu.pm, the cloudinit
// branch: the format given, else qcow2 with the suffix on a storage with a
// path, raw elsewhere), so a second allocation for the VMID meets the
// first, and fails as the storage plugin's alloc_image does
// (storage.CloudinitExists).
func (s Model) AllocCloudinitLocked(node string, st *core.Storage, vmid int, format string) (string, error) {
	if format == "" {
		format = storage.DefaultFormat(st)
		if storage.HasPath(st) {
			format = "qcow2"
		}
	}
	name := fmt.Sprintf("vm-%d-cloudinit", vmid)
	volid := st.ID + ":" + storage.VolName(st, vmid, name, format)
	if s.VolumesFor(node, st)[volid] != nil {
		return "", storage.CloudinitExists(st, name, volid)
	}
	if err := s.ZFSCreateVolume(node, st, name, 4<<20); err != nil {
		return "", err
	}
	s.VolumesFor(node, st)[volid] = &core.GuestVolume{Size: 4 << 20, Format: format}
	return volid, nil
}

// FreeVolumeLocked is vdisk_free: a base volume still used by a linked
// clone stays (Storage.pm: "base volume '…' is still in use by linked
// cloned"); on zfspool the dataset goes with `zfs destroy -r` (free_image),
// and a failure keeps the volume. Callers that only warn, as PVE's
// destroy_vm does, may ignore the error.
func (s Model) FreeVolumeLocked(node, volid string) error {
	_, st, err := s.VolumeLocked(node, volid)
	if err != nil {
		return err
	}
	vols := s.VolumesFor(node, st)
	if storage.IsBase(volid) {
		for _, v := range vols {
			if v.Parent == volid {
				_, vn, _ := storage.ParseVolumeID(volid)
				return fmt.Errorf("base volume '%s' is still in use by linked cloned", vn)
			}
		}
	}
	_, vn, _ := storage.ParseVolumeID(volid)
	if err := s.zfsOn(node, st, "destroy", "-r", storage.Dataset(st, vn)); err != nil {
		return err
	}
	delete(vols, volid)
	return nil
}

// LinkedCloneLocked creates a linked clone of base for newid (clone_image):
// base-100-disk-0/vm-101-disk-0 on lvmthin/zfspool, 100/base-100-disk-0.qcow2/
// 101/vm-101-disk-0.qcow2 on a directory.
func (s Model) LinkedCloneLocked(node string, st *core.Storage, base string, newid int) (string, error) {
	src, _, err := s.VolumeLocked(node, base)
	if err != nil {
		return "", err
	}
	_, bvn, _ := storage.ParseVolumeID(base)
	volid, name := storage.LinkedClone(st, s.VolumesFor(node, st), base, newid)
	// clone_image: zfs clone of the base's __base__ snapshot.
	if err := s.zfsOn(node, st, "clone", storage.Dataset(st, bvn)+"@__base__", storage.Dataset(st, name)); err != nil {
		return "", err
	}
	format := src.Format
	if storage.HasPath(st) {
		format = "qcow2"
	}
	s.VolumesFor(node, st)[volid] = &core.GuestVolume{Size: src.Size, Format: format, Parent: base}
	return volid, nil
}

// VolumeContentLocked lists a storage's volumes on node for
// GET /nodes/{node}/storage/{storage}/content.
func (s Model) VolumeContentLocked(node string, st *core.Storage) []map[string]any {
	return storage.ImageContent(st.ID, s.VolumesFor(node, st))
}

// StorageLock is the allocation lock of a storage as seen from node, held
// while a volume is allocated (pve-storage Plugin.pm cluster_lock_storage):
// a node-local flock, /var/lock/pve-manager/pve-storage-<id>, for local
// storage, one cluster-wide cfs lock, storage-<id>, for shared.
func StorageLock(node string, st *core.Storage) (key string, timeoutMsg string) {
	if st.Shared() {
		return "cfs:storage-" + st.ID, fmt.Sprintf("cfs-lock 'storage-%s' error: got lock request timeout", st.ID)
	}
	file := "/var/lock/pve-manager/pve-storage-" + st.ID
	return node + ":" + file, fmt.Sprintf("can't lock file '%s' - got timeout", file)
}
