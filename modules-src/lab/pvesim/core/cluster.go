package core

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/cluster"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/corosync"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/nodecert"
)

// MemberUpLocked: the node runs, its API is not mid-restart and its
// corosync has started.
func (s *Sim) MemberUpLocked(name string) bool {
	n := s.State.Nodes[name]
	return n != nil && n.Online && !n.restarting && n.CorosyncUpAt <= time.Now().UnixMilli()
}

// votesForLocked: name is up and runs db's corosync configuration. A node
// the primary's addnode has listed but whose finish_join has not started
// corosync with the cluster's configuration (Setup.pm finish_join) is in
// the nodelist, its vote expected, yet it is not there: it counts as
// offline, as corosync shows such a node.
func (s *Sim) votesForLocked(db *ConfigDB, name string) bool {
	n := s.State.Nodes[name]
	return n != nil && n.DB == db.ID && !db.Detached && s.MemberUpLocked(name)
}

// QuorateLocked is cluster.Quorate for db: a copy left on a node removed
// from its cluster (Detached) never is.
func (s *Sim) QuorateLocked(db *ConfigDB) bool {
	if db.Corosync != nil && db.Detached {
		return false
	}
	return cluster.Quorate(db.Corosync, func(name string) bool { return s.votesForLocked(db, name) })
}

// quorateOnLocked is quorum as node's own pmxcfs reports it (.members,
// /cluster/status): its corosync's votequorum (pve-cluster quorum.c
// quorum_notification_fn), so a node whose corosync does not run with db's
// configuration (a join not finished, corosync not started yet) says not
// quorate, whatever the members that run it see (quorum.c
// service_quorum_finalize sets 0 when pmxcfs has no corosync).
func (s *Sim) quorateOnLocked(db *ConfigDB, node string) bool {
	return s.QuorateLocked(db) && (db.Corosync == nil || s.votesForLocked(db, node))
}

// CfsWriteLocked mirrors cfs_lock_file on a read-only /etc/pve: the lock
// attempt spins for the lock timeout, then dies "no quorum!", wrapped by
// the caller's message (e.g. "create storage failed"), if it gives one.
func (s *Sim) CfsWriteLocked(db *ConfigDB, file, errmsg string) *APIError {
	if s.QuorateLocked(db) {
		return nil
	}
	msg := fmt.Sprintf("cfs-lock 'file-%s' error: no quorum!", strings.ReplaceAll(file, ".", "_"))
	if errmsg != "" {
		msg = errmsg + ": " + msg
	}
	e := ErrStatus(500, "%s", msg)
	e.wait = s.Cfg.Dur(s.Cfg.LockTimeout, DefaultLockTimeout)
	return e
}

// RequireQuorumLocked is check_cfs_quorum, used by cluster-wide writes.
func (s *Sim) RequireQuorumLocked(db *ConfigDB) error {
	if !s.QuorateLocked(db) {
		return fmt.Errorf("cluster not ready - no quorum?")
	}
	return nil
}

func (s *Sim) getClusterStatus(rc *Req) (any, error) {
	db := rc.DB()
	if db.Corosync == nil {
		return cluster.StandaloneStatus(rc.Node, s.State.Nodes[rc.Node].Addr), nil
	}
	return cluster.Status(db.Corosync, rc.Node, s.quorateOnLocked(db, rc.Node),
		func(name string) bool { return s.votesForLocked(db, name) }, s.nodeAddrLocked), nil
}

// certFingerprintLocked is PVE::Cluster::get_node_fingerprint: the SHA-256
// of nodes/<node>/pveproxy-ssl.pem, else pve-ssl.pem, as /etc/pve holds it.
func (s *Sim) certFingerprintLocked(db *ConfigDB, node string) (string, error) {
	dir := filepath.Join(s.etcPveDir(db.ID), "nodes", node)
	p := filepath.Join(dir, "pveproxy-ssl.pem")
	if _, err := os.Stat(p); err != nil {
		p = filepath.Join(dir, "pve-ssl.pem")
	}
	b, err := os.ReadFile(p)
	if err != nil {
		// PVE::Tools::file_get_contents's words.
		return "", fmt.Errorf("can't open '/etc/pve/nodes/%s/%s' - No such file or directory", node, filepath.Base(p))
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return "", fmt.Errorf("unable to read certificate from '/etc/pve/nodes/%s/%s'", node, filepath.Base(p))
	}
	return nodecert.Fingerprint(block.Bytes), nil
}

// nodeAddrLocked is a member's address: the lab node's, or its ring0
// address for a nodelist entry added by hand that names no lab node.
func (s *Sim) nodeAddrLocked(m *corosync.Node) string {
	if n := s.State.Nodes[m.Name]; n != nil {
		return n.Addr
	}
	return m.Links["ring0_addr"]
}

func BoolNum(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (s *Sim) getClusterConfigIndex(rc *Req) (any, error) {
	out := []map[string]any{}
	for _, n := range []string{"apiversion", "join", "nodes", "qdevice", "totem"} {
		out = append(out, map[string]any{"name": n})
	}
	return out, nil
}

// linksOf collects a request's link0..link7 (cluster.Links).
func linksOf(rc *Req, defAddr string) map[string]string {
	return cluster.Links(func(i int) string { return rc.Str(fmt.Sprintf("link%d", i)) }, defAddr)
}

// linksGiven tells whether the request names any linkN.
func linksGiven(rc *Req) bool {
	for i := 0; i <= 7; i++ {
		if rc.Str(fmt.Sprintf("link%d", i)) != "" {
			return true
		}
	}
	return false
}

// POST /cluster/config: root@pam ticket only (enforced by the schema's
// missing permissions); a task on this node; quorate shortly after it ends.
func (s *Sim) postClusterCreate(rc *Req) (any, error) {
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
	if s.Cfg.Version >= 9 {
		c.TokenCoefficient = rc.Int("token-coefficient", 125)
	}
	// corosync.conf is written at once (a second create fails), but corosync
	// only counts once the worker finished and the service restarted.
	db.Corosync = c
	self.CorosyncUpAt = time.Now().Add(24 * time.Hour).UnixMilli()
	db.Serial++
	upid := s.StartTaskLocked(rc, node, "clustercreate", name, func(t *TaskRun) string {
		t.Logf("Writing corosync key to /etc/corosync/authkey.")
		t.Logf("Writing corosync config to /etc/pve/corosync.conf")
		t.Logf("Restart corosync and cluster filesystem")
		if !s.Sleep(s.Cfg.Dur(s.Cfg.TaskDuration, DefaultTaskDuration)) {
			return "unexpected status"
		}
		settle := s.Cfg.Dur(s.Cfg.TaskDuration, DefaultTaskDuration) / 2
		t.Commit(func() { self.CorosyncUpAt = time.Now().Add(settle).UnixMilli() })
		return ""
	})
	s.SaveLocked()
	return upid, nil
}

func (s *Sim) getTotem(rc *Req) (any, error) {
	db := rc.DB()
	if db.Corosync == nil {
		return map[string]any{}, nil
	}
	return corosync.Totem(db.Corosync), nil
}

// GET /cluster/config/join: 424 on a standalone node; corosync values are
// strings; pve_fp is each member's current certificate fingerprint.
func (s *Sim) getJoinInfo(rc *Req) (any, error) {
	db := rc.DB()
	if db.Corosync == nil {
		return nil, ErrStatus(424, "node is not in a cluster, no join info available!")
	}
	var asked *string
	if rc.Has("node") {
		node := rc.Str("node")
		asked = &node
	}
	return cluster.JoinInfo(db.Corosync, rc.Node, asked, s.nodeAddrLocked,
		func(node string) (string, error) { return s.certFingerprintLocked(db, node) })
}

func (s *Sim) getClusterNodes(rc *Req) (any, error) {
	return cluster.Nodelist(rc.DB().Corosync), nil
}

// findNodeLocked resolves a join's hostname: a node name or its address.
func (s *Sim) findNodeLocked(host string) *Node {
	for _, n := range s.State.Nodes {
		if n.Name == host || n.Addr == host || n.Name+".lab" == host {
			return n
		}
	}
	return nil
}

// joinLock returns the named lock; callers must not hold s.mu.
func (s *Sim) joinLock(dbID string) *sync.Mutex {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	if s.joinLocks[dbID] == nil {
		s.joinLocks[dbID] = &sync.Mutex{}
	}
	return s.joinLocks[dbID]
}

// lockWithTimeout tries to take m within d.
func (s *Sim) lockWithTimeout(m *sync.Mutex, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if m.TryLock() {
			return true
		}
		if time.Now().After(deadline) || !s.Sleep(20*time.Millisecond) {
			return false
		}
	}
}

// joinableLocked is assert_joinable for node (cluster.JoinableReasons).
func (s *Sim) joinableLocked(node string, links map[string]string) []string {
	db := s.DBOf(node)
	return cluster.JoinableReasons(cluster.Joiner{
		Name: node, Addr: s.State.Nodes[node].Addr,
		InCluster: db.Corosync != nil, HasGuests: len(s.VMListLocked(db)) > 0,
	}, links)
}

// POST /cluster/config/join, sent to the joining node (C4, C5, C6).
func (s *Sim) postJoin(rc *Req) (any, error) {
	joiner := rc.Node
	p := struct {
		host, fp, password string
		force, explicit    bool
		nodeid, votes      int
		links              map[string]string
	}{rc.Str("hostname"), rc.Str("fingerprint"), rc.Str("password"), rc.Bool("force"), linksGiven(rc),
		rc.Int("nodeid", 0), rc.Int("votes", -1), linksOf(rc, s.State.Nodes[joiner].Addr)}
	upid := s.StartTaskLocked(rc, joiner, "clusterjoin", "", func(t *TaskRun) string {
		return s.joinWorker(t, joiner, p.host, p.fp, p.password, p.force, p.explicit, p.nodeid, p.votes, p.links)
	})
	return upid, nil
}

func (s *Sim) joinWorker(t *TaskRun, joiner, host, fp, password string, force, explicitLinks bool, nodeid, votes int, links map[string]string) string {
	lockTimeout := s.Cfg.Dur(s.Cfg.LockTimeout, DefaultLockTimeout)
	step := s.Cfg.Dur(s.Cfg.TaskDuration, DefaultTaskDuration) / 4

	// The joiner's own /var/lock/pvecm.lock.
	local := s.joinLock("local:" + joiner)
	if !s.lockWithTimeout(local, lockTimeout) {
		return "can't lock file '/var/lock/pvecm.lock' - got timeout"
	}
	defer local.Unlock()

	s.Mu.Lock()
	if reasons := s.joinableLocked(joiner, links); len(reasons) > 0 && !force {
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
	if h == nil || !h.Online || h.restarting {
		s.Mu.Unlock()
		return fmt.Sprintf("500 Can't connect to %s:%d (Connection refused)", host, s.Cfg.Port)
	}
	hostFP := s.nodes[h.Name].cert.Fingerprint
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
	msg := s.addnodeLocked(hdb, joiner, nodeid, votes, links, explicitLinks, force)
	s.Mu.Unlock()
	cl.Unlock()
	if msg != "" {
		// Setup.pm join: the member's answer, then "Cluster join aborted!"
		t.Logf("An error occurred on the cluster node: %s", msg)
		return "Cluster join aborted!"
	}
	t.Logf("Join request OK, finishing setup locally")
	return s.finishJoin(joiner, hdb.ID, s.Cfg.Dur(s.Cfg.RestartWindow, DefaultRestartWindow), t.Logf)
}

// DELETE /cluster/config/nodes/{node} is PVE's delnode (C9), sent to a
// remaining member: it only edits the cluster's corosync.conf and stops the
// removed node's corosync (corosync-cfgtool -k). Nothing in the API makes
// the removed node standalone again: it keeps its copy of /etc/pve with the
// old corosync.conf, without quorum, and assert_joinable refuses it until it
// is reinstalled (or cleaned by hand, as PVE's docs describe).
func (s *Sim) deleteClusterNode(rc *Req) (any, error) {
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
		stale, err := s.detachedCopyLocked(db)
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

// detachedCopyLocked copies db (with its root CA, which signed the removed
// node's certificate) as the stale /etc/pve of a node removed by delnode.
func (s *Sim) detachedCopyLocked(db *ConfigDB) (*ConfigDB, error) {
	raw, err := json.Marshal(db)
	if err != nil {
		return nil, fmt.Errorf("copy /etc/pve for the removed node: %w", err)
	}
	var stale ConfigDB
	if err := json.Unmarshal(raw, &stale); err != nil {
		return nil, fmt.Errorf("copy /etc/pve for the removed node: %w", err)
	}
	stale.ID = db.ID + "-detached-" + RandomHex(2)
	stale.Detached = true
	for _, ext := range []string{".pem", ".key"} {
		b, err := os.ReadFile(filepath.Join(nodecert.CADir(s.Cfg.Dir), db.ID+ext))
		if err != nil {
			if os.IsNotExist(err) {
				continue // no CA issued yet: the copy creates its own on demand
			}
			return nil, fmt.Errorf("copy the cluster CA for the removed node: %w", err)
		}
		if err := os.WriteFile(filepath.Join(nodecert.CADir(s.Cfg.Dir), stale.ID+ext), b, 0o600); err != nil {
			return nil, fmt.Errorf("copy the cluster CA for the removed node: %w", err)
		}
	}
	if err := copyEtcPve(s.etcPveDir(db.ID), s.etcPveDir(stale.ID)); err != nil {
		return nil, fmt.Errorf("copy /etc/pve for the removed node: %w", err)
	}
	for k, v := range s.written {
		if rest, ok := strings.CutPrefix(k, db.ID+"\x00"); ok {
			s.written[fileKey(stale.ID, rest)] = v
		}
	}
	s.State.DBs[stale.ID] = &stale
	return &stale, nil
}

// clusterRoutes are the cluster's create, join and membership endpoints.
func (s *Sim) clusterRoutes() map[string]Handler {
	return map[string]Handler{
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
