package core

import (
	"errors"
	"fmt"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

// Storage is one storage.cfg section (storage.Section, whose JSON
// state.json holds); its rules are storage.Section methods.
type Storage = storage.Section

// StorageInfo is what Config.StorageCheck gets to decide activation.
type StorageInfo struct {
	ID      string
	Type    string
	Options map[string]string // pool, path, vgname…, as strings
}

// StorageInfoOf is st as the lab's Config hooks see it.
func StorageInfoOf(st *Storage) StorageInfo {
	opts := make(map[string]string, len(st.Options))
	for k, v := range st.Options {
		opts[k] = pvecommon.ParamString(v)
	}
	return StorageInfo{ID: st.ID, Type: st.Type, Options: opts}
}

// StorageUsage is a storage's size on a node, in bytes.
type StorageUsage struct{ Total, Used, Avail int64 }

// Volume is one entry of GET /nodes/{node}/storage/{storage}/content.
type Volume struct {
	VolID   string // "local:iso/debian.iso"
	Content string // iso, vztmpl, backup, snippets, import, images, rootdir
	Format  string // iso, tzst, snippet, vma.zst, qcow2…
	Size    int64
	CTime   int64
	VMID    int    // 0: none
	Subtype string // backups: qemu, lxc or unknown
}

func (v Volume) View() map[string]any {
	e := map[string]any{"volid": v.VolID, "content": v.Content, "format": v.Format, "size": v.Size, "ctime": v.CTime}
	if v.VMID != 0 {
		e["vmid"] = v.VMID
	}
	if v.Subtype != "" {
		e["subtype"] = v.Subtype
	}
	return e
}

// NodeVersion is what a node's installed packages say.
type NodeVersion struct {
	Version string // pve-manager version: "9.2.5"
	RepoID  string // the commit pveversion prints
	Kernel  string // running kernel: "6.14.8-2-pve"
}

// ActivateOn is activate_storage on node (Config.StorageActivate, else the
// read-only check).
func (s *Sim) ActivateOn(node string, st *Storage) error {
	if st.Disabled() {
		return fmt.Errorf("storage '%s' is disabled", st.ID)
	}
	if err := s.remoteCheck(s.DBOf(node), st); err != nil {
		return err
	}
	if s.Cfg.StorageActivate != nil {
		return s.Cfg.StorageActivate(node, StorageInfoOf(st))
	}
	return s.ActiveOn(node, st)
}

// ActiveOn tells whether the storage activates on node (Config.StorageCheck).
func (s *Sim) ActiveOn(node string, st *Storage) error {
	if st.Disabled() {
		return fmt.Errorf("storage '%s' is disabled", st.ID)
	}
	if err := s.remoteCheck(s.DBOf(node), st); err != nil {
		return err
	}
	if s.Cfg.StorageCheck == nil {
		return nil
	}
	return s.Cfg.StorageCheck(node, StorageInfoOf(st))
}

// StorageCreateSchema is POST /storage's method, whose parameters type
// storage.cfg's values.
func (s *Sim) StorageCreateSchema() *pveschema.Method { return s.schema.Method("POST", "/storage") }

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

// GuestVolume is one guest disk on a storage (storage.GuestVolume). Local
// storages keep their volumes on the node (Node.Volumes), shared ones in
// the cluster (ConfigDB.SharedVolumes), so a volume on local-lvm of pve01
// is not on pve02's.
type GuestVolume = storage.GuestVolume
