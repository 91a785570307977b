package pvesim

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// Sensitive storage properties, as pve-storage keeps them: the API handler
// takes them out of the request before check_config
// (PVE::Tools::extract_sensitive_params in API2/Storage/Config.pm create and
// update), so they never reach storage.cfg; the plugin's hooks write them
// under /etc/pve/priv/storage/ and may leave a marker in the section:
//
//   - pbs (PBSPlugin.pm): password → <id>.pw ("<password>\n");
//     encryption-key → <id>.enc (the key's JSON; "autogen" runs
//     `proxmox-backup-client key create --kdf none`), the section keeps the
//     key's fingerprint (or 1); master-pubkey (base64 of a PEM) → decoded
//     into <id>.master.pem, the section keeps "master-pubkey 1", and on
//     create it needs an encryption-key. The answer's `config` carries the
//     encryption key (generated or given).
//   - cifs (CIFSPlugin.pm): password → <id>.pw ("password=<password>\n").
//
// A hook's file is what later reads use (pbs_get_password, the CIFS
// credentials file): a hand edit of the file is what the next activation
// logs in with, as on PVE.

// sensitiveParams is extract_sensitive_params' result: a key set to nil is
// a deletion (the key was in `delete`).
type sensitiveParams map[string]*string

// extractSensitive takes t's sensitive keys out of the handler's
// parameters (a copy: the request log keeps what was sent, redacted).
func extractSensitive(t storageType, rc *reqCtx, deletes []string) sensitiveParams {
	rc.params = maps.Clone(rc.params)
	params := rc.params
	out := sensitiveParams{}
	for _, k := range t.Sensitive {
		if slices.Contains(deletes, k) {
			out[k] = nil
		}
		if v, ok := params[k]; ok {
			s := pvecommon.ParamString(v)
			out[k] = &s
			delete(params, k)
		}
	}
	return out
}

func (s *Sim) privStorageFile(db *ConfigDB, name string) string {
	return filepath.Join(s.etcPveDir(db.ID), "priv", "storage", name)
}

// setPrivFile is PVE::Tools::file_set_contents after `mkdir
// /etc/pve/priv/storage`.
func (s *Sim) setPrivFile(db *ConfigDB, name, content string) error {
	if err := writeEtcPveFile(s.etcPveDir(db.ID), "priv/storage/"+name, []byte(content)); err != nil {
		return err
	}
	return nil
}

// removePrivFile is unlink; a missing file is not an error (ENOENT).
func (s *Sim) removePrivFile(db *ConfigDB, name string) error {
	if err := os.Remove(s.privStorageFile(db, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// onAddHook is the plugin's on_add_hook for st (its Options are the
// section being created): it returns the answer's `config`, if any.
func (s *Sim) onAddHook(db *ConfigDB, st *Storage, sens sensitiveParams) (map[string]any, error) {
	switch st.Type {
	case "pbs":
		all := sensitiveParams{"password": nil, "encryption-key": nil, "master-pubkey": nil}
		for k, v := range sens {
			all[k] = v
		}
		return s.pbsHook(db, st.ID, st.Options, all, true)
	case "cifs":
		return nil, s.cifsHook(db, st.ID, sens["password"])
	}
	return nil, nil
}

// onUpdateHook is on_update_hook: only the keys the request gave (or
// deleted) are touched; update holds the section's new values.
func (s *Sim) onUpdateHook(db *ConfigDB, st *Storage, update map[string]any, sens sensitiveParams) (map[string]any, error) {
	switch st.Type {
	case "pbs":
		return s.pbsHook(db, st.ID, update, sens, false)
	case "cifs":
		if pw, ok := sens["password"]; ok {
			return nil, s.cifsHook(db, st.ID, pw)
		}
	}
	return nil, nil
}

// onDeleteHook is on_delete_hook: on removal, and when the activation of a
// new storage fails (create cleans up what on_add_hook wrote).
func (s *Sim) onDeleteHook(db *ConfigDB, st *Storage) error {
	var names []string
	switch st.Type {
	case "pbs":
		names = []string{st.ID + ".pw", st.ID + ".enc", st.ID + ".master.pem"}
	case "cifs":
		names = []string{st.ID + ".pw"}
	}
	var errs []error
	for _, n := range names {
		errs = append(errs, s.removePrivFile(db, n))
	}
	return errors.Join(errs...)
}

// cifsHook: cifs_set_credentials or cifs_delete_credentials.
func (s *Sim) cifsHook(db *ConfigDB, id string, password *string) error {
	if password == nil {
		return s.removePrivFile(db, id+".pw")
	}
	return s.setPrivFile(db, id+".pw", "password="+*password+"\n")
}

// pbsHook is PBSPlugin's on_add_hook (add) and on_update_hook: a key
// present in sens is set (non-nil) or removed (nil); section is where the
// markers go (the new section on add, the update on update).
func (s *Sim) pbsHook(db *ConfigDB, id string, section map[string]any, sens sensitiveParams, add bool) (map[string]any, error) {
	res := map[string]any{}
	if pw, ok := sens["password"]; ok {
		var err error
		if pw != nil {
			err = s.setPrivFile(db, id+".pw", *pw+"\n")
		} else {
			err = s.removePrivFile(db, id+".pw")
		}
		if err != nil {
			return nil, err
		}
	}
	if key, ok := sens["encryption-key"]; ok {
		if key != nil {
			text := *key
			if text == "autogen" {
				// $autogen_encryption_key: an existing key file is kept as .old.
				old := s.privStorageFile(db, id+".enc")
				if _, err := os.Stat(old); err == nil {
					_ = os.Rename(old, old+".old")
				}
				text = newBackupKey()
				if err := s.setPrivFile(db, id+".enc", text); err != nil {
					return nil, fmt.Errorf("failed to create encryption key: %w", err)
				}
			} else {
				if !validBackupKey(text) {
					//lint:ignore ST1005 PVE's own message (PBSPlugin.pm)
					return nil, errors.New("Value does not seems like a valid, JSON formatted encryption key!")
				}
				if err := s.setPrivFile(db, id+".enc", text+"\n"); err != nil {
					return nil, err
				}
			}
			res["encryption-key"] = text
			section["encryption-key"] = backupKeyFingerprint(text)
		} else {
			if err := s.removePrivFile(db, id+".enc"); err != nil {
				return nil, fmt.Errorf("failed to delete encryption key! %v", err)
			}
			delete(section, "encryption-key")
		}
	}
	if pub, ok := sens["master-pubkey"]; ok {
		if pub != nil {
			if add && section["encryption-key"] == nil {
				return nil, errors.New("'master-pubkey' can only be used together with 'encryption-key'")
			}
			if err := s.setPrivFile(db, id+".master.pem", decodeBase64Lenient(*pub)+"\n"); err != nil {
				return nil, err
			}
			section["master-pubkey"] = 1
		} else {
			if err := s.removePrivFile(db, id+".master.pem"); err != nil {
				return nil, fmt.Errorf("failed to delete master public key! %v", err)
			}
			delete(section, "master-pubkey")
		}
	}
	if len(res) == 0 {
		return nil, nil
	}
	return res, nil
}

// backupKey is the JSON of a proxmox-backup key file (pbs-key-config
// KeyConfig). Reconstruction: the field set and the RFC 3339 times follow
// pbs-key-config; the fingerprint here is a SHA-256 of the key bytes,
// rendered as PBS renders fingerprints (32 hex pairs), not PBS's own
// derivation.
type backupKey struct {
	KDF         any    `json:"kdf"`
	Created     string `json:"created"`
	Modified    string `json:"modified"`
	Data        string `json:"data"`
	Fingerprint string `json:"fingerprint,omitempty"`
}

func newBackupKey() string {
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	now := time.Now().Format(time.RFC3339)
	sum := sha256.Sum256(raw)
	fp := make([]string, len(sum))
	for i, b := range sum {
		fp[i] = fmt.Sprintf("%02x", b)
	}
	k := backupKey{Created: now, Modified: now, Data: base64.StdEncoding.EncodeToString(raw), Fingerprint: strings.Join(fp, ":")}
	b, _ := json.MarshalIndent(k, "", "  ")
	return string(b) + "\n"
}

// validBackupKey: decode_json succeeds and the object has "data".
func validBackupKey(s string) bool {
	var m map[string]any
	if json.Unmarshal([]byte(s), &m) != nil {
		return false
	}
	_, ok := m["data"]
	return ok
}

// backupKeyFingerprint is `$decoded_key->{fingerprint} || 1`.
func backupKeyFingerprint(s string) any {
	var m map[string]any
	if json.Unmarshal([]byte(s), &m) == nil {
		if fp, ok := m["fingerprint"].(string); ok && fp != "" {
			return fp
		}
	}
	return 1
}

// decodeBase64Lenient is MIME::Base64 decode_base64, which skips what is
// not base64 and never fails.
func decodeBase64Lenient(s string) string {
	clean := strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '+' || r == '/' {
			return r
		}
		return -1
	}, s)
	if len(clean)%4 == 1 {
		clean = clean[:len(clean)-1] // a lone trailing character carries no byte
	}
	b, _ := base64.RawStdEncoding.DecodeString(clean)
	return string(b)
}
