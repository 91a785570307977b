// Package clustersim simulates PVE's cluster and node endpoints: create,
// join (the joiner's clusterjoin task) and node removal, the join
// information, totem and node list (pve-cluster PVE/API2/ClusterConfig.pm),
// /cluster/status and /cluster/resources (pve-manager PVE/API2/Cluster.pm),
// /nodes and a node's status (Nodes.pm) and /version, the locks a join
// takes (joinlock.go: pvecm.lock, config_change_lock; C4) and the join
// itself (join.go: addnode, finish_join, what it does to the joiner's node
// and /etc/pve, the new certificate and API restart: C5; delnode's stale
// copy), which the join endpoints and the pvecm stand-in share. What the
// join needs of core's internals (a node's listeners and certificate, a
// database's CA, dropping a database) core exports for it. The membership
// and the quorum every write checks stay in core, where every backend and
// model use them; the rules and views are pvesim/cluster's, a
// certificate's fingerprint pvesim/nodecert's. Pvecm (pvecm.go) is the
// lab's pvecm create, add (addnode, finish_join, or both), expected and
// status, for the Go API (pvesim.Sim) and the control API.
package clustersim

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/cluster"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/corosync"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guests"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/nodecert"
)

// backend serves the cluster and node endpoints on the core's state.
type backend struct {
	guests.Model
	joins *joinLocks
}

// Register adds the cluster and node endpoints to s.
func Register(s *core.Sim) {
	b := &backend{Model: guests.New(s), joins: &joinLocks{m: map[string]*sync.Mutex{}}}
	s.Handle(b.clusterRoutes())
	s.Handle(b.nodeRoutes())
	registerPvecm(s)
}

func (s *backend) getClusterStatus(rc *core.Req) (any, error) {
	db := rc.DB()
	if db.Corosync == nil {
		return cluster.StandaloneStatus(rc.Node, s.State.Nodes[rc.Node].Addr), nil
	}
	return cluster.Status(db.Corosync, rc.Node, s.QuorateOnLocked(db, rc.Node),
		func(name string) bool { return s.VotesForLocked(db, name) }, s.nodeAddrLocked), nil
}

// nodeAddrLocked is a member's address: the lab node's, or its ring0
// address for a nodelist entry added by hand that names no lab node.
func (s *backend) nodeAddrLocked(m *corosync.Node) string {
	if n := s.State.Nodes[m.Name]; n != nil {
		return n.Addr
	}
	return m.Links["ring0_addr"]
}

func (s *backend) getClusterConfigIndex(rc *core.Req) (any, error) {
	out := []map[string]any{}
	for _, n := range []string{"apiversion", "join", "nodes", "qdevice", "totem"} {
		out = append(out, map[string]any{"name": n})
	}
	return out, nil
}

// linksOf collects a request's link0..link7 (cluster.Links).
func linksOf(rc *core.Req, defAddr string) map[string]string {
	return cluster.Links(func(i int) string { return rc.Str(fmt.Sprintf("link%d", i)) }, defAddr)
}

// linksGiven tells whether the request names any linkN.
func linksGiven(rc *core.Req) bool {
	for i := 0; i <= 7; i++ {
		if rc.Str(fmt.Sprintf("link%d", i)) != "" {
			return true
		}
	}
	return false
}

// POST /cluster/config: root@pam ticket only (enforced by the schema's
// missing permissions); a task on this node; quorate shortly after it ends.
func (s *backend) postClusterCreate(rc *core.Req) (any, error) {
	db := rc.DB()
	if db.Corosync != nil {
		return nil, fmt.Errorf("cluster config '/etc/pve/corosync.conf' already exists")
	}
	name := rc.Str("clustername")
	node := rc.Node
	self := s.State.Nodes[node]
	c := &corosync.Conf{ClusterName: name, ConfigVersion: 1, Nodes: []*corosync.Node{{
		Name: node, NodeID: rc.Int("nodeid", 1), Votes: rc.Int("votes", 1), Links: linksOf(rc, self.Addr),
	}}}
	if s.Version() >= 9 {
		c.TokenCoefficient = rc.Int("token-coefficient", 125)
	}
	// corosync.conf is written at once (a second create fails), but corosync
	// only counts once the worker finished and the service restarted.
	db.Corosync = c
	self.CorosyncUpAt = time.Now().Add(24 * time.Hour).UnixMilli()
	db.Serial++
	upid := s.StartTaskLocked(rc, node, "clustercreate", name, func(t *core.TaskRun) string {
		t.Logf("Writing corosync key to /etc/corosync/authkey.")
		t.Logf("Writing corosync config to /etc/pve/corosync.conf")
		t.Logf("Restart corosync and cluster filesystem")
		if !s.Sleep(s.Cfg.Dur(s.Cfg.TaskDuration, core.DefaultTaskDuration)) {
			return "unexpected status"
		}
		settle := s.Cfg.Dur(s.Cfg.TaskDuration, core.DefaultTaskDuration) / 2
		t.Commit(func() { self.CorosyncUpAt = time.Now().Add(settle).UnixMilli() })
		return ""
	})
	s.SaveLocked()
	return upid, nil
}

func (s *backend) getTotem(rc *core.Req) (any, error) {
	db := rc.DB()
	if db.Corosync == nil {
		return map[string]any{}, nil
	}
	return corosync.Totem(db.Corosync), nil
}

// GET /cluster/config/join: 424 on a standalone node; corosync values are
// strings; pve_fp is each member's current certificate fingerprint.
func (s *backend) getJoinInfo(rc *core.Req) (any, error) {
	db := rc.DB()
	if db.Corosync == nil {
		return nil, core.ErrStatus(424, "node is not in a cluster, no join info available!")
	}
	var asked *string
	if rc.Has("node") {
		node := rc.Str("node")
		asked = &node
	}
	return cluster.JoinInfo(db.Corosync, rc.Node, asked, s.nodeAddrLocked,
		func(node string) (string, error) { return nodecert.NodeFingerprint(s.EtcPveDirOfDB(db.ID), node) })
}

func (s *backend) getClusterNodes(rc *core.Req) (any, error) {
	return cluster.Nodelist(rc.DB().Corosync), nil
}

// findNodeLocked resolves a join's hostname: a node name or its address.
func (s *backend) findNodeLocked(host string) *core.Node {
	for _, n := range s.State.Nodes {
		if n.Name == host || n.Addr == host || n.Name+".lab" == host {
			return n
		}
	}
	return nil
}

// POST /cluster/config/join, sent to the joining node (C4, C5, C6).
func (s *backend) postJoin(rc *core.Req) (any, error) {
	joiner := rc.Node
	p := struct {
		host, fp, password string
		force, explicit    bool
		nodeid, votes      int
		links              map[string]string
	}{rc.Str("hostname"), rc.Str("fingerprint"), rc.Str("password"), rc.Bool("force"), linksGiven(rc),
		rc.Int("nodeid", 0), rc.Int("votes", -1), linksOf(rc, s.State.Nodes[joiner].Addr)}
	upid := s.StartTaskLocked(rc, joiner, "clusterjoin", "", func(t *core.TaskRun) string {
		return s.joinWorker(t, joiner, p.host, p.fp, p.password, p.force, p.explicit, p.nodeid, p.votes, p.links)
	})
	return upid, nil
}

func (s *backend) joinWorker(t *core.TaskRun, joiner, host, fp, password string, force, explicitLinks bool, nodeid, votes int, links map[string]string) string {
	lockTimeout := s.Cfg.Dur(s.Cfg.LockTimeout, core.DefaultLockTimeout)
	step := s.Cfg.Dur(s.Cfg.TaskDuration, core.DefaultTaskDuration) / 4

	// The joiner's own /var/lock/pvecm.lock.
	local := s.joinLock("local:" + joiner)
	if !s.lockWithTimeout(local, lockTimeout) {
		return "can't lock file '/var/lock/pvecm.lock' - got timeout"
	}
	defer local.Unlock()

	s.Mu.Lock()
	if reasons := joinableLocked(s.Sim, joiner, links); len(reasons) > 0 && !force {
		s.Mu.Unlock()
		t.Logf("detected the following error(s):")
		for _, r := range reasons {
			t.Logf("* %s", r)
		}
		return "Check if node may join a cluster failed!"
	}
	h := s.findNodeLocked(host)
	s.Mu.Unlock()
	t.Logf("Establishing API connection with host '%s'", host)
	if !s.Sleep(step) {
		return "unexpected status"
	}

	s.Mu.Lock()
	if h == nil || !h.Online || h.Restarting() {
		s.Mu.Unlock()
		return fmt.Sprintf("500 Can't connect to %s:%d (Connection refused)", host, s.Cfg.Port)
	}
	hostFP, _ := s.FingerprintLocked(h.Name)
	if !strings.EqualFold(hostFP, fp) {
		s.Mu.Unlock()
		return fmt.Sprintf("500 Can't connect to %s:%d (certificate fingerprint mismatch: got %s)", host, s.Cfg.Port, hostFP)
	}
	if password != s.State.RootPassword {
		s.Mu.Unlock()
		return "401 authentication failure"
	}
	hdb := s.State.DBs[h.DB]
	if hdb.Corosync == nil {
		s.Mu.Unlock()
		return "500 Corosync config '/etc/pve/corosync.conf' does not exist - is this node part of a cluster?"
	}
	s.Mu.Unlock()
	t.Logf("Login succeeded.")
	t.Logf("check cluster join API version")

	// The member's pvecm.lock + cfs lock on corosync.conf serialise the
	// addnode halves of joins (C4), not their finish (join.go).
	cl := s.joinLock(hdb.ID)
	if !s.lockWithTimeout(cl, lockTimeout) {
		return "500 can't lock file '/var/lock/pvecm.lock' - got timeout"
	}
	t.Logf("Request addition of this node")
	s.Mu.Lock()
	msg := addnodeLocked(s.Sim, hdb, joiner, nodeid, votes, links, explicitLinks, force)
	s.Mu.Unlock()
	cl.Unlock()
	if msg != "" {
		// Setup.pm join: the member's answer, then "Cluster join aborted!"
		t.Logf("An error occurred on the cluster node: %s", msg)
		return "Cluster join aborted!"
	}
	t.Logf("Join request OK, finishing setup locally")
	return finishJoinHalf(s.Sim, joiner, hdb.ID, s.Cfg.Dur(s.Cfg.RestartWindow, core.DefaultRestartWindow), t.Logf)
}

// DELETE /cluster/config/nodes/{node} is PVE's delnode (C9), sent to a
// remaining member: it only edits the cluster's corosync.conf and stops the
// removed node's corosync (corosync-cfgtool -k). Nothing in the API makes
// the removed node standalone again: it keeps its copy of /etc/pve with the
// old corosync.conf, without quorum, and assert_joinable refuses it until it
// is reinstalled (or cleaned by hand, as PVE's docs describe).
func (s *backend) deleteClusterNode(rc *core.Req) (any, error) {
	victim := rc.Str("node")
	if victim == rc.Node {
		//lint:ignore ST1005 PVE's own message, as pvecm delnode prints it
		return nil, fmt.Errorf("Cannot delete myself from cluster!")
	}
	db := rc.DB()
	if err := s.RequireQuorumLocked(db); err != nil {
		return nil, err
	}
	m := cluster.DelnodeTarget(db.Corosync, victim)
	if m == nil {
		//lint:ignore ST1005 PVE's own message, as pvecm delnode prints it
		return nil, fmt.Errorf("Node/IP: %s is not a known host of the cluster.", victim)
	}
	n := s.State.Nodes[m.Name]
	if n != nil && n.DB == db.ID {
		stale, err := detachedCopyLocked(s.Sim, db)
		if err != nil {
			return nil, err
		}
		n.DB = stale.ID
	}
	db.Corosync.Nodes = cluster.RemoveMember(db.Corosync.Nodes, m.Name)
	db.Corosync.ConfigVersion++
	db.Serial++
	s.SaveLocked()
	return nil, nil
}

// clusterRoutes are the cluster's create, join and membership endpoints.
func (s *backend) clusterRoutes() map[string]core.Handler {
	return map[string]core.Handler{
		"GET /cluster/status":                 s.getClusterStatus,
		"GET /cluster/config":                 s.getClusterConfigIndex,
		"POST /cluster/config":                s.postClusterCreate,
		"GET /cluster/config/join":            s.getJoinInfo,
		"POST /cluster/config/join":           s.postJoin,
		"GET /cluster/config/nodes":           s.getClusterNodes,
		"DELETE /cluster/config/nodes/{node}": s.deleteClusterNode,
		"GET /cluster/config/totem":           s.getTotem,
	}
}
