package pvestorage

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi"
)

// Sensitive properties: PVE takes them out of the request
// (extract_sensitive_params, API2/Storage/Config.pm) and hands them to the
// plugin, which keeps them under /etc/pve/priv/storage/ (PBSPlugin.pm,
// CIFSPlugin.pm) and leaves at most a marker in storage.cfg:
//
//   - password (pbs, cifs): <id>.pw; no marker: never comparable.
//   - encryption-key (pbs): <id>.enc; the section holds the key's
//     fingerprint (or 1 when the key JSON has none). "autogen" asks PVE to
//     generate one, and the create/update answer carries it in
//     config.encryption-key.
//   - master-pubkey (pbs): decoded into <id>.master.pem; the section holds
//     "master-pubkey 1". Comparable only where that file can be read (the
//     module runs on a node of the cluster as root).

// privStorageDir is /etc/pve/priv/storage (tests point it at a simulator's).
var privStorageDir = "/etc/pve/priv/storage"

// secretCompare is what the module can say about one sensitive key of an
// existing storage.
type secretCompare int

const (
	secretSame       secretCompare = iota // provably what the task gives
	secretDiffers                         // provably different (or absent): send it
	secretUnknowable                      // cannot be compared: warn, or send with update_secrets
)

// keyFingerprint is the "fingerprint" of a proxmox-backup key's JSON ("" when
// it has none: PVE then stores the marker 1).
func keyFingerprint(key string) string {
	var k struct {
		Fingerprint string `json:"fingerprint"`
	}
	_ = json.Unmarshal([]byte(key), &k)
	return k.Fingerprint
}

// checkEncryptionKey is PBSPlugin's check of a given key ("Value does not
// seems like a valid, JSON formatted encryption key!"), done before any
// request.
func checkEncryptionKey(v string) error {
	if v == "autogen" {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(v), &m); err != nil {
		return errors.New("not a proxmox-backup key file (JSON with a \"data\" field) nor autogen; PVE refuses it (\"Value does not seems like a valid, JSON formatted encryption key!\")")
	}
	if _, ok := m["data"]; !ok {
		return errors.New("the key JSON has no \"data\" field; PVE refuses it (\"Value does not seems like a valid, JSON formatted encryption key!\")")
	}
	return nil
}

// masterPEM is the PEM text of a master_pubkey given either as PVE takes it
// (base64 of the PEM) or as the PEM itself.
func masterPEM(v string) (string, error) {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "-----BEGIN") {
		return v, nil
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil || !strings.HasPrefix(strings.TrimSpace(string(b)), "-----BEGIN") {
		return "", errors.New("neither a PEM public key nor the base64 of one (PVE's form)")
	}
	return strings.TrimSpace(string(b)), nil
}

// masterPubkeyParam is the value PVE's API takes: base64 of the PEM (a
// PEM given as such is encoded; PVE's form is sent as it is).
func masterPubkeyParam(v string) string {
	if t := strings.TrimSpace(v); strings.HasPrefix(t, "-----BEGIN") {
		return base64.StdEncoding.EncodeToString([]byte(t + "\n"))
	}
	return v
}

// compareSecret tells what an existing storage's config (cfg, as GET
// returns it) says about a sensitive key the task gives, and why when it
// cannot tell.
func (s *storage) compareSecret(cfg map[string]any, key, want string) (secretCompare, string) {
	marker, hasMarker := cfg[key]
	file := filepath.Join(privStorageDir, s.p.Storage)
	switch key {
	case "encryption-key":
		if want == "" {
			return map[bool]secretCompare{true: secretDiffers, false: secretSame}[hasMarker], ""
		}
		if !hasMarker {
			return secretDiffers, ""
		}
		if want == "autogen" {
			// A key exists: autogen means "PVE makes one", not "a new one
			// every run" (that would orphan every encrypted backup).
			return secretSame, ""
		}
		fp := keyFingerprint(want)
		if fp == "" || pveapi.String(marker) == "1" {
			return secretUnknowable, fmt.Sprintf("storage.cfg holds only the marker %q for the key, and the key the task gives has no fingerprint to compare it with", pveapi.String(marker))
		}
		return map[bool]secretCompare{true: secretSame, false: secretDiffers}[strings.EqualFold(fp, pveapi.String(marker))], ""
	case "master-pubkey":
		if want == "" {
			return map[bool]secretCompare{true: secretDiffers, false: secretSame}[hasMarker], ""
		}
		if !hasMarker {
			return secretDiffers, ""
		}
		pem, _ := masterPEM(want)
		have, err := os.ReadFile(file + ".master.pem")
		if err != nil {
			return secretUnknowable, fmt.Sprintf("storage.cfg says only \"master-pubkey 1\", and the key itself (%s.master.pem) cannot be read from here (%v): run the task on a node of the cluster, as root, to compare it", file, errors.Unwrap(err))
		}
		return map[bool]secretCompare{true: secretSame, false: secretDiffers}[strings.TrimSpace(string(have)) == pem], ""
	}
	// password: PVE keeps it in <id>.pw and shows no trace of it.
	return secretUnknowable, fmt.Sprintf("PVE keeps it in %s.pw and never shows it", file)
}

// secretMarker is what the section will hold once key is written.
func secretMarker(key, want string) any {
	switch key {
	case "encryption-key":
		if fp := keyFingerprint(want); fp != "" {
			return fp
		}
		return nil // learnt from the read-back (autogen, or 1)
	case "master-pubkey":
		return 1
	}
	return nil
}

// sensitive reports whether key is one of the storage type's sensitive
// properties (PVE's plugindata 'sensitive-properties').
func (s *storage) sensitive(key string) bool {
	return slices.Contains(storageTypes[s.p.Type].Sensitive, key)
}

// storageAnswer is POST /storage's and PUT /storage/{id}'s answer: config
// holds what the plugin generated (the pbs encryption key).
type storageAnswer struct {
	Config map[string]any `json:"config"`
}

// takeGeneratedKey returns a key PVE generated for encryption_key: autogen
// to the user (only in the result key encryption_key of a no_log task;
// masked everywhere else), with a warning to keep it safe.
func (s *storage) takeGeneratedKey(a storageAnswer) {
	if s.want["encryption-key"] != "autogen" {
		return // a key the task gave is not repeated back
	}
	key, _ := a.Config["encryption-key"].(string)
	if key == "" {
		return
	}
	if s.r.SetRevealed("encryption_key", key) {
		s.r.Warn(fmt.Sprintf("PVE generated the encryption key of storage %s: it is in this task's registered result as encryption_key and in %s/%s.enc on the cluster. Back it up outside the cluster now: without it, no encrypted backup on this storage can be restored", s.p.Storage, privStorageDir, s.p.Storage))
		return
	}
	s.r.Warn(fmt.Sprintf("PVE generated the encryption key of storage %s: it is in %s/%s.enc on the cluster, and masked in this result because the task has no no_log: true (Ansible prints a module's output at -v and -vvv). Back it up outside the cluster now, from that file or by running the task with no_log: true and registering encryption_key: without it, no encrypted backup on this storage can be restored", s.p.Storage, privStorageDir, s.p.Storage))
}

// isMarker: a config value that may be shown (results, diffs). A secret
// key's value is shown only as PVE's marker (a fingerprint, 1), never a
// password or a key's JSON, whatever a hand edit put in storage.cfg.
func isMarker(key string, v any) bool {
	switch key {
	case "password", "keyring":
		return false
	case "encryption-key":
		return !strings.Contains(pveapi.String(v), "{")
	}
	return true
}

// planSecret adds a sensitive key to an update when the storage provably
// differs, or when it cannot be compared and update_secrets is set; a key
// that cannot be compared is otherwise left as it is, with a warning.
func (s *storage) planSecret(cfg map[string]any, key string, set url.Values, deletes, changed *[]string, after map[string]any) {
	want := s.want[key]
	cmp, why := s.compareSecret(cfg, key, want)
	switch {
	case cmp == secretSame:
		return
	case cmp == secretUnknowable && !s.p.UpdateSecrets:
		s.r.Warn(fmt.Sprintf("%s: given but not compared on storage %s: %s. It was left as it is; set update_secrets: true to send it (the task then reports a change on every run)", optionName(key), s.p.Storage, why))
		return
	}
	*changed = append(*changed, optionName(key))
	if want == "" {
		*deletes = append(*deletes, key)
		delete(after, key)
		return
	}
	v := want
	if key == "master-pubkey" {
		v = masterPubkeyParam(v)
	}
	set.Set(key, v)
	if m := secretMarker(key, want); m != nil {
		after[key] = m
	}
}

// verifySecret checks what the read-back can show of a sensitive key: its
// marker (and, for master-pubkey, the file when readable).
func (s *storage) verifySecret(cfg map[string]any, key string) string {
	want := s.want[key]
	marker, has := cfg[key]
	switch key {
	case "encryption-key", "master-pubkey":
		if want == "" && has {
			return fmt.Sprintf("%s is still set", optionName(key))
		}
		if want != "" && !has {
			return fmt.Sprintf("%s is not set (no %s marker in storage.cfg)", optionName(key), key)
		}
		if fp := keyFingerprint(want); key == "encryption-key" && fp != "" && !strings.EqualFold(fp, pveapi.String(marker)) {
			return fmt.Sprintf("encryption_key has fingerprint %s, not %s", pveapi.String(marker), fp)
		}
		if key == "master-pubkey" && want != "" {
			if cmp, _ := s.compareSecret(cfg, key, want); cmp == secretDiffers {
				return fmt.Sprintf("master_pubkey: %s/%s.master.pem holds another key", privStorageDir, s.p.Storage)
			}
		}
	}
	return ""
}

// generatedKey takes the key PVE generated from a write's outcome: its
// answer, or, when the answer was lost and a read settled that the write
// happened, the key file.
func (s *storage) generatedKey(out *pveapi.Outcome) {
	if out == nil {
		return
	}
	if out.Data == nil {
		if out.Lost != "" {
			s.generatedKeyUnanswered()
		}
		return
	}
	var a storageAnswer
	if err := out.Decode(&a); err == nil {
		s.takeGeneratedKey(a)
	}
}

// generatedKeyUnanswered: the create happened but its answer, which carried
// the generated key, was lost. The key is in <id>.enc on the cluster: taken
// from there when the module runs on a node, else the warning says where.
func (s *storage) generatedKeyUnanswered() {
	if s.want["encryption-key"] != "autogen" {
		return
	}
	file := filepath.Join(privStorageDir, s.p.Storage+".enc")
	if b, err := os.ReadFile(file); err == nil && checkEncryptionKey(string(b)) == nil {
		s.takeGeneratedKey(storageAnswer{Config: map[string]any{"encryption-key": string(b)}})
		return
	}
	s.r.Warn(fmt.Sprintf("PVE generated the encryption key of storage %s, but the answer carrying it was lost: the key exists only in %s on the cluster. Copy it from a node now and back it up outside the cluster: without it, no encrypted backup on this storage can be restored", s.p.Storage, file))
}
