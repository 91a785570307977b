package core

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

// One volume of a storage, as pve-storage's PVE/API2/Storage/Content.pm
// serves /nodes/{node}/storage/{storage}/content/{volume} (the {volume}
// segment takes the rest of the path, slashes included: pveschema's
// fragmentMounts): GET (info: path, size, used, format, volume_size_info),
// PUT (updateattributes: notes, protected), DELETE (an imgdel task running
// vdisk_free), and POST on the list (create: vdisk_alloc). Guest images are
// the simulator's volumes (volumes.go); file volumes (iso, vztmpl,
// snippets, backup, import) are what Config.StorageContent lists on the
// node, removed through Config.StorageRemove. POST {volume} (copy, "This is
// experimental code - do not use") is not simulated.

// volRef is a volume ID resolved against the request ($real_volume_id).
type volRef = storage.VolRef

// realVolumeID is Content.pm $real_volume_id: "store:name", or a bare name
// on the URL's storage; a volume ID naming another storage is refused.
func realVolumeID(storage, volume string) (string, error) {
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

// parseVolRef is PVE::Storage::parse_volname (storage.ParseVolname) with
// the storage as node's /etc/pve has it.
func (s *Sim) parseVolRef(node, volid string) (*volRef, error) {
	store, _, _ := strings.Cut(volid, ":")
	st := s.DBOf(node).Storage[store]
	if st == nil {
		return nil, fmt.Errorf("storage '%s' does not exist", store)
	}
	return storage.ParseVolname(st, volid)
}

// storageOf is the storage a volume reference was resolved on.

// fileVolumeLocked finds a file volume in what the node's storage lists.
func (s *Sim) fileVolumeLocked(node string, st *Storage, volid string) (*Volume, error) {
	if s.Cfg.StorageContent == nil {
		return nil, nil
	}
	vols, err := s.Cfg.StorageContent(node, storageInfo(st))
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

// volumeExistsLocked tells whether a volume is on its storage as node sees
// it: a guest image in the simulator, a file in the node's listing.
func (s *Sim) volumeExistsLocked(node, volid string) (bool, error) {
	r, err := s.parseVolRef(node, volid)
	if err != nil {
		return false, err
	}
	if r.Type == "images" || r.Type == "rootdir" {
		_, _, err := s.volumeLocked(node, volid)
		return err == nil, nil
	}
	v, err := s.fileVolumeLocked(node, r.Section, volid)
	return v != nil, err
}

// checkVolumeAccess is PVE::Storage::check_volume_access for a caller
// without a VM context (storage.CheckVolumeAccess); who nil is the lab's
// own call.
func checkVolumeAccess(db *ConfigDB, who *Principal, r *volRef) error {
	if who == nil {
		return nil
	}
	err := storage.CheckVolumeAccess(func(path string, privs []string, any bool) bool {
		return HasPriv(db, who, path, privs, any)
	}, r)
	return storageAPIError(err)
}

// storageAPIError is a storage package error as the API answers it: a
// ParamError is a 400 naming its parameter, a DeniedError a 403.
func storageAPIError(err error) error {
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

// contentVolume resolves the request's volume, checks the caller may see it
// and that the storage is usable on the node.
func (s *Sim) contentVolume(rc *Req) (*volRef, error) {
	volid, err := realVolumeID(rc.Str("storage"), rc.Str("volume"))
	if err != nil {
		return nil, err
	}
	r, err := s.parseVolRef(rc.Node, volid)
	if err != nil {
		return nil, err
	}
	if err := checkVolumeAccess(rc.DB(), rc.Who, r); err != nil {
		return nil, err
	}
	return r, nil
}

// GET …/content/{volume}: info. A guest disk's format is the volume's
// (qemu-server writes no format= into the drive unless asked, so clients
// such as bpg's provider read it here).
func (s *Sim) getStorageVolume(rc *Req) (any, error) {
	r, err := s.contentVolume(rc)
	if err != nil {
		return nil, err
	}
	if !r.Section.OnNode(rc.Node) {
		return nil, fmt.Errorf("storage '%s' is not available on node '%s'", r.Store, rc.Node)
	}
	if r.Type == "images" || r.Type == "rootdir" {
		v, _, err := s.volumeLocked(rc.Node, r.VolID)
		if err != nil {
			return nil, r.Missing()
		}
		if v.Size == 0 && v.Format != "subvol" {
			return nil, fmt.Errorf("volume '%s' has size zero", r.VolID)
		}
		used := v.Size // reconstruction: thin storages report less; nothing here writes data
		if v.Format == "subvol" || r.Section.Type == "lvmthin" || r.Section.Type == "lvm" {
			used = 0
		}
		return map[string]any{"path": r.Path(v.Format), "size": v.Size, "used": used, "format": v.Format}, nil
	}
	f, err := s.fileVolumeLocked(rc.Node, r.Section, r.VolID)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, r.Missing()
	}
	if f.Size == 0 {
		return nil, fmt.Errorf("volume '%s' has size zero", r.VolID)
	}
	// parse_volname gives these types the format 'raw', which qemu-img info
	// confirms for an ISO or a text file.
	return map[string]any{"path": r.Path(""), "size": f.Size, "used": f.Size, "format": "raw"}, nil
}

// PUT …/content/{volume}: notes and protected exist for backups only, and
// the lab keeps neither for a backup file (Lab.PutCTBackup's are plain
// files): VolRef.CheckAttributes.
func (s *Sim) putStorageVolume(rc *Req) (any, error) {
	r, err := s.contentVolume(rc)
	if err != nil {
		return nil, err
	}
	return nil, r.CheckAttributes(rc.Has)
}

// DELETE …/content/{volume}: an imgdel task (id "<owner>@<storage>") that
// runs vdisk_free and prints "Removed volume '<volid>'". Nothing checks
// whether a guest still uses the volume — as in PVE.
func (s *Sim) deleteStorageVolume(rc *Req) (any, error) {
	volid, err := realVolumeID(rc.Str("storage"), rc.Str("volume"))
	if err != nil {
		return nil, err
	}
	r, err := s.parseVolRef(rc.Node, volid)
	if err != nil {
		return nil, err
	}
	db := rc.DB()
	if rc.Who != nil && !HasPriv(db, rc.Who, "/storage/"+r.Store, []string{"Datastore.Allocate"}, false) {
		return nil, ErrPerm(fmt.Sprintf("/storage/%s, Datastore.Allocate", r.Store))
	}
	id := r.Store
	if r.Owner > 0 {
		id = fmt.Sprintf("%d@%s", r.Owner, r.Store)
	}
	node := rc.Node
	upid := s.startTaskLocked(rc, node, "imgdel", id, func(t *taskRun) string {
		if !s.Sleep(s.Cfg.Dur(s.Cfg.TaskDuration, DefaultTaskDuration)) {
			return "unexpected status"
		}
		s.Mu.Lock()
		defer s.Mu.Unlock()
		if r.Type == "images" || r.Type == "rootdir" {
			if err := s.freeVolumeLocked(node, volid); err != nil {
				return err.Error()
			}
		} else {
			f, err := s.fileVolumeLocked(node, r.Section, volid)
			if err != nil {
				return err.Error()
			}
			if f == nil {
				// Plugin.pm free_image: unlink of a missing file (reconstruction).
				return fmt.Sprintf("unlink '%s' failed - No such file or directory", r.Path(""))
			}
			if s.Cfg.StorageRemove == nil {
				return "removing file volumes is not simulated without Config.StorageRemove"
			}
			if err := s.Cfg.StorageRemove(node, storageInfo(r.Section), r.Name); err != nil {
				return err.Error()
			}
		}
		t.logf0("Removed volume '%s'", volid)
		s.SaveLocked()
		return ""
	})
	// With `delay` PVE waits up to that long and answers null when the task
	// ended well; the lab always answers the UPID (reconstruction: the
	// schema's optional string lets a client expect both).
	return upid, nil
}

// POST …/content: allocate a disk image (vdisk_alloc with the given name,
// which must be vm-<vmid>-…; the format comes from the name's extension).
func (s *Sim) postStorageContent(rc *Req) (any, error) {
	db := rc.DB()
	id, name, vmid := rc.Str("storage"), rc.Str("filename"), rc.vmid()
	kb, ok := storage.SizeKiB(rc.Str("size"))
	if !ok {
		return nil, ErrParams(map[string]string{"size": fmt.Sprintf("unable to parse size '%s'", rc.Str("size"))})
	}
	format, err := storage.AllocFormat(name, rc.Str("format"))
	if err != nil {
		return nil, storageAPIError(err)
	}
	st := db.Storage[id]
	if st == nil {
		return nil, fmt.Errorf("storage '%s' does not exist", id)
	}
	base, err := storage.AllocBase(vmid, name, format)
	if err != nil {
		return nil, err
	}
	if format == "" {
		format = storage.DefaultFormat(st)
	}
	volid := st.ID + ":" + storage.VolName(st, vmid, base, format)
	if _, exists := s.volumesFor(rc.Node, st)[volid]; exists {
		r := &volRef{VolID: volid, Name: strings.TrimPrefix(volid, st.ID+":"), Section: st, Type: "images"}
		return nil, fmt.Errorf("disk image '%s' already exists", r.Path(format)) // reconstruction
	}
	size := kb * 1024
	if err := s.zfsCreateVolume(rc.Node, st, base, size); err != nil {
		return nil, err
	}
	s.volumesFor(rc.Node, st)[volid] = &GuestVolume{Size: size, Format: format}
	s.SaveLocked()
	return volid, nil
}
