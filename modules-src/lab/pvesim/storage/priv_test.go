package storage

import (
	"encoding/base64"
	"errors"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"
)

// memPriv is /etc/pve/priv/storage in memory.
type memPriv map[string]string

func (m memPriv) Read(name string) ([]byte, error) {
	v, ok := m[name]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return []byte(v), nil
}
func (m memPriv) Write(name, content string) error { m[name] = content; return nil }
func (m memPriv) Remove(name string) error         { delete(m, name); return nil }
func (m memPriv) Rename(from, to string) error {
	v, ok := m[from]
	if !ok {
		return fs.ErrNotExist
	}
	m[to] = v
	delete(m, from)
	return nil
}

func str(s string) *string { return &s }

// PBSPlugin's hooks: the password and the key go to priv files, the
// section keeps the key's fingerprint and "master-pubkey 1"; an autogen key
// keeps the old one as .old and is the answer's config; on_delete_hook
// removes every file.
func TestPBSHooks(t *testing.T) {
	priv := memPriv{}
	st := &Section{ID: "pbs1", Type: "pbs", Options: map[string]any{"server": "192.0.2.50", "datastore": "store1"}}
	key := `{"kdf":null,"data":"abc","fingerprint":"aa:bb"}`
	pem := "-----BEGIN PUBLIC KEY-----\nx\n-----END PUBLIC KEY-----"
	cfg, err := OnAdd(priv, st, Sensitive{"password": str("pw"), "encryption-key": str(key),
		"master-pubkey": str(base64.StdEncoding.EncodeToString([]byte(pem)))})
	if err != nil {
		t.Fatal(err)
	}
	if priv["pbs1.pw"] != "pw\n" || priv["pbs1.enc"] != key+"\n" || priv["pbs1.master.pem"] != pem+"\n" {
		t.Errorf("priv files %v", priv)
	}
	if st.Options["encryption-key"] != "aa:bb" || st.Options["master-pubkey"] != 1 || cfg["encryption-key"] != key {
		t.Errorf("section %v, config %v", st.Options, cfg)
	}
	update := map[string]any{}
	cfg, err = OnUpdate(priv, st, update, Sensitive{"encryption-key": str("autogen")})
	if err != nil {
		t.Fatal(err)
	}
	if priv["pbs1.enc.old"] != key+"\n" || priv["pbs1.enc"] == key+"\n" || cfg["encryption-key"] != priv["pbs1.enc"] {
		t.Errorf("autogen: files %v, config %v", slices.Sorted(maps.Keys(priv)), cfg)
	}
	if fp, _ := update["encryption-key"].(string); len(strings.Split(fp, ":")) != 32 {
		t.Errorf("autogen fingerprint %v", update["encryption-key"])
	}
	if _, err := OnUpdate(priv, st, map[string]any{}, Sensitive{"encryption-key": str("not json")}); err == nil {
		t.Errorf("a key that is not JSON was taken")
	}
	if err := OnDelete(priv, st); err != nil || len(priv) != 1 || priv["pbs1.enc.old"] == "" {
		t.Errorf("after on_delete_hook: %v %v", err, priv)
	}
	_, err = OnAdd(memPriv{}, &Section{ID: "p2", Type: "pbs", Options: map[string]any{}}, Sensitive{"master-pubkey": str("eA==")})
	if err == nil || err.Error() != "'master-pubkey' can only be used together with 'encryption-key'" {
		t.Errorf("master-pubkey alone: %v", err)
	}
}

// A PBS activation logs in with the username and <id>.pw and finds the
// datastore; an SMB one with the credentials file and finds the share.
func TestCheckRemote(t *testing.T) {
	remotes := map[string]RemoteStore{}
	for _, r := range []RemoteStore{
		{Type: "pbs", Server: "192.0.2.50", User: "backup@pbs", Password: "pw", Stores: []string{"store1"}},
		{Type: "cifs", Server: "192.0.2.60", User: "smb", Password: "pw", Stores: []string{"share"}},
	} {
		remotes[r.Key()] = r
	}
	pbs := &Section{ID: "b", Type: "pbs", Options: map[string]any{"server": "192.0.2.50", "datastore": "store1", "username": "backup@pbs"}}
	priv := memPriv{}
	if err := CheckRemote(priv, pbs, remotes); err == nil || err.Error() != "b: error fetching datastores - 401 Unauthorized" {
		t.Errorf("pbs without password: %v", err)
	}
	priv["b.pw"] = "pw\n"
	if err := CheckRemote(priv, pbs, remotes); err != nil {
		t.Errorf("pbs: %v", err)
	}
	pbs.Options["server"] = "192.0.2.99"
	if err := CheckRemote(priv, pbs, remotes); err == nil || !strings.Contains(err.Error(), "Can't connect to 192.0.2.99:8007") {
		t.Errorf("unknown pbs: %v", err)
	}
	smb := &Section{ID: "s", Type: "cifs", Options: map[string]any{"server": "192.0.2.60", "share": "other", "username": "smb"}}
	priv["s.pw"] = "password=pw\n"
	if err := CheckRemote(priv, smb, remotes); err == nil || err.Error() != "storage 's' is not online" {
		t.Errorf("unknown share: %v", err)
	}
	delete(priv, "s.pw")
	if err := CheckRemote(priv, smb, remotes); err == nil || !strings.HasSuffix(err.Error(), "NT_STATUS_ACCESS_DENIED") {
		t.Errorf("guest login: %v", err)
	}
}

// Status.pm upload: the extensions per content type (plain .tar only on 9),
// normalize_content_filename's safe characters.
func TestUploadDir(t *testing.T) {
	if got := NormalizeContentFilename("C:\\isos\\my disk (1).iso\n"); got != "my_disk__1_.iso" {
		t.Errorf("normalized %q", got)
	}
	for _, tc := range []struct {
		version            int
		content, file, dir string
		param              string
	}{
		{9, "iso", "x.ISO", "template/iso", ""},
		{9, "iso", "x.qcow2", "", "filename"},
		{9, "vztmpl", "ct.tar", "template/cache", ""},
		{8, "vztmpl", "ct.tar", "", "filename"},
		{8, "vztmpl", "ct.tar.zst", "template/cache", ""},
		{9, "import", "disk.vmdk", "import", ""},
		{9, "snippets", "x.yaml", "", "content"},
	} {
		dir, err := UploadDir(tc.version, tc.content, tc.file)
		var perr *ParamError
		if tc.param != "" {
			if !errors.As(err, &perr) || perr.Param != tc.param {
				t.Errorf("PVE %d %s %s: %v, want a refusal of %s", tc.version, tc.content, tc.file, err, tc.param)
			}
			continue
		}
		if err != nil || dir != tc.dir {
			t.Errorf("PVE %d %s %s: %q %v, want %s", tc.version, tc.content, tc.file, dir, err, tc.dir)
		}
	}
}
