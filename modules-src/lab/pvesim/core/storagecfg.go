package core

import "github.com/gopve/proxmox/modules-src/lab/pvesim/storage"

// renderStorageCfg is db's storage.cfg (storage.Render), its sections in
// the file's order.
func renderStorageCfg(db *ConfigDB) string {
	ids := db.fileStorageIDs()
	sections := make([]*storage.Section, len(ids))
	for i, id := range ids {
		sections[i] = db.Storage[id]
	}
	return storage.Render(sections)
}

// parseStorageCfg reads storage.cfg (storage.Parse): the sections by ID and
// their order in the file.
func (s *Sim) parseStorageCfg(text string) (map[string]*Storage, []string) {
	parsed, order := storage.Parse(text, s.StorageCreateSchema())
	out := make(map[string]*Storage, len(parsed))
	for id, sec := range parsed {
		out[id] = sec
	}
	return out, order
}
