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

// remoteCheck is what activating a pbs or cifs storage learns from its
// server, reading the credentials the plugin reads (the priv files).
func (s *Sim) remoteCheck(db *ConfigDB, st *Storage) error {
	return storage.CheckRemote(s.PrivStorage(db), st, s.remotes)
}
