package core

import (
	"crypto/rsa"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/ticket"
)

// Hooks into core's internals for the lab's own tests, which run the whole
// simulator (pvesim.New, every backend) and so live outside core: they reach
// inside where a test needs a state no request can make (a held lock, a
// backdated key, a task no endpoint starts). The simulator never calls them.

func (s *Sim) TakeFault(node, method, p string) *Fault { return s.faults.Take(node, method, p) }

func (s *Sim) Authenticate(db *ConfigDB, r *http.Request) (*Principal, string) {
	return s.authenticate(db, r)
}

func (p *Principal) TaskUser() string { return p.taskUser() }

func (s *Sim) ParseStorageCfg(text string) (map[string]*Storage, []string) {
	return storage.Parse(text, s.StorageCreateSchema())
}

// StartSimpleTaskLocked starts a task whose worker logs lines and ends OK.
func (s *Sim) StartSimpleTaskLocked(rc *Req, node, typ, id string, lines ...string) string {
	return s.StartTaskLocked(rc, node, typ, id, s.simpleTask(lines...))
}

func (s *Sim) MakeCSRFLocked(db *ConfigDB, user string, now time.Time) (string, error) {
	return s.makeCSRFLocked(db, user, now)
}

// AuthKey is the node's /etc/pve/priv/authkey.key.
func (s *Sim) AuthKey(node string) (*rsa.PrivateKey, error) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	kf, err := s.readKeyLocked(s.DBOf(node), ticket.PrivRel)
	if err != nil {
		return nil, err
	}
	return kf.Priv, nil
}

// Backdate makes the node's /etc/pve file rel age old.
func (s *Sim) Backdate(node, rel string, age time.Duration) error {
	at := time.Now().Add(-age)
	return os.Chtimes(filepath.Join(s.EtcPveDir(node), rel), at, at)
}
