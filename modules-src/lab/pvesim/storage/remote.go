package storage

import (
	"fmt"
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

// Key is the remote's key among the servers the lab knows: "<type>/<server>".
func (r RemoteStore) Key() string { return r.Type + "/" + r.Server }

// CheckRemote is what activating a pbs or cifs storage learns from its
// server (remotes by Key), reading the credentials the plugin reads (the
// priv files).
func CheckRemote(priv PrivFiles, st *Section, remotes map[string]RemoteStore) error {
	switch st.Type {
	case "pbs":
		return pbsActivate(priv, st, remotes)
	case "cifs":
		return cifsConnection(priv, st, remotes)
	}
	return nil
}

// pbsActivate is PBSPlugin activate_storage: log in with the username
// (root@pam by default) and pbs_get_password's first line of <id>.pw, list
// the datastores, find the storage's. The texts after "error fetching
// datastores - " are reconstructions of PVE::APIClient::LWP's errors (the
// status line of the failed login, LWP's connect error).
func pbsActivate(priv PrivFiles, st *Section, remotes map[string]RemoteStore) error {
	server, port := st.Opt("server"), st.Opt("port")
	if port == "" {
		port = "8007"
	}
	r, ok := remotes["pbs/"+server]
	if !ok {
		return fmt.Errorf("%s: error fetching datastores - 500 Can't connect to %s:%s (Connection refused)", st.ID, server, port)
	}
	user := st.Opt("username")
	if user == "" {
		user = "root@pam"
	}
	password := ""
	if b, err := priv.Read(st.ID + ".pw"); err == nil {
		password, _, _ = strings.Cut(string(b), "\n")
	}
	if user != r.User || password != r.Password {
		return fmt.Errorf("%s: error fetching datastores - 401 Unauthorized", st.ID)
	}
	if !slices.Contains(r.Stores, st.Opt("datastore")) {
		//lint:ignore ST1005 PVE's own message (PBSPlugin.pm activate_storage)
		return fmt.Errorf("%s: Cannot find datastore '%s', check permissions and existence!", st.ID, st.Opt("datastore"))
	}
	return nil
}

// cifsConnection is PVE::Storage::activate_storage's check_connection for
// cifs (CIFSPlugin.pm: smbclient with the credentials file, or as guest): a
// refused login dies with smbclient's output, an unknown share is "not
// online". A server the lab was not told about has nothing behind it and
// activates, as an nfs storage does (reconstruction of smbclient's texts).
func cifsConnection(priv PrivFiles, st *Section, remotes map[string]RemoteStore) error {
	r, ok := remotes["cifs/"+st.Opt("server")]
	if !ok {
		return nil
	}
	fail := func(status string) error {
		return fmt.Errorf("connection check for storage '%s' failed - session setup failed: %s", st.ID, status)
	}
	b, err := priv.Read(st.ID + ".pw")
	if err != nil {
		return fail("NT_STATUS_ACCESS_DENIED") // a guest login
	}
	password := ""
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "password="); ok {
			password = v
		}
	}
	if st.Opt("username") != r.User || password != r.Password {
		return fail("NT_STATUS_LOGON_FAILURE")
	}
	if !slices.Contains(r.Stores, st.Opt("share")) {
		return fmt.Errorf("storage '%s' is not online", st.ID)
	}
	return nil
}
