// A storage's content, as pve-storage's PVE/API2/Storage/Content.pm
// serves /nodes/{node}/storage/{storage}/content[/{volume}] (the {volume}
// segment takes the rest of the path, slashes included: pveschema's
// fragmentMounts): GET (info: path, size, used, format, volume_size_info),
// PUT (updateattributes: notes, protected), DELETE (an imgdel task running
// vdisk_free), and POST on the list (create: vdisk_alloc). Guest images are
// the volume model's (pvesim/volumes); file volumes (iso, vztmpl, snippets, backup, import) are
// what Config.StorageContent lists on the node, removed through
// Config.StorageRemove. POST {volume} (copy, "This is experimental code -
// do not use") is not simulated.
package storagesim

import (
	"fmt"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/volumes"
)

// contentVolume resolves the request's volume, checks the caller may see it
// and that the storage is usable on the node.
func (s *backend) contentVolume(rc *core.Req) (*storage.VolRef, error) {
	volid, err := volumes.RealVolumeID(rc.Str("storage"), rc.Str("volume"))
	if err != nil {
		return nil, err
	}
	r, err := s.ParseVolRef(rc.Node, volid)
	if err != nil {
		return nil, err
	}
	if err := volumes.CheckVolumeAccess(rc.DB(), rc.Who, r); err != nil {
		return nil, err
	}
	return r, nil
}

// GET …/content/{volume}: info. A guest disk's format is the volume's
// (qemu-server writes no format= into the drive unless asked, so clients
// such as bpg's provider read it here).
func (s *backend) getStorageVolume(rc *core.Req) (any, error) {
	r, err := s.contentVolume(rc)
	if err != nil {
		return nil, err
	}
	if !r.Section.OnNode(rc.Node) {
		return nil, fmt.Errorf("storage '%s' is not available on node '%s'", r.Store, rc.Node)
	}
	if r.Type == "images" || r.Type == "rootdir" {
		v, _, err := s.VolumeLocked(rc.Node, r.VolID)
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
	f, err := s.FileVolumeLocked(rc.Node, r.Section, r.VolID)
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
func (s *backend) putStorageVolume(rc *core.Req) (any, error) {
	r, err := s.contentVolume(rc)
	if err != nil {
		return nil, err
	}
	return nil, r.CheckAttributes(rc.Has)
}

// DELETE …/content/{volume}: an imgdel task (id "<owner>@<storage>") that
// runs vdisk_free and prints "Removed volume '<volid>'". Nothing checks
// whether a guest still uses the volume — as in PVE.
func (s *backend) deleteStorageVolume(rc *core.Req) (any, error) {
	volid, err := volumes.RealVolumeID(rc.Str("storage"), rc.Str("volume"))
	if err != nil {
		return nil, err
	}
	r, err := s.ParseVolRef(rc.Node, volid)
	if err != nil {
		return nil, err
	}
	db := rc.DB()
	if rc.Who != nil && !core.HasPriv(db, rc.Who, "/storage/"+r.Store, []string{"Datastore.Allocate"}, false) {
		return nil, core.ErrPerm(fmt.Sprintf("/storage/%s, Datastore.Allocate", r.Store))
	}
	id := r.Store
	if r.Owner > 0 {
		id = fmt.Sprintf("%d@%s", r.Owner, r.Store)
	}
	node := rc.Node
	upid := s.StartTaskLocked(rc, node, "imgdel", id, func(t *core.TaskRun) string {
		if !s.Sleep(s.Cfg.Dur(s.Cfg.TaskDuration, core.DefaultTaskDuration)) {
			return "unexpected status"
		}
		s.Mu.Lock()
		defer s.Mu.Unlock()
		if r.Type == "images" || r.Type == "rootdir" {
			if err := s.FreeVolumeLocked(node, volid); err != nil {
				return err.Error()
			}
		} else {
			f, err := s.FileVolumeLocked(node, r.Section, volid)
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
			if err := s.Cfg.StorageRemove(node, core.StorageInfoOf(r.Section), r.Name); err != nil {
				return err.Error()
			}
		}
		t.LogfLocked("Removed volume '%s'", volid)
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
func (s *backend) postStorageContent(rc *core.Req) (any, error) {
	db := rc.DB()
	id, name, vmid := rc.Str("storage"), rc.Str("filename"), rc.VMID()
	kb, ok := storage.SizeKiB(rc.Str("size"))
	if !ok {
		return nil, core.ErrParams(map[string]string{"size": fmt.Sprintf("unable to parse size '%s'", rc.Str("size"))})
	}
	format, err := storage.AllocFormat(name, rc.Str("format"))
	if err != nil {
		return nil, volumes.StorageAPIError(err)
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
	if _, exists := s.VolumesFor(rc.Node, st)[volid]; exists {
		r := &storage.VolRef{VolID: volid, Name: strings.TrimPrefix(volid, st.ID+":"), Section: st, Type: "images"}
		return nil, fmt.Errorf("disk image '%s' already exists", r.Path(format)) // reconstruction
	}
	size := kb * 1024
	if err := s.ZFSCreateVolume(rc.Node, st, base, size); err != nil {
		return nil, err
	}
	s.VolumesFor(rc.Node, st)[volid] = &core.GuestVolume{Size: size, Format: format}
	s.SaveLocked()
	return volid, nil
}
