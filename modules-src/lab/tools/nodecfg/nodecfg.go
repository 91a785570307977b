// Package nodecfg reads /etc/gopve-lab/node.json, the description of the lab
// node a stand-in command runs on (see docs/contracts.md, "Lab").
package nodecfg

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// DefaultPath is where the lab writes node.json inside every node.
const DefaultPath = "/etc/gopve-lab/node.json"

// EnvPath overrides DefaultPath (tests, or a node with an unusual layout).
const EnvPath = "GOPVE_LAB_NODE_JSON"

// Node describes the node the command runs on.
type Node struct {
	Node           string `json:"node"`
	PVE            int    `json:"pve"`
	LabDir         string `json:"lab_dir"`
	API            string `json:"api"`
	APIFingerprint string `json:"api_fingerprint"`
	Control        string `json:"control"`
	StateDir       string `json:"state_dir"`
	// APIToken is "user@realm!name=secret"; never printed.
	APIToken string `json:"api_token,omitempty"`
	// Address is the node's lab address (link0 default); optional.
	Address string `json:"address,omitempty"`
	// PveshStartupMS is how long the pvesh stand-in waits before its work,
	// modelling real pvesh loading PVE's Perl API; nil: the default
	// (pvesh.DefaultStartup), 0: none.
	PveshStartupMS *int `json:"pvesh_startup_ms,omitempty"`
	// PerlStartupMS is how long the stand-ins of PVE's other Perl tools
	// (qm, pct, pvecm, pvesm, ha-manager, pvesr) wait before their work,
	// by tool name (lab/tools/perlstartup); absent: none.
	PerlStartupMS map[string]int `json:"perl_startup_ms,omitempty"`
	// Root prefixes absolute host paths the tools read or write besides
	// state_dir (e.g. /etc/modprobe.d/zfs.conf); empty inside a real node.
	Root string `json:"root,omitempty"`
}

// Load reads node.json from $GOPVE_LAB_NODE_JSON or DefaultPath.
func Load(getenv func(string) string) (*Node, error) {
	path := DefaultPath
	if p := getenv(EnvPath); p != "" {
		path = p
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read lab node description: %w (is this a gopve lab node? set %s to override)", err, EnvPath)
	}
	var n Node
	if err := json.Unmarshal(b, &n); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	if n.Node == "" {
		return nil, fmt.Errorf("%s: field \"node\" is empty", path)
	}
	if n.StateDir == "" {
		return nil, errors.New(path + `: field "state_dir" is empty`)
	}
	if n.PVE == 0 {
		n.PVE = 9
	}
	return &n, nil
}

// HostPath maps an absolute path of the node's filesystem to where it lives
// for this process (identity inside a node; under Root in tests).
func (n *Node) HostPath(abs string) string {
	if n.Root == "" {
		return abs
	}
	return filepath.Join(n.Root, abs)
}

// StatePath is a file under state_dir.
func (n *Node) StatePath(name string) string { return filepath.Join(n.StateDir, name) }
