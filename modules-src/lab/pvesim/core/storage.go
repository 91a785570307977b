package core

import (
	"fmt"
	"maps"
	"slices"

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

// storageInfo is st as the lab's Config hooks see it.
func storageInfo(st *Storage) StorageInfo {
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

func (v Volume) view() map[string]any {
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

// activateOn is activate_storage on node (Config.StorageActivate, else the
// read-only check).
func (s *Sim) activateOn(node string, st *Storage) error {
	if st.Disabled() {
		return fmt.Errorf("storage '%s' is disabled", st.ID)
	}
	if err := s.remoteCheck(s.DBOf(node), st); err != nil {
		return err
	}
	if s.Cfg.StorageActivate != nil {
		return s.Cfg.StorageActivate(node, storageInfo(st))
	}
	return s.activeOn(node, st)
}

// activeOn tells whether the storage activates on node (Config.StorageCheck).
func (s *Sim) activeOn(node string, st *Storage) error {
	if st.Disabled() {
		return fmt.Errorf("storage '%s' is disabled", st.ID)
	}
	if err := s.remoteCheck(s.DBOf(node), st); err != nil {
		return err
	}
	if s.Cfg.StorageCheck == nil {
		return nil
	}
	return s.Cfg.StorageCheck(node, storageInfo(st))
}

// storageView is the GET shape: options plus storage, type, digest, with
// numbers for integer/boolean options (SectionConfig).
func storageView(st *Storage, digest string) map[string]any {
	out := map[string]any{"storage": st.ID, "type": st.Type}
	for k, v := range st.Options {
		out[k] = v
	}
	if digest != "" {
		out["digest"] = digest
	}
	return out
}

// storageCreateSchema is POST /storage's method, whose parameters type
// storage.cfg's values.
func (s *Sim) storageCreateSchema() *pveschema.Method { return s.schema.Method("POST", "/storage") }

func (s *Sim) getStorageList(rc *Req) (any, error) {
	db := rc.DB()
	digest := digestOf(db.Storage)
	out := []map[string]any{}
	for _, id := range db.sortedStorageIDs() {
		st := db.Storage[id]
		if rc.Has("type") && rc.Str("type") != st.Type {
			continue
		}
		// Filtered, not refused, without audit rights (K19).
		if !HasPriv(db, rc.Who, "/storage/"+id, []string{"Datastore.Audit", "Datastore.AllocateSpace"}, true) {
			continue
		}
		out = append(out, storageView(st, digest))
	}
	return out, nil
}

func (s *Sim) getStorage(rc *Req) (any, error) {
	db := rc.DB()
	st := db.Storage[rc.Str("storage")]
	if st == nil {
		return nil, fmt.Errorf("storage '%s' does not exist", rc.Str("storage"))
	}
	return storageView(st, digestOf(db.Storage)), nil
}

// POST /storage: validated per type (S2), written to the shared storage.cfg
// of the node's /etc/pve (S1); answers {storage, type}.
func (s *Sim) postStorage(rc *Req) (any, error) {
	db := rc.DB()
	id, typ := rc.Str("storage"), rc.Str("type")
	// check_config runs before the lock, so its errors are not wrapped;
	// the request log keeps what was sent, redacted.
	rc.Params = maps.Clone(rc.Params)
	sensitive, err := storage.CheckCreate(s.Cfg.Version, id, typ, rc.Params)
	if err != nil {
		return nil, err
	}
	if aerr := s.CfsWriteLocked(db, "storage.cfg", "create storage failed"); aerr != nil {
		return nil, aerr
	}
	if err := s.storageCfgFreeLocked(db, "create storage failed"); err != nil {
		return nil, err
	}
	if db.Storage[id] != nil {
		return nil, fmt.Errorf("create storage failed: storage ID '%s' already defined", id)
	}
	release, alive := s.slowInStorageCfgLock(db, rc)
	defer release()
	if !alive {
		return nil, fmt.Errorf("create storage failed: interrupted by signal")
	}
	st := (*Storage)(storage.NewSection(id, typ, rc.Params, s.storageCreateSchema()))
	returned, err := storage.OnAdd(s.privStorage(db), st, sensitive)
	if err != nil {
		return nil, fmt.Errorf("create storage failed: %v", err)
	}
	// Activation on the local node detects problems early; on failure the
	// storage is not added and on_delete_hook removes what on_add_hook
	// wrote (Config.pm create).
	if st.OnNode(rc.Node) && !st.Disabled() {
		if err := s.activateOn(rc.Node, st); err != nil {
			_ = storage.OnDelete(s.privStorage(db), st)
			return nil, fmt.Errorf("create storage failed: %v", err)
		}
	}
	db.Storage[id] = st
	db.StorageOrder = append(db.StorageOrder, id)
	db.Serial++
	s.SaveLocked()
	return storageAnswer(id, typ, returned), nil
}

// storageAnswer is create's and update's answer: `config` only when the
// plugin's hook returned something (the encryption key of a pbs storage).
func storageAnswer(id, typ string, config map[string]any) map[string]any {
	out := map[string]any{"storage": id, "type": typ}
	if len(config) > 0 {
		out["config"] = config
	}
	return out
}

// PUT /storage/{storage}: fixed keys refused even with the same value.
func (s *Sim) putStorage(rc *Req) (any, error) {
	db := rc.DB()
	if aerr := s.CfsWriteLocked(db, "storage.cfg", "update storage failed"); aerr != nil {
		return nil, aerr
	}
	if err := s.storageCfgFreeLocked(db, "update storage failed"); err != nil {
		return nil, err
	}
	id := rc.Str("storage")
	st := db.Storage[id]
	if st == nil {
		return nil, fmt.Errorf("update storage failed: storage '%s' does not exist", id)
	}
	if d := rc.Str("digest"); d != "" && d != digestOf(db.Storage) {
		//lint:ignore ST1005 PVE's own message, as the storage API returns it
		return nil, fmt.Errorf("update storage failed: detected modified configuration - file changed by other user? Try again.")
	}
	// The update hook (a PBS login, a CIFS password check) runs inside the
	// lock, after the digest check, and storage.cfg is written at the end
	// (pve-storage API2/Storage/Config.pm update); a slow-locked fault
	// stretches it, so a client's answer can be lost before the write.
	release, alive := s.slowInStorageCfgLock(db, rc)
	defer release()
	if !alive {
		return nil, fmt.Errorf("update storage failed: interrupted by signal")
	}
	if st = db.Storage[id]; st == nil {
		return nil, fmt.Errorf("update storage failed: storage '%s' does not exist", id)
	}
	rc.Params = maps.Clone(rc.Params) // the request log keeps what was sent, redacted
	update, deletes, sensitive, err := storage.CheckUpdate(s.Cfg.Version, st, rc.Params, s.storageCreateSchema())
	if err != nil {
		return nil, fmt.Errorf("update storage failed: %v", err)
	}
	returned, err := storage.OnUpdate(s.privStorage(db), st, update, sensitive)
	if err != nil {
		return nil, fmt.Errorf("update storage failed: %v", err)
	}
	st.Apply(update, deletes)
	db.Serial++
	s.SaveLocked()
	return storageAnswer(id, st.Type, returned), nil
}

func (s *Sim) deleteStorage(rc *Req) (any, error) {
	db := rc.DB()
	if aerr := s.CfsWriteLocked(db, "storage.cfg", "delete storage failed"); aerr != nil {
		return nil, aerr
	}
	if err := s.storageCfgFreeLocked(db, "delete storage failed"); err != nil {
		return nil, err
	}
	id := rc.Str("storage")
	if db.Storage[id] == nil {
		return nil, fmt.Errorf("delete storage failed: storage '%s' does not exist", id)
	}
	if err := storage.OnDelete(s.privStorage(db), db.Storage[id]); err != nil {
		return nil, fmt.Errorf("delete storage failed: %v", err)
	}
	delete(db.Storage, id)
	// PVE::AccessControl::remove_storage_access: its ACL entries and pool
	// memberships go with it, so an emptied pool can be deleted.
	for _, p := range db.Pools {
		p.Members = slices.DeleteFunc(p.Members, func(x string) bool { return x == "storage/"+id })
	}
	acl := db.Access.ACL[:0]
	for _, a := range db.Access.ACL {
		if a.Path != "/storage/"+id {
			acl = append(acl, a)
		}
	}
	db.Access.ACL = acl
	db.Serial++
	s.SaveLocked()
	return nil, nil
}

// storageRoutes are storage.cfg's endpoints and a storage's content.
func (s *Sim) storageRoutes() map[string]Handler {
	return map[string]Handler{
		"POST /nodes/{node}/storage/{storage}/content":            s.postStorageContent,
		"GET /nodes/{node}/storage/{storage}/content/{volume}":    s.getStorageVolume,
		"PUT /nodes/{node}/storage/{storage}/content/{volume}":    s.putStorageVolume,
		"DELETE /nodes/{node}/storage/{storage}/content/{volume}": s.deleteStorageVolume,
		"POST " + uploadMethodPath:                                s.postStorageUpload,
		"GET /storage":                                            s.getStorageList,
		"POST /storage":                                           s.postStorage,
		"GET /storage/{storage}":                                  s.getStorage,
		"PUT /storage/{storage}":                                  s.putStorage,
		"DELETE /storage/{storage}":                               s.deleteStorage,
	}
}
