package core

import (
	"fmt"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

// RemoteStore is a PBS or SMB server the lab's pbs and cifs storages can
// reach (storage.RemoteStore).
type RemoteStore = storage.RemoteStore

// AddRemoteStore makes a PBS or SMB server reachable (replacing one of the
// same type and server).
func (s *Sim) AddRemoteStore(r RemoteStore) error {
	if r.Type != "pbs" && r.Type != "cifs" {
		return &BadRequestError{Msg: fmt.Sprintf("remote store type %q: pbs or cifs", r.Type)}
	}
	s.Mu.Lock()
	defer s.Mu.Unlock()
	if s.remotes == nil {
		s.remotes = map[string]RemoteStore{}
	}
	s.remotes[r.Key()] = r
	return nil
}

// RemoteStoresLocked are the PBS and SMB servers the lab offers, by
// storage.RemoteStore's Key (what activating a pbs or cifs storage asks,
// pvesim/volumes).
func (s *Sim) RemoteStoresLocked() map[string]RemoteStore { return s.remotes }
