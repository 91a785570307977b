package core

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/cluster"
)

// NodeVersionLocked is what node's packages say (Config.NodeVersion), or
// the version the lab installs first.
func (s *Sim) NodeVersionLocked(node string) NodeVersion {
	def := NodeVersion{Version: "9.2.2", RepoID: "42db4a6cf33dac83", Kernel: "6.14.8-2-pve"}
	if s.Cfg.Version == 8 {
		def = NodeVersion{Version: "8.4.1", RepoID: "b502d23c55afcba1", Kernel: "6.8.12-9-pve"}
	}
	if s.Cfg.NodeVersion == nil {
		return def
	}
	v, err := s.Cfg.NodeVersion(node)
	if err != nil || v.Version == "" {
		if err != nil {
			s.log.addError(fmt.Errorf("reading the version of %s: %w", node, err))
		}
		return def
	}
	return v
}

func (s *Sim) getVersion(rc *Req) (any, error) {
	v := s.NodeVersionLocked(rc.Node)
	release := v.Version
	if i := strings.LastIndex(release, "."); i > 0 {
		release = release[:i]
	}
	return map[string]any{"version": v.Version, "release": release, "repoid": v.RepoID, "console": "html5"}, nil
}

// POST /access/ticket: root@pam (pam password shared by the lab's nodes) or
// a pve-realm user; a valid ticket as password renews it.
func (s *Sim) postTicket(rc *Req) (any, error) {
	db := rc.DB()
	user := rc.Str("username")
	if !strings.Contains(user, "@") {
		realm := rc.Str("realm")
		if realm == "" {
			realm = "pam"
		}
		user += "@" + realm
	}
	pw := rc.Str("password")
	ok := false
	if u := db.Access.Users[user]; u != nil {
		switch {
		case user == "root@pam":
			ok = pw == s.State.RootPassword
		case u.Password != "":
			ok = pw == u.Password
		}
	}
	if !ok && strings.HasPrefix(pw, "PVE:") {
		if tu, valid := s.verifyTicketLocked(db, pw, time.Now()); valid && tu == user {
			ok = true
		}
	}
	if !ok {
		return nil, ErrStatus(401, "authentication failure")
	}
	now := time.Now()
	ticket, err := s.makeTicketLocked(db, user, now)
	if err != nil {
		return nil, err
	}
	csrf, err := s.makeCSRFLocked(db, user, now)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"username": user, "ticket": ticket, "CSRFPreventionToken": csrf}
	if db.Corosync != nil {
		out["clustername"] = db.Corosync.ClusterName
	}
	return out, nil
}

// MembersLocked lists the nodes sharing node's /etc/pve (itself if standalone).
func (s *Sim) MembersLocked(node string) []string {
	return cluster.Members(s.DBOf(node).Corosync, node)
}

// NodeUpLocked: reachable for a cluster view (online, not restarting).
func (s *Sim) NodeUpLocked(name string) bool {
	n := s.State.Nodes[name]
	return n != nil && n.Online && !n.restarting
}

const (
	simMaxMem  = 16 * 1024 * 1024 * 1024
	simMem     = 3 * 1024 * 1024 * 1024
	simMaxDisk = 100 * 1024 * 1024 * 1024
	simDisk    = 8 * 1024 * 1024 * 1024
)

// nodeEntryLocked is name's entry of /nodes and /cluster/resources for
// rc's caller (cluster.NodeEntry), with the simulator's fixed figures;
// shown says they are in.
func (s *Sim) nodeEntryLocked(rc *Req, name string) (map[string]any, bool) {
	return cluster.NodeEntry(name, s.NodeUpLocked(name), func() (cluster.Stats, bool) {
		// Without Sys.Audit the node is listed, without its stats (K19).
		if !HasPriv(rc.DB(), rc.Who, "/nodes/"+name, []string{"Sys.Audit"}, false) {
			return cluster.Stats{}, false
		}
		return cluster.Stats{
			CPU: 0.02, MaxCPU: 4, Mem: simMem, MaxMem: simMaxMem, Disk: simDisk, MaxDisk: simMaxDisk,
			Uptime: time.Now().Unix() - s.State.Nodes[name].BootTime,
		}, true
	})
}

func (s *Sim) getNodes(rc *Req) (any, error) {
	out := []map[string]any{}
	for _, name := range s.MembersLocked(rc.Node) {
		e, _ := s.nodeEntryLocked(rc, name)
		if rt := s.nodes[name]; rt != nil && rt.cert != nil { // not for a nodelist entry added by hand
			e["ssl_fingerprint"] = rt.cert.Fingerprint
		}
		out = append(out, e)
	}
	return out, nil
}

func (s *Sim) getNodeStatus(rc *Req) (any, error) {
	n := s.State.Nodes[rc.Node]
	v := s.NodeVersionLocked(rc.Node)
	kernel := v.Kernel
	return map[string]any{
		"boot-info":      map[string]any{"mode": "efi", "secureboot": 0},
		"cpu":            0.02,
		"cpuinfo":        map[string]any{"cores": 4, "cpus": 4, "model": "QEMU Virtual CPU", "sockets": 1, "mhz": "2400.000", "hvm": "1", "flags": "", "user_hz": 100},
		"current-kernel": map[string]any{"machine": "x86_64", "release": kernel, "sysname": "Linux", "version": "#1 SMP PREEMPT_DYNAMIC PMX"},
		"kversion":       "Linux " + kernel,
		"loadavg":        []string{"0.10", "0.05", "0.01"},
		"memory":         map[string]any{"available": simMaxMem - simMem, "free": simMaxMem - simMem, "total": simMaxMem, "used": simMem},
		"swap":           map[string]any{"free": 0, "total": 0, "used": 0},
		"pveversion":     "pve-manager/" + v.Version + "/" + v.RepoID,
		"rootfs":         map[string]any{"avail": simMaxDisk - simDisk, "free": simMaxDisk - simDisk, "total": simMaxDisk, "used": simDisk},
		"uptime":         time.Now().Unix() - n.BootTime,
		"idle":           0,
		"wait":           0,
		"ksm":            map[string]any{"shared": 0},
	}, nil
}

func (s *Sim) getClusterResources(rc *Req) (any, error) {
	db := rc.DB()
	typ := rc.Str("type")
	out := []map[string]any{}
	members := s.MembersLocked(rc.Node)
	if typ == "" || typ == "node" {
		for _, name := range members {
			e, shown := s.nodeEntryLocked(rc, name)
			if shown {
				e["cgroup-mode"] = 2
			}
			out = append(out, e)
		}
	}
	if typ == "" || typ == "vm" {
		out = append(out, s.vmResourcesLocked(rc)...)
	}
	if typ == "" || typ == "storage" {
		for _, id := range db.SortedStorageIDs() {
			if !HasPriv(db, rc.Who, "/storage/"+id, []string{"Datastore.Audit", "Datastore.AllocateSpace"}, true) {
				continue
			}
			st := db.Storage[id]
			for _, name := range members {
				if !st.OnNode(name) {
					continue
				}
				e := map[string]any{
					"id": "storage/" + name + "/" + id, "type": "storage", "node": name, "storage": id,
					"plugintype": st.Type, "content": st.Content(), "shared": BoolNum(st.Shared()),
				}
				if s.NodeUpLocked(name) && s.activeOn(name, st) == nil {
					e["status"] = "available"
					u := s.storageUsageLocked(name, st)
					e["disk"], e["maxdisk"] = u.Used, u.Total
				} else {
					e["status"] = "unknown"
				}
				out = append(out, e)
			}
		}
	}
	return out, nil
}

func (s *Sim) StorageStatus(node string, st *Storage) map[string]any {
	// storage_info activates every storage it reports (so a dir storage's
	// content subdirectories appear on the next status call).
	active := s.ActivateOn(node, st) == nil
	e := map[string]any{
		"storage": st.ID, "type": st.Type, "content": st.Content(),
		"shared": BoolNum(st.Shared()), "enabled": BoolNum(!st.Disabled()), "active": BoolNum(active),
	}
	if active {
		u := StorageUsage{Total: simMaxDisk, Used: simDisk, Avail: simMaxDisk - simDisk}
		if s.Cfg.StorageUsage != nil {
			var err error
			got, err := s.Cfg.StorageUsage(node, StorageInfoOf(st))
			if err != nil {
				// PVE's status warns and reports the storage inactive.
				e["active"] = 0
				return e
			}
			if got != (StorageUsage{}) { // zero: nothing real behind it
				u = got
			}
		}
		e["total"], e["used"], e["avail"] = u.Total, u.Used, u.Avail
		if u.Total > 0 {
			e["used_fraction"] = float64(u.Used) / float64(u.Total)
		}
	}
	return e
}

// storageUsageErrLocked is the storage's size on node (Config.StorageUsage),
// or the simulator's fixed sizes when nothing real is behind it.
func (s *Sim) storageUsageErrLocked(node string, st *Storage) (StorageUsage, error) {
	fixed := StorageUsage{Total: simMaxDisk, Used: simDisk, Avail: simMaxDisk - simDisk}
	if s.Cfg.StorageUsage == nil {
		return fixed, nil
	}
	got, err := s.Cfg.StorageUsage(node, StorageInfoOf(st))
	if err != nil {
		return StorageUsage{}, err
	}
	if got == (StorageUsage{}) { // zero: nothing real behind it
		return fixed, nil
	}
	return got, nil
}

// storageUsageLocked is storageUsageErrLocked for views that show no error
// (the cluster resource list: pvestatd's last numbers, zero on failure).
func (s *Sim) storageUsageLocked(node string, st *Storage) StorageUsage {
	u, _ := s.storageUsageErrLocked(node, st)
	return u
}

// nodeRoutes are the node and version endpoints, and /cluster/resources.
func (s *Sim) nodeRoutes() map[string]Handler {
	return map[string]Handler{
		"GET /version":             s.getVersion,
		"GET /nodes":               s.getNodes,
		"GET /nodes/{node}/status": s.getNodeStatus,
		"GET /cluster/resources":   s.getClusterResources,
	}
}

func (s *Sim) SortedNodeNamesLocked() []string {
	var out []string
	for n := range s.State.Nodes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
