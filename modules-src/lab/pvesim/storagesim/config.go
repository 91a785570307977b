// Package storagesim simulates PVE's storage endpoints: storage.cfg's
// entries (pve-storage PVE/API2/Storage/Config.pm: /storage), a node's
// storages and their status (Status.pm: /nodes/{node}/storage and
// .../status), and a storage's content (Content.pm: the list, volume
// info, attributes, allocation and deletion), and the upload (Status.pm's
// upload, with the multipart body as pve-http-server's AnyEvent.pm
// file_upload_multipart receives it; upload.go), the wait for storage.cfg's
// cfs lock and a create slowed inside it (storagecfglock.go: Storage.pm
// lock_storage_config), and each node's pvestatd storage cycle
// (pvestatd.go: pve-manager PVE/Service/pvestatd.pm, a loop registered
// with OnStart, and Pvestatd.StatdCycle, which pvesim.Sim embeds). The
// rules (storage.cfg's format and checks, volume names, access) are
// pvesim/storage's; the volumes themselves and a storage's activation are
// the volume model's (pvesim/volumes), where guests allocate and free them
// and the cluster's views read them; storage.cfg's file and pveproxy's part
// of an upload before its body stay in core.
package storagesim

import (
	"fmt"
	"maps"
	"slices"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/volumes"
)

// backend serves the storage endpoints on the core's state.
type backend struct {
	volumes.Model
	uploads   map[string]*upload // received files by tmpfilename, until their API call takes them (upload.go), under Mu
	uploadSeq int                // get_upload_filename's $tmpfile_seq_no
}

// Register adds the storage endpoints to s, and the upload's reception
// to its HTTP layer.
func Register(s *core.Sim) {
	b := &backend{Model: volumes.Model{Sim: s}, uploads: map[string]*upload{}}
	s.Handle(b.routes())
	s.Handle(b.uploadRoutes())
	s.HandleUpload(b.receiveUpload)
	s.OnStart(NewPvestatd(s).loop)
}

// storageView is the GET shape: options plus storage, type, digest, with
// numbers for integer/boolean options (SectionConfig).
func storageView(st *core.Storage, digest string) map[string]any {
	out := map[string]any{"storage": st.ID, "type": st.Type}
	for k, v := range st.Options {
		out[k] = v
	}
	if digest != "" {
		out["digest"] = digest
	}
	return out
}

func (s *backend) getStorageList(rc *core.Req) (any, error) {
	db := rc.DB()
	digest := core.DigestOf(db.Storage)
	out := []map[string]any{}
	for _, id := range db.SortedStorageIDs() {
		st := db.Storage[id]
		if rc.Has("type") && rc.Str("type") != st.Type {
			continue
		}
		// Filtered, not refused, without audit rights (K19).
		if !core.HasPriv(db, rc.Who, "/storage/"+id, []string{"Datastore.Audit", "Datastore.AllocateSpace"}, true) {
			continue
		}
		out = append(out, storageView(st, digest))
	}
	return out, nil
}

func (s *backend) getStorage(rc *core.Req) (any, error) {
	db := rc.DB()
	st := db.Storage[rc.Str("storage")]
	if st == nil {
		return nil, fmt.Errorf("storage '%s' does not exist", rc.Str("storage"))
	}
	return storageView(st, core.DigestOf(db.Storage)), nil
}

// POST /storage: validated per type (S2), written to the shared storage.cfg
// of the node's /etc/pve (S1); answers {storage, type}.
func (s *backend) postStorage(rc *core.Req) (any, error) {
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
	st := (*core.Storage)(storage.NewSection(id, typ, rc.Params, s.StorageCreateSchema()))
	returned, err := storage.OnAdd(s.PrivStorage(db), st, sensitive)
	if err != nil {
		return nil, fmt.Errorf("create storage failed: %v", err)
	}
	// Activation on the local node detects problems early; on failure the
	// storage is not added and on_delete_hook removes what on_add_hook
	// wrote (Config.pm create).
	if st.OnNode(rc.Node) && !st.Disabled() {
		if err := s.ActivateOn(rc.Node, st); err != nil {
			_ = storage.OnDelete(s.PrivStorage(db), st)
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
func (s *backend) putStorage(rc *core.Req) (any, error) {
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
	if d := rc.Str("digest"); d != "" && d != core.DigestOf(db.Storage) {
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
	update, deletes, sensitive, err := storage.CheckUpdate(s.Cfg.Version, st, rc.Params, s.StorageCreateSchema())
	if err != nil {
		return nil, fmt.Errorf("update storage failed: %v", err)
	}
	returned, err := storage.OnUpdate(s.PrivStorage(db), st, update, sensitive)
	if err != nil {
		return nil, fmt.Errorf("update storage failed: %v", err)
	}
	st.Apply(update, deletes)
	db.Serial++
	s.SaveLocked()
	return storageAnswer(id, st.Type, returned), nil
}

func (s *backend) deleteStorage(rc *core.Req) (any, error) {
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
	if err := storage.OnDelete(s.PrivStorage(db), db.Storage[id]); err != nil {
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

// routes are storage.cfg's endpoints and a storage's content.
func (s *backend) routes() map[string]core.Handler {
	return map[string]core.Handler{
		"GET /nodes/{node}/storage":                               s.getNodeStorage,
		"GET /nodes/{node}/storage/{storage}/status":              s.getNodeStorageStatus,
		"GET /nodes/{node}/storage/{storage}/content":             s.getStorageContent,
		"POST /nodes/{node}/storage/{storage}/content":            s.postStorageContent,
		"GET /nodes/{node}/storage/{storage}/content/{volume}":    s.getStorageVolume,
		"PUT /nodes/{node}/storage/{storage}/content/{volume}":    s.putStorageVolume,
		"DELETE /nodes/{node}/storage/{storage}/content/{volume}": s.deleteStorageVolume,
		"GET /storage":              s.getStorageList,
		"POST /storage":             s.postStorage,
		"GET /storage/{storage}":    s.getStorage,
		"PUT /storage/{storage}":    s.putStorage,
		"DELETE /storage/{storage}": s.deleteStorage,
	}
}
