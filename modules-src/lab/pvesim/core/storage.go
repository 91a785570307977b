package core

import (
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

// StorageCreateSchema is POST /storage's method, whose parameters type
// storage.cfg's values.
func (s *Sim) StorageCreateSchema() *pveschema.Method { return s.schema.Method("POST", "/storage") }

// GuestVolume is one guest disk on a storage (storage.GuestVolume). Local
// storages keep their volumes on the node (Node.Volumes), shared ones in
// the cluster (ConfigDB.SharedVolumes), so a volume on local-lvm of pve01
// is not on pve02's.
type GuestVolume = storage.GuestVolume
