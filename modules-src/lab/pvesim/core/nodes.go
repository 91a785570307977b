package core

import (
	"fmt"
	"sort"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/access"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/cluster"
)

// NodeVersion is what a node's installed packages say.
type NodeVersion struct {
	Version string // pve-manager version: "9.2.5"
	RepoID  string // the commit pveversion prints
	Kernel  string // running kernel: "6.14.8-2-pve"
}

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
			s.log.AddError(fmt.Errorf("reading the version of %s: %w", node, err))
		}
		return def
	}
	return v
}

// POST /access/ticket: root@pam (pam password shared by the lab's nodes) or
// a pve-realm user; a valid ticket as password renews it.
func (s *Sim) postTicket(rc *Req) (any, error) {
	db := rc.DB()
	user := access.LoginName(rc.Str("username"), rc.Str("realm"))
	ok := db.Access.Login(user, rc.Str("password"), s.State.RootPassword, func(t string) (string, bool) {
		return s.verifyTicketLocked(db, t, time.Now())
	})
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

// A lab node's fixed memory and root disk figures (no lab node measures
// its own), in bytes.
const (
	SimMaxMem  = 16 * 1024 * 1024 * 1024
	SimMem     = 3 * 1024 * 1024 * 1024
	SimMaxDisk = 100 * 1024 * 1024 * 1024
	SimDisk    = 8 * 1024 * 1024 * 1024
)

func (s *Sim) SortedNodeNamesLocked() []string {
	var out []string
	for n := range s.State.Nodes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// FingerprintLocked is the SHA-256 fingerprint of node's current API
// certificate; false for a node the lab does not run (a nodelist entry
// added by hand).
func (s *Sim) FingerprintLocked(node string) (string, bool) {
	rt := s.nodes[node]
	if rt == nil || rt.cert == nil {
		return "", false
	}
	return rt.cert.Fingerprint, true
}

// Restarting tells whether the node's API is down for a join (C5).
func (n *Node) Restarting() bool { return n.restarting }
