package volumes

import (
	"fmt"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

// Resolving a volume ID of a request and checking access to it, as
// pve-storage's Content.pm and qemu-server's and pve-container's drive
// checks do; the content endpoints are pvesim/storagesim's.

// volRef is a volume ID resolved against the request ($real_volume_id).
type volRef = storage.VolRef

// RealVolumeID is Content.pm $real_volume_id: "store:name", or a bare name
// on the URL's storage; a volume ID naming another storage is refused.
func RealVolumeID(storage, volume string) (string, error) {
	if strings.Contains(volume, ":") {
		sid, _, _ := strings.Cut(volume, ":")
		if sid == "" {
			return "", core.ErrParams(map[string]string{"volume": fmt.Sprintf("unable to parse volume ID '%s'", volume)})
		}
		if storage != "" && sid != storage {
			return "", core.ErrParams(map[string]string{"volume": fmt.Sprintf("storage ID mismatch (%s != %s)", sid, storage)})
		}
		return volume, nil
	}
	if storage == "" {
		return "", core.ErrParams(map[string]string{"volume": "no storage specified - incomplete volume ID"})
	}
	return storage + ":" + volume, nil
}

// ParseVolRef is PVE::Storage::parse_volname (storage.ParseVolname) with
// the storage as node's /etc/pve has it.
func (s Model) ParseVolRef(node, volid string) (*volRef, error) {
	store, _, _ := strings.Cut(volid, ":")
	st := s.DBOf(node).Storage[store]
	if st == nil {
		return nil, fmt.Errorf("storage '%s' does not exist", store)
	}
	return storage.ParseVolname(st, volid)
}

// storageOf is the storage a volume reference was resolved on.

// FileVolumeLocked finds a file volume in what the node's storage lists.
func (s Model) FileVolumeLocked(node string, st *core.Storage, volid string) (*core.Volume, error) {
	if s.Cfg.StorageContent == nil {
		return nil, nil
	}
	vols, err := s.Cfg.StorageContent(node, core.StorageInfoOf(st))
	if err != nil {
		return nil, err
	}
	for i := range vols {
		if vols[i].VolID == volid {
			return &vols[i], nil
		}
	}
	return nil, nil
}

// VolumeExistsLocked tells whether a volume is on its storage as node sees
// it: a guest image in the simulator, a file in the node's listing.
func (s Model) VolumeExistsLocked(node, volid string) (bool, error) {
	r, err := s.ParseVolRef(node, volid)
	if err != nil {
		return false, err
	}
	if r.Type == "images" || r.Type == "rootdir" {
		_, _, err := s.VolumeLocked(node, volid)
		return err == nil, nil
	}
	v, err := s.FileVolumeLocked(node, r.Section, volid)
	return v != nil, err
}

// CheckVolumeAccess is PVE::Storage::check_volume_access for a caller
// without a VM context (storage.CheckVolumeAccess); who nil is the lab's
// own call.
func CheckVolumeAccess(db *core.ConfigDB, who *core.Principal, r *volRef) error {
	if who == nil {
		return nil
	}
	err := storage.CheckVolumeAccess(func(path string, privs []string, any bool) bool {
		return core.HasPriv(db, who, path, privs, any)
	}, r)
	return StorageAPIError(err)
}
