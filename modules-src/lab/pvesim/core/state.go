package core

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/renameio/v2"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/access"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/corosync"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/replication"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/tasks"
)

// State is the whole simulated world, persisted as JSON in
// <Dir>/pvesim/state.json after every change. It is split like real PVE:
//
//   - Nodes: what lives on each machine (online switch, certificate
//     generation, which pmxcfs database it mounts, its task list);
//   - DBs: pmxcfs instances ("/etc/pve"). A standalone node has its own; a
//     cluster shares one. Everything cluster-wide — corosync.conf,
//     storage.cfg, pools, users/tokens/ACLs, and later guests, HA and
//     replication — hangs off a ConfigDB, so a join (which replaces the
//     joiner's /etc/pve with the cluster's) is a pointer swap, exactly the
//     behaviour of pitfalls S1/Z7.
//
// Part 2 (guests, clone, HA, replication) adds fields to ConfigDB and Node
// without reshaping anything here.
type State struct {
	Version int                  `json:"version"`
	Nodes   map[string]*Node     `json:"nodes"`
	DBs     map[string]*ConfigDB `json:"dbs"`
	// RootPassword is root@pam's password (the same on every lab node, as
	// credentials.yml promises); TokenSecret the root@pam!lab secret.
	RootPassword string `json:"root_password"`
	TokenSecret  string `json:"token_secret"`
	NextPID      int    `json:"next_pid"`
}

// Node is one simulated PVE host.
type Node struct {
	Name    string `json:"name"`
	Addr    string `json:"addr"`
	Online  bool   `json:"online"`
	DB      string `json:"db"`
	CertGen int    `json:"cert_gen"`
	// BootTime feeds uptime; PStart is the fake pstart of its daemons.
	BootTime int64         `json:"boot_time"`
	Tasks    []*tasks.Task `json:"tasks"`
	// CorosyncUpAt is when this member's corosync is up (after cluster
	// create/join finished); before that it does not count for quorum.
	CorosyncUpAt int64 `json:"corosync_up_at_ms,omitempty"` // Unix milliseconds
	// Running maps the VMIDs whose QEMU process runs here to their start
	// time (Unix seconds): /var/run/qemu-server is node-local (guests.go).
	Running map[int]int64 `json:"running,omitempty"`
	// Bridges are the Linux bridges the node has (/sys/class/net/<bridge>,
	// what tap_create and tap_plug look up); nil: DefaultBridges
	// (hotplug.go). Reconstruction: the lab declares them; a real node has
	// what /etc/network/interfaces brings up.
	Bridges []string `json:"bridges,omitempty"`
	// HeldDevices are, per running VMID, the devices (net1, scsi2…) whose
	// hot-unplug its guest does not acknowledge: QEMU's device_del never
	// completes (hotplug.go). A stop clears them: the guest is gone.
	HeldDevices map[int][]string `json:"held_devices,omitempty"`
	// Replication is this node's pve-replication-state: one entry per job
	// whose guest it holds (pvesim/replsim).
	Replication map[string]*replication.State `json:"replication,omitempty"`
	// Volumes on this node's local storages, by volid (guests.go).
	Volumes map[string]*GuestVolume `json:"volumes,omitempty"`
	// FinishPending: the node took a cluster's configuration (finish_join)
	// but has not generated its certificate in it yet, so the cluster's
	// /etc/pve has no nodes/<name>/pve-ssl.pem and the join information
	// cannot be read (pvesim/clustersim's join.go).
	FinishPending bool `json:"finish_pending,omitempty"`
	// restarting is true while the API is down for a join (not persisted).
	restarting bool
	// powerLosses counts SetOnline(false): a task sees whether its node lost
	// power while it ran (not persisted).
	powerLosses int
}

// ConfigDB is one pmxcfs instance (/etc/pve).
type ConfigDB struct {
	ID       string              `json:"id"`
	Corosync *corosync.Conf      `json:"corosync,omitempty"`
	Storage  map[string]*Storage `json:"storage"`
	// StorageOrder is the order of storage.cfg's sections (SectionConfig's
	// "order": as read from the file, new sections appended).
	StorageOrder []string         `json:"storage_order,omitempty"`
	Pools        map[string]*Pool `json:"pools"`
	Access       access.Config    `json:"access"`
	// Files holds other /etc/pve files by relative path
	// ("priv/authorized_keys"): a join swaps them with the rest (C7).
	Files map[string]string `json:"files,omitempty"`
	// SharedVolumes are the volumes on shared storages (nfs, shared
	// dir/lvm), by volid: every member sees them (guests.go).
	SharedVolumes map[string]*GuestVolume `json:"shared_volumes,omitempty"`
	// Serial counts writes; digests derive from content, this is for debugging.
	Serial int `json:"serial"`
	// Detached marks the copy of /etc/pve a node keeps after a member
	// removed it with delnode (C9): its corosync was stopped, so this copy
	// is never quorate, still holds corosync.conf and refuses a re-join.
	Detached bool `json:"detached,omitempty"`
}

func RandomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // cannot happen on Linux
	}
	return hex.EncodeToString(b)
}

// NewUUID returns a v4 UUID, the shape of PVE token secrets.
func NewUUID() string {
	h := RandomHex(16)
	return h[0:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:32]
}

// newDB creates a fresh standalone /etc/pve for node, as the installer
// leaves it: local (dir) and local-lvm (lvmthin), root@pam and the lab token.
func newDB(st *State, node string) *ConfigDB {
	db := &ConfigDB{
		ID: "db-" + node + "-" + RandomHex(4),
		Storage: map[string]*Storage{
			"local": {ID: "local", Type: "dir", Options: map[string]any{
				"path": "/var/lib/vz", "content": "iso,vztmpl,backup,import"}},
			"local-lvm": {ID: "local-lvm", Type: "lvmthin", Options: map[string]any{
				"thinpool": "data", "vgname": "pve", "content": "rootdir,images"}},
		},
		StorageOrder: []string{"local", "local-lvm"},
		Pools:        map[string]*Pool{},
		Access: access.Config{
			Users:  map[string]*access.User{"root@pam": {ID: "root@pam"}},
			Tokens: map[string]*access.Token{"root@pam!lab": {ID: "root@pam!lab", Secret: st.TokenSecret}},
		},
	}
	if st.Version == 8 {
		db.Storage["local"].Options["content"] = "iso,vztmpl,backup"
	}
	return db
}

// DigestOf is the SHA-1 hex of a canonical encoding, like PVE's digests.
func DigestOf(v any) string {
	b, _ := json.Marshal(v) // maps marshal with sorted keys
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

func (db *ConfigDB) SortedStorageIDs() []string {
	return slices.Sorted(maps.Keys(db.Storage))
}

func stateFile(dir string) string { return filepath.Join(dir, "pvesim", "state.json") }

func loadState(dir string) (*State, error) {
	b, err := os.ReadFile(stateFile(dir))
	if err != nil {
		return nil, err
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("simulator state %s is corrupt (delete the lab to start over): %w", stateFile(dir), err)
	}
	return &st, nil
}

// save writes the state atomically (0600: it holds the lab's secrets).
func (st *State) save(dir string) error {
	b, err := json.MarshalIndent(st, "", " ")
	if err != nil {
		return fmt.Errorf("encode simulator state: %w", err)
	}
	if err := renameio.WriteFile(stateFile(dir), b, 0o600); err != nil {
		return fmt.Errorf("write simulator state: %w", err)
	}
	return nil
}

func NowUnix() int64 { return time.Now().Unix() }
