// Package pvestorage is the pve_storage module: one storage definition of
// a Proxmox VE cluster (/etc/pve/storage.cfg), through the API.
//
// Storage lives in pmxcfs, so it is declared once for the whole cluster
// (S1), from one node or from the controller (S3: the role runs it once).
// One stage:
//
//   - observe: GET /version (the schema of that PVE version validates every
//     option before anything is written) and GET /storage/{id}: a no-op run
//     costs exactly these two reads.
//   - plan: absent → create (POST /storage); present → compare the options
//     the task gives, normalised (lists sorted, PVE's defaults filled in),
//     and update the differences with one digest-guarded PUT, shown as a
//     storage.cfg diff. A different value for a fixed key (type, pool,
//     path, server, export…) fails naming it: never a delete-and-recreate.
//     state=absent refuses while guests still have volumes on it, unless
//     force.
//   - verify: every change is read back; the final config is returned, and
//     with node_status the storage's status on every node it applies to.
package pvestorage

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
)

// Module builds pve_storage as the binary registers it; New builds it with
// client options (tests point it at a simulator with short retries).
var Module, New = pveansible.Declare(about, spec, params{}, 5*time.Minute, run)

// optionName is the Ansible name of a PVE key (content-dirs → content_dirs).
func optionName(key string) string { return strings.ReplaceAll(key, "-", "_") }

func spec() ansible.Spec {
	opts := map[string]ansible.Option{
		"storage": {Type: ansible.TypeStr, Required: true, Aliases: []string{"name", "id"},
			Description: []string{"Storage ID, e.g. nvme-vm or local."}},
		"state": {Type: ansible.TypeStr, Default: "present", Choices: []any{"present", "absent"},
			Description: []string{"present creates or converges the definition; absent removes it (never the data)."}},
		"type": {Type: ansible.TypeStr, Choices: anySlice(typeNames),
			Description: []string{"Storage type. Required with state=present; it can never change on an existing storage."}},
		"force": {Type: ansible.TypeBool, Default: false,
			Description: []string{"With state=absent, remove the definition even though guests still have volumes on it (the volumes stay, unreachable until the storage is declared again)."}},
		"update_secrets": {Type: ansible.TypeBool, Default: false,
			Description: []string{"On an existing storage, send the secrets the task gives (password, encryption_key, master_pubkey) even when they cannot be compared with what PVE holds: PVE keeps them under /etc/pve/priv/storage and shows at most a marker. The task then reports a change on every run; use it to rotate a password.",
				"Without it, a secret that cannot be compared is left as it is, with a warning naming it. What can be compared is converged either way: the encryption key by its fingerprint, the master public key by the file /etc/pve/priv/storage/<storage>.master.pem when the module runs on a node of the cluster."}},
		"node_status": {Type: ansible.TypeBool, Default: false,
			Description: []string{"Also return the storage's status on every node it applies to (one more API call per node).",
				"PVE shows a storage's status only with Datastore.Audit or Datastore.AllocateSpace on /storage/<storage>: without either, each node's entry holds PVE's refusal as its error and the task still succeeds."}},
	}
	for _, key := range allKeys() {
		o := optSchemaAny(key)
		opt := ansible.Option{Type: ansibleType(key, o), Description: optionDoc(key, o)}
		if opt.Type == ansible.TypeList {
			opt.Elements = ansible.TypeStr
		}
		if name := optionName(key); name != key {
			opt.Aliases = []string{key}
		}
		opt.NoLog = slices.Contains(secretKeys, key)
		opts[optionName(key)] = opt
	}
	return ansible.Spec{Options: opts, Constraints: ansible.Constraints{
		RequiredIf: []ansible.RequiredIf{{Key: "state", Value: "present", Requirements: []string{"type"}}},
	}}
}

// optSchemaAny is the key's schema in PVE 9, or PVE 8 for 8-only keys.
func optSchemaAny(key string) optSchema {
	if o, ok := schemaV9[key]; ok {
		return o
	}
	return schemaV8[key]
}

func ansibleType(key string, o optSchema) ansible.Type {
	switch {
	case key == "content" || key == "nodes":
		return ansible.TypeList
	case o.Format == "property-string" || o.Format == "prune-backups" || key == "is_mountpoint":
		return ansible.TypeRaw // a dict or PVE's key=value string; yes/no or a path
	case key == "encryption-key":
		// A key file read with lookup('file') is templated by Ansible into
		// a dict: as str it would arrive as Python's repr, which PVE refuses.
		return ansible.TypeRaw
	case o.Type == "boolean":
		return ansible.TypeBool
	case o.Type == "integer":
		return ansible.TypeInt
	case o.Type == "number":
		return ansible.TypeFloat
	}
	return ansible.TypeStr
}

func optionDoc(key string, o optSchema) []string {
	var types, fixedIn []string
	for _, t := range typeNames {
		st := storageTypes[t]
		if st.Allows(key, 8) || st.Allows(key, 9) {
			types = append(types, t)
		}
		if slices.Contains(st.Fixed, key) {
			fixedIn = append(fixedIn, t)
		}
	}
	doc := []string{fmt.Sprintf("PVE option %s: %s", key, o.Description), "Storage types: " + strings.Join(types, ", ") + "."}
	if _, in8 := schemaV8[key]; !in8 {
		doc = append(doc, "PVE 9 only.")
	} else if _, in9 := schemaV9[key]; !in9 {
		doc = append(doc, "PVE 8 only (removed in PVE 9).")
	}
	if len(fixedIn) > 0 || !o.Updatable {
		doc = append(doc, "Fixed at creation; a different value on an existing storage fails.")
	}
	if key == "encryption-key" {
		doc = append(doc, "The key file's JSON as text, or as the dict Ansible makes of it (lookup('file', …) templates it into one), or autogen.")
	}
	switch o.Format {
	case "property-string":
		doc = append(doc, "A dict ("+strings.Join(o.Keys, ", ")+") or PVE's key=value,… string.")
	case "prune-backups":
		doc = append(doc, "A dict ("+strings.Join(pruneKeys, ", ")+") or PVE's key=value,… string, checked as PVE checks it before any request: keep-all is a boolean that excludes every positive keep-* option, the others are integers of at least 0.")
	}
	return doc
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// params are the module's own options; storage options are read from the
// validated parameters by key (wanted).
type params struct {
	pveansible.Connection `ansible:",squash"`
	Storage               string `ansible:"storage"`
	State                 string `ansible:"state"`
	Type                  string `ansible:"type"`
	Force                 bool   `ansible:"force"`
	NodeStatus            bool   `ansible:"node_status"`
	UpdateSecrets         bool   `ansible:"update_secrets"`
	StorageOptions
}

func run(r *ansible.Run, o pveapi.Options) error {
	var p params
	if err := r.Decode(&p); err != nil {
		return err
	}
	want, err := wanted(p)
	if err != nil {
		return err
	}
	c, err := pveansible.ForRun(r, p.Connection.API(), o)
	if err != nil {
		return nameUnreachable(p.Connection.API(), nil, err)
	}
	if err := refuseLocalSecrets(c, p, want); err != nil {
		return err
	}
	s := &storage{r: r, c: c, p: p, want: want}
	err = r.Stage("storage", s.plan)
	s.report(err == nil)
	return err
}

// wanted turns the task's storage options into PVE keys and PVE's string
// forms, refusing before any request what cannot be right for the type in
// any PVE version. Version-specific checks come after GET /version.
func wanted(p params) (map[string]string, error) {
	given := p.byKey()
	if err := checkStorageID(p.Storage); err != nil {
		return nil, err
	}
	want := map[string]string{}
	for _, key := range allKeys() {
		v := given[key]
		if v == nil {
			continue
		}
		s, err := pveString(key, v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", optionName(key), err)
		}
		// Version-independent checks, so refused before any request.
		check := map[string]func(string) error{
			"prune-backups":  checkPruneBackups,
			"encryption-key": checkEncryptionKey,
			"master-pubkey":  func(v string) error { _, err := masterPEM(v); return err },
		}[key]
		if check != nil && s != "" {
			if err := check(s); err != nil {
				return nil, fmt.Errorf("%s: %w", optionName(key), err)
			}
		}
		want[key] = s
	}
	if p.State == "absent" {
		return want, nil
	}
	t := storageTypes[p.Type]
	for _, key := range slices.Sorted(maps.Keys(want)) {
		if !t.Allows(key, 8) && !t.Allows(key, 9) {
			return nil, fmt.Errorf("%s: not an option of storage type %s (it takes %s)", optionName(key), p.Type, strings.Join(optionNames(t), ", "))
		}
	}
	if c, ok := want["content"]; ok {
		for _, item := range pveapi.SplitList(c) {
			if !slices.Contains(t.Content, item) {
				return nil, fmt.Errorf("content: a %s storage cannot hold %q (it holds %s)", p.Type, item, strings.Join(t.Content, ", "))
			}
		}
	}
	return want, nil
}

// refuseLocalSecrets fails a task that gives a secret when local mode fell
// back to pvesh, before any request: pvesh would carry it on its command
// line, readable by any
// user of the node (pveapi refuses such a request too; failing here names
// the Ansible option, and fails the same whether or not the storage exists,
// so a play does not work once and break on the next node).
func refuseLocalSecrets(c *pveapi.Client, p params, want map[string]string) error {
	if !c.Pvesh() || p.State != "present" {
		return nil
	}
	for _, key := range secretKeys {
		if want[key] != "" {
			return pveapi.LocalSecretError(optionName(key))
		}
	}
	return nil
}

func optionNames(t storageType) []string {
	var out []string
	for _, k := range append(append(slices.Clone(t.Options), t.V8Only...), t.V9Only...) {
		out = append(out, optionName(k))
	}
	slices.Sort(out)
	return slices.Compact(out)
}
