package storage

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/pveapi/storagetype"
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

// PrivFiles is /etc/pve/priv/storage of one cluster, by file name.
type PrivFiles interface {
	Read(name string) ([]byte, error)
	// Write is PVE::Tools::file_set_contents after `mkdir
	// /etc/pve/priv/storage`.
	Write(name, content string) error
	// Remove is unlink; a missing file is not an error (ENOENT).
	Remove(name string) error
	Rename(from, to string) error
}

// Sensitive is extract_sensitive_params' result: a key set to nil is a
// deletion (the key was in `delete`).
type Sensitive map[string]*string

// ExtractSensitive takes t's sensitive keys out of params (the handler's
// own copy: the request log keeps what was sent, redacted).
func ExtractSensitive(t storagetype.Type, params map[string]any, deletes []string) Sensitive {
	out := Sensitive{}
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

// OnAdd is the plugin's on_add_hook for st (its Options are the section
// being created): it returns the answer's `config`, if any.
func OnAdd(priv PrivFiles, st *Section, sens Sensitive) (map[string]any, error) {
	switch st.Type {
	case "pbs":
		all := Sensitive{"password": nil, "encryption-key": nil, "master-pubkey": nil}
		for k, v := range sens {
			all[k] = v
		}
		return pbsHook(priv, st.ID, st.Options, all, true)
	case "cifs":
		return nil, cifsHook(priv, st.ID, sens["password"])
	}
	return nil, nil
}

// OnUpdate is on_update_hook: only the keys the request gave (or deleted)
// are touched; update holds the section's new values.
func OnUpdate(priv PrivFiles, st *Section, update map[string]any, sens Sensitive) (map[string]any, error) {
	switch st.Type {
	case "pbs":
		return pbsHook(priv, st.ID, update, sens, false)
	case "cifs":
		if pw, ok := sens["password"]; ok {
			return nil, cifsHook(priv, st.ID, pw)
		}
	}
	return nil, nil
}

// OnDelete is on_delete_hook: on removal, and when the activation of a
// new storage fails (create cleans up what on_add_hook wrote).
func OnDelete(priv PrivFiles, st *Section) error {
	var names []string
	switch st.Type {
	case "pbs":
		names = []string{st.ID + ".pw", st.ID + ".enc", st.ID + ".master.pem"}
	case "cifs":
		names = []string{st.ID + ".pw"}
	}
	var errs []error
	for _, n := range names {
		errs = append(errs, priv.Remove(n))
	}
	return errors.Join(errs...)
}

// cifsHook: cifs_set_credentials or cifs_delete_credentials.
func cifsHook(priv PrivFiles, id string, password *string) error {
	if password == nil {
		return priv.Remove(id + ".pw")
	}
	return priv.Write(id+".pw", "password="+*password+"\n")
}

// pbsHook is PBSPlugin's on_add_hook (add) and on_update_hook: a key
// present in sens is set (non-nil) or removed (nil); section is where the
// markers go (the new section on add, the update on update).
func pbsHook(priv PrivFiles, id string, section map[string]any, sens Sensitive, add bool) (map[string]any, error) {
	res := map[string]any{}
	if pw, ok := sens["password"]; ok {
		var err error
		if pw != nil {
			err = priv.Write(id+".pw", *pw+"\n")
		} else {
			err = priv.Remove(id + ".pw")
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
				if _, err := priv.Read(id + ".enc"); err == nil {
					_ = priv.Rename(id+".enc", id+".enc.old")
				}
				text = newBackupKey()
				if err := priv.Write(id+".enc", text); err != nil {
					return nil, fmt.Errorf("failed to create encryption key: %w", err)
				}
			} else {
				if !validBackupKey(text) {
					//lint:ignore ST1005 PVE's own message (PBSPlugin.pm)
					return nil, errors.New("Value does not seems like a valid, JSON formatted encryption key!")
				}
				if err := priv.Write(id+".enc", text+"\n"); err != nil {
					return nil, err
				}
			}
			res["encryption-key"] = text
			section["encryption-key"] = backupKeyFingerprint(text)
		} else {
			if err := priv.Remove(id + ".enc"); err != nil {
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
			if err := priv.Write(id+".master.pem", decodeBase64Lenient(*pub)+"\n"); err != nil {
				return nil, err
			}
			section["master-pubkey"] = 1
		} else {
			if err := priv.Remove(id + ".master.pem"); err != nil {
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
