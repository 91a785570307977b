package volumes

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/etcpvefs"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

// privStorage is db's /etc/pve/priv/storage, where pve-storage's plugin
// hooks keep a storage's sensitive properties (storage.PrivFiles).
type privStorage struct{ etcPve string }

func (s Model) PrivStorage(db *core.ConfigDB) privStorage {
	return privStorage{s.EtcPveDirOfDB(db.ID)}
}

var _ storage.PrivFiles = privStorage{}

func (p privStorage) path(name string) string {
	return filepath.Join(p.etcPve, "priv", "storage", name)
}

func (p privStorage) Read(name string) ([]byte, error) { return os.ReadFile(p.path(name)) }

func (p privStorage) Write(name, content string) error {
	return etcpvefs.WriteFile(p.etcPve, "priv/storage/"+name, []byte(content))
}

func (p privStorage) Remove(name string) error {
	if err := os.Remove(p.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (p privStorage) Rename(from, to string) error { return os.Rename(p.path(from), p.path(to)) }
