package labctl

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/tools/perlstartup"
)

// Files of a lab directory that users and tools rely on.
const (
	InventoryFile   = "inventory.yml"
	CredentialsFile = "credentials.yml"
	KeyFile         = "id_ed25519"
	KnownHostsFile  = "known_hosts"
	StateFile       = "lab.json"
)

// Credentials of the lab's PVE API (root@pam on every node).
type Credentials struct {
	User         string            `json:"user"`
	Password     string            `json:"-"`
	TokenID      string            `json:"token_id"`
	TokenSecret  string            `json:"-"`
	Port         int               `json:"port"`
	Fingerprints map[string]string `json:"fingerprints,omitempty"`
}

// State is lab.json: what `lab status` and `lab down` read. No secrets.
type State struct {
	Slot    int        `json:"slot"`
	PVE     int        `json:"pve"`
	Dir     string     `json:"dir"`
	Nodes   []NodeInfo `json:"nodes"`
	PID     int        `json:"pid"` // the process holding the lab (supervisor or test)
	Started time.Time  `json:"started"`
	API     bool       `json:"api"` // whether the PVE API simulator runs
}

// ReadState reads dir/lab.json.
func ReadState(dir string) (State, error) {
	var st State
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		return st, fmt.Errorf("no lab in %s: %w", dir, err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("reading %s: %w", filepath.Join(dir, StateFile), err)
	}
	return st, nil
}

func (l *Lab) writeState() error {
	st := State{Slot: l.slot, PVE: l.opts.PVE, Dir: l.dir, Nodes: l.Nodes(), PID: os.Getpid(),
		Started: time.Now().UTC(), API: l.sim != nil}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(l.dir, StateFile), append(b, '\n'), 0o644)
}

// nodeJSON is /etc/gopve-lab/node.json (docs/contracts.md, "Lab").
func (l *Lab) nodeJSON(name, addr string) ([]byte, error) {
	port := l.creds.Port
	if port == 0 {
		port = 8006
	}
	doc := map[string]any{
		"node": name, "pve": l.opts.PVE, "lab_dir": l.dir,
		"api":     fmt.Sprintf("https://%s:%d", addr, port),
		"control": "/run/gopve-lab/control.sock", "state_dir": "/var/lib/gopve-lab",
		"api_fingerprint": l.creds.Fingerprints[name],
	}
	if l.creds.TokenSecret != "" {
		doc["api_token"] = l.creds.TokenID + "=" + l.creds.TokenSecret
	}
	if !l.opts.NoPerlStartup {
		doc["perl_startup_ms"] = perlstartup.DefaultMS()
	}
	switch d := l.opts.PveshStartup; {
	case d < 0:
		doc["pvesh_startup_ms"] = 0
	case d > 0:
		doc["pvesh_startup_ms"] = d.Milliseconds()
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	return append(b, '\n'), err
}

// writeClientFiles writes what Ansible needs on the controller side: the
// key, a known_hosts holding exactly the nodes' host keys (so host key
// checking stays on without touching ~/.ssh), the inventory and credentials.
func (l *Lab) writeClientFiles() error {
	if err := writeAtomic(l.PrivateKey(), l.key.PrivatePEM, 0o600); err != nil {
		return err
	}
	if err := writeAtomic(l.PrivateKey()+".pub", append(append([]byte(nil), l.key.Public...), []byte(" gopve-lab\n")...), 0o644); err != nil {
		return err
	}
	var kh strings.Builder
	for _, n := range l.nodes {
		fmt.Fprintf(&kh, "%s,%s %s\n", n.info.Addr, n.info.Name, n.hostKey.Public)
	}
	if err := writeAtomic(filepath.Join(l.dir, KnownHostsFile), []byte(kh.String()), 0o644); err != nil {
		return err
	}
	if err := writeAtomic(l.Inventory(), []byte(l.inventoryYAML()), 0o644); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(l.dir, CredentialsFile), []byte(l.credentialsYAML()), 0o600)
}

func (l *Lab) inventoryYAML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# gopve lab, slot %d, PVE %d. Written by `lab up`; `lab down` removes it.\n", l.slot, l.opts.PVE)
	fmt.Fprintf(&b, "# API credentials: %s (vars_files or -e @file).\n", filepath.Join(l.dir, CredentialsFile))
	b.WriteString("all:\n  children:\n    pve:\n      hosts:\n")
	for _, n := range l.nodes {
		fmt.Fprintf(&b, "        %s:\n          ansible_host: %s\n", n.info.Name, n.info.Addr)
		if fp := l.creds.Fingerprints[n.info.Name]; fp != "" {
			fmt.Fprintf(&b, "          pve_api_fingerprint: %q\n", fp)
		}
	}
	b.WriteString("      vars:\n")
	fmt.Fprintf(&b, "        ansible_user: root\n")
	fmt.Fprintf(&b, "        ansible_ssh_private_key_file: %s\n", yamlQuote(l.PrivateKey()))
	args := fmt.Sprintf("-o UserKnownHostsFile=%s -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes",
		filepath.Join(l.dir, KnownHostsFile))
	fmt.Fprintf(&b, "        ansible_ssh_common_args: %s\n", yamlQuote(args))
	b.WriteString("        ansible_python_interpreter: /usr/bin/python3\n")
	fmt.Fprintf(&b, "        pve_cluster_primary: %s\n", l.nodes[0].info.Name)
	fmt.Fprintf(&b, "        pve_lab_dir: %s\n", yamlQuote(l.dir))
	return b.String()
}

func (l *Lab) credentialsYAML() string {
	var b strings.Builder
	b.WriteString("# gopve lab API credentials. Secret: keep private; `lab down` deletes this file.\n")
	fmt.Fprintf(&b, "pve_api_user: %s\n", yamlQuote(l.creds.User))
	fmt.Fprintf(&b, "pve_api_password: %s\n", yamlQuote(l.creds.Password))
	fmt.Fprintf(&b, "pve_api_token_id: %s\n", yamlQuote(l.creds.TokenID))
	fmt.Fprintf(&b, "pve_api_token_secret: %s\n", yamlQuote(l.creds.TokenSecret))
	fmt.Fprintf(&b, "pve_api_port: %d\n", l.creds.Port)
	if len(l.creds.Fingerprints) > 0 {
		b.WriteString("pve_api_fingerprints:\n")
		for _, n := range l.nodes {
			fmt.Fprintf(&b, "  %s: %q\n", n.info.Name, l.creds.Fingerprints[n.info.Name])
		}
	}
	return b.String()
}

// yamlQuote single-quotes s for YAML.
func yamlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
