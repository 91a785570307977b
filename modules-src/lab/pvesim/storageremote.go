package pvesim

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// RemoteStore is a server a pbs or cifs storage can reach from the lab's
// nodes: a Proxmox Backup Server with its datastores, or an SMB server with
// its shares, and the one account that may log in. Nothing real stands
// behind it: activation only checks what PVE's plugin would learn from the
// server (login, datastore or share exists).
type RemoteStore struct {
	Type     string   `json:"type"`     // "pbs" or "cifs"
	Server   string   `json:"server"`   // as the storage's `server` option names it
	User     string   `json:"user"`     // PBS auth id (root@pam, or a token id user@realm!name); SMB user
	Password string   `json:"password"` // password or token secret
	Stores   []string `json:"stores"`   // PBS datastores; SMB shares
}

// AddRemoteStore makes a PBS or SMB server reachable (replacing one of the
// same type and server).
func (s *Sim) AddRemoteStore(r RemoteStore) error {
	if r.Type != "pbs" && r.Type != "cifs" {
		return &BadRequestError{Msg: fmt.Sprintf("remote store type %q: pbs or cifs", r.Type)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.remotes == nil {
		s.remotes = map[string]RemoteStore{}
	}
	s.remotes[r.Type+"/"+r.Server] = r
	return nil
}

// remoteCheck is what activating a pbs or cifs storage learns from its
// server, reading the credentials the plugin reads (the priv files).
func (s *Sim) remoteCheck(db *ConfigDB, st *Storage) error {
	switch st.Type {
	case "pbs":
		return s.pbsActivate(db, st)
	case "cifs":
		return s.cifsConnection(db, st)
	}
	return nil
}

// pbsActivate is PBSPlugin activate_storage: log in with the username
// (root@pam by default) and pbs_get_password's first line of <id>.pw, list
// the datastores, find the storage's. The texts after "error fetching
// datastores - " are reconstructions of PVE::APIClient::LWP's errors (the
// status line of the failed login, LWP's connect error).
func (s *Sim) pbsActivate(db *ConfigDB, st *Storage) error {
	server, port := st.opt("server"), st.opt("port")
	if port == "" {
		port = "8007"
	}
	r, ok := s.remotes["pbs/"+server]
	if !ok {
		return fmt.Errorf("%s: error fetching datastores - 500 Can't connect to %s:%s (Connection refused)", st.ID, server, port)
	}
	user := st.opt("username")
	if user == "" {
		user = "root@pam"
	}
	password := ""
	if b, err := os.ReadFile(s.privStorageFile(db, st.ID+".pw")); err == nil {
		password, _, _ = strings.Cut(string(b), "\n")
	}
	if user != r.User || password != r.Password {
		return fmt.Errorf("%s: error fetching datastores - 401 Unauthorized", st.ID)
	}
	if !slices.Contains(r.Stores, st.opt("datastore")) {
		//lint:ignore ST1005 PVE's own message (PBSPlugin.pm activate_storage)
		return fmt.Errorf("%s: Cannot find datastore '%s', check permissions and existence!", st.ID, st.opt("datastore"))
	}
	return nil
}

// cifsConnection is PVE::Storage::activate_storage's check_connection for
// cifs (CIFSPlugin.pm: smbclient with the credentials file, or as guest): a
// refused login dies with smbclient's output, an unknown share is "not
// online". A server the lab was not told about has nothing behind it and
// activates, as an nfs storage does (reconstruction of smbclient's texts).
func (s *Sim) cifsConnection(db *ConfigDB, st *Storage) error {
	r, ok := s.remotes["cifs/"+st.opt("server")]
	if !ok {
		return nil
	}
	fail := func(status string) error {
		return fmt.Errorf("connection check for storage '%s' failed - session setup failed: %s", st.ID, status)
	}
	b, err := os.ReadFile(s.privStorageFile(db, st.ID+".pw"))
	if err != nil {
		return fail("NT_STATUS_ACCESS_DENIED") // a guest login
	}
	password := ""
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "password="); ok {
			password = v
		}
	}
	if st.opt("username") != r.User || password != r.Password {
		return fail("NT_STATUS_LOGON_FAILURE")
	}
	if !slices.Contains(r.Stores, st.opt("share")) {
		return fmt.Errorf("storage '%s' is not online", st.ID)
	}
	return nil
}
