package core

import (
	"errors"
	"fmt"
	"strings"

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
			return "", ErrParams(map[string]string{"volume": fmt.Sprintf("unable to parse volume ID '%s'", volume)})
		}
		if storage != "" && sid != storage {
			return "", ErrParams(map[string]string{"volume": fmt.Sprintf("storage ID mismatch (%s != %s)", sid, storage)})
		}
		return volume, nil
	}
	if storage == "" {
		return "", ErrParams(map[string]string{"volume": "no storage specified - incomplete volume ID"})
	}
	return storage + ":" + volume, nil
}

// ParseVolRef is PVE::Storage::parse_volname (storage.ParseVolname) with
// the storage as node's /etc/pve has it.
func (s *Sim) ParseVolRef(node, volid string) (*volRef, error) {
	store, _, _ := strings.Cut(volid, ":")
	st := s.DBOf(node).Storage[store]
	if st == nil {
		return nil, fmt.Errorf("storage '%s' does not exist", store)
	}
	return storage.ParseVolname(st, volid)
}

// storageOf is the storage a volume reference was resolved on.

// FileVolumeLocked finds a file volume in what the node's storage lists.
func (s *Sim) FileVolumeLocked(node string, st *Storage, volid string) (*Volume, error) {
	if s.Cfg.StorageContent == nil {
		return nil, nil
	}
	vols, err := s.Cfg.StorageContent(node, StorageInfoOf(st))
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
func (s *Sim) VolumeExistsLocked(node, volid string) (bool, error) {
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
func CheckVolumeAccess(db *ConfigDB, who *Principal, r *volRef) error {
	if who == nil {
		return nil
	}
	err := storage.CheckVolumeAccess(func(path string, privs []string, any bool) bool {
		return HasPriv(db, who, path, privs, any)
	}, r)
	return StorageAPIError(err)
}

// StorageAPIError is a storage package error as the API answers it: a
// ParamError is a 400 naming its parameter, a DeniedError a 403.
func StorageAPIError(err error) error {
	var perr *storage.ParamError
	if errors.As(err, &perr) {
		return ErrParams(map[string]string{perr.Param: perr.Msg})
	}
	var denied *storage.DeniedError
	if errors.As(err, &denied) {
		return ErrPerm(denied.Detail)
	}
	return err
}
