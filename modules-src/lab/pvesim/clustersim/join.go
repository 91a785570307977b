// The join: its two halves, what they do to the joiner's node and /etc/pve
// (C5), and delnode's stale copy of a removed node's /etc/pve.
package clustersim

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/cluster"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/etcpvefs"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/nodecert"
)

// A join is two halves on two nodes, as pve-cluster does it:
//
//  1. addnode, on the member the joiner contacts (API2/ClusterConfig.pm
//     `addnode`, under the corosync.conf cfs lock, after check_cfs_quorum):
//     the joiner is appended to the nodelist of corosync.conf, its
//     /etc/pve/nodes/<name>/ directories are made (gen_local_dirs), and the
//     cluster's corosync.conf and authkey are returned. From now on the
//     cluster expects the joiner's vote, which it does not get yet: a
//     one-node cluster is 1 of 2 votes, not quorate, until the joiner
//     finishes (core.VotesForLocked).
//  2. finish_join, on the joiner (Cluster/Setup.pm `finish_join`): write
//     the local corosync.conf and authkey, stop pve-cluster, back up and
//     drop the node's own database, start corosync and pve-cluster, wait
//     for quorum, then updatecerts_and_ssh: only here is
//     nodes/<joiner>/pve-ssl.pem written into the cluster's /etc/pve. Until
//     then the join information (ClusterConfig.pm `join_info`, which calls
//     get_node_fingerprint for every nodelist entry) dies with
//     file_get_contents' "can't open" for the joiner's certificate.
//
// The corosync.conf lock is held for the first half only (config_change_lock
// wraps addnode's code, not finish_join): a second join can be accepted while
// the first is still finishing, which is why joins must be run one at a
// time (C4).
//
// A finish-join fault on the joiner makes the second half fail after the
// node's own database is gone and before corosync runs with the cluster's
// configuration ("starting pve-cluster failed", the run_command errmsg of
// finish_join): the member lists the joiner, which never comes online. The
// joiner's API keeps answering from the cluster's configuration without
// quorum of its own (reconstruction: on real PVE the local pmxcfs may not
// even be up; the lab keeps the node readable so the state can be seen).

// DefaultFinishJoinError is finish_join's errmsg when corosync and
// pve-cluster do not start, as run_command words it.
const DefaultFinishJoinError = "starting pve-cluster failed: command 'systemctl start corosync pve-cluster' failed: exit code 1"

// addnodeLocked is the member's half: it returns PVE's error text, or "".
// nodeid 0 and votes < 0 are not given (cluster.NewMember).
func addnodeLocked(s *core.Sim, mdb *core.ConfigDB, joiner string, nodeid, votes int, links map[string]string, explicit, force bool) string {
	if err := s.RequireQuorumLocked(mdb); err != nil {
		return err.Error()
	}
	member, msg := cluster.NewMember(mdb.Corosync, joiner, nodeid, votes, links, explicit, force)
	if msg != "" {
		return msg
	}
	for _, sub := range cluster.LocalDirs {
		if err := os.MkdirAll(filepath.Join(s.EtcPveDirOfDB(mdb.ID), "nodes", joiner, sub), 0o755); err != nil {
			return fmt.Sprintf("creating /etc/pve/nodes/%s/%s: %v", joiner, sub, err)
		}
	}
	cluster.Append(mdb.Corosync, member)
	mdb.Serial++
	s.SaveLocked()
	return ""
}

// finishJoinHalf is the joiner's half; logf prints finish_join's lines (never
// called with s.Mu held: a task's log takes it) and restart is how long its
// services are down. It returns the error finish_join dies with, or "".
func finishJoinHalf(s *core.Sim, joiner, clusterDB string, restart time.Duration, logf func(string, ...any)) string {
	s.Mu.Lock()
	j := s.State.Nodes[joiner]
	cdb := s.State.DBs[clusterDB]
	if j == nil || cdb == nil || cdb.Corosync == nil || cdb.Corosync.Member(joiner) == nil {
		s.Mu.Unlock()
		return fmt.Sprintf("node %s is not listed in the cluster it joins", joiner)
	}
	fault := s.Faults().TakeKind(joiner, core.FaultFinishJoin)
	// The joiner's own database is gone from here on (cfs_unlink_db_unsafe):
	// its storage.cfg, tokens and tickets with it (S1, Z7).
	if old := j.DB; old != cdb.ID {
		j.DB = cdb.ID
		s.DropDBLocked(old)
	}
	j.FinishPending = true
	j.CorosyncUpAt = time.Now().Add(24 * time.Hour).UnixMilli()
	if fault == nil {
		s.StopAPILocked(joiner)
	}
	s.SaveLocked()
	s.Mu.Unlock()
	logf("stopping pve-cluster service")
	logf("backup old database to '/var/lib/pve-cluster/backup/config-%d.sql.gz'", time.Now().Unix())
	if fault != nil {
		if fault.Message != "" {
			return fault.Message
		}
		return DefaultFinishJoinError
	}

	if !s.Sleep(restart) {
		return "unexpected status"
	}

	logf("waiting for quorum...OK")
	logf("(re)generate node files")
	logf("generate new node certificate")
	s.Mu.Lock()
	j.CorosyncUpAt = time.Now().UnixMilli()
	j.CertGen++
	ca, err := s.CALocked(j.DB)
	var cert *nodecert.Cert
	if err == nil {
		cert, err = nodecert.LoadOrCreate(s.Cfg.Dir, joiner, j.Addr, j.CertGen, ca)
	}
	if err != nil {
		s.StartAPILocked(joiner, nil)
		s.SaveLocked()
		s.Mu.Unlock()
		return "unable to generate pve certificate: " + err.Error()
	}
	j.FinishPending = false
	s.StartAPILocked(joiner, cert)
	s.SaveLocked()
	s.Mu.Unlock()
	logf("merge authorized SSH keys")
	logf("generated new node certificate, restart pveproxy and pvedaemon services")
	logf("successfully added node '%s' to cluster.", joiner)
	return ""
}

// AddNodeEntry is the member's half alone, as `pvecm addnode` does it (what
// `pvecm add --use_ssh` runs on the member over SSH).
func (p Pvecm) AddNodeEntry(member, joiner, link0 string, force bool) (core.ClusterInfo, error) {
	s := p.s
	s.Mu.Lock()
	defer s.Mu.Unlock()
	mdb := s.DBOf(member)
	j := s.State.Nodes[joiner]
	if mdb == nil || j == nil {
		return core.ClusterInfo{}, &core.NotFoundError{Msg: fmt.Sprintf("no node %q or %q in this lab", member, joiner)}
	}
	if mdb.Corosync == nil {
		return core.ClusterInfo{}, &core.NotFoundError{Msg: "Corosync config '/etc/pve/corosync.conf' does not exist - is this node part of a cluster?"}
	}
	addr := j.Addr
	if link0 != "" {
		addr = cluster.LinkAddr(link0)
	}
	if reasons := joinableLocked(s, joiner, map[string]string{"ring0_addr": addr}); len(reasons) > 0 && !force {
		return core.ClusterInfo{}, &core.ConflictError{Msg: "detected the following error(s):\n* " + strings.Join(reasons, "\n* ") + "\nCheck if node may join a cluster failed!"}
	}
	if msg := addnodeLocked(s, mdb, joiner, 0, -1, map[string]string{"ring0_addr": addr}, link0 != "", force); msg != "" {
		return core.ClusterInfo{}, &core.ConflictError{Msg: msg}
	}
	info, _ := s.ClusterLocked(member)
	return info, nil
}

// FinishJoin is the joiner's half alone (what `pvecm add` does after the
// member accepted it): node finishes joining the cluster that lists it.
// The returned error is finish_join's.
func (p Pvecm) FinishJoin(node string, logf func(string, ...any)) (core.ClusterInfo, error) {
	return p.finishJoinOf(node, p.s.Cfg.Dur(p.s.Cfg.RestartWindow, core.DefaultRestartWindow), logf)
}

func (p Pvecm) finishJoinOf(node string, restart time.Duration, logf func(string, ...any)) (core.ClusterInfo, error) {
	s := p.s
	s.Mu.Lock()
	var db *core.ConfigDB
	for _, id := range slices.Sorted(maps.Keys(s.State.DBs)) {
		d := s.State.DBs[id]
		if d.Corosync != nil && d.Corosync.Member(node) != nil && !d.Detached {
			db = d
			break
		}
	}
	s.Mu.Unlock()
	if db == nil {
		return core.ClusterInfo{}, &core.NotFoundError{Msg: fmt.Sprintf("no cluster lists node %q", node)}
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if msg := finishJoinHalf(s, node, db.ID, restart, logf); msg != "" {
		return core.ClusterInfo{}, &core.ConflictError{Msg: msg}
	}
	s.Mu.Lock()
	defer s.Mu.Unlock()
	info, _ := s.ClusterLocked(node)
	return info, nil
}

// AddNode is a whole join at once, both halves (test and lab set-up): joiner
// becomes a member of member's cluster, its /etc/pve replaced and its
// certificate regenerated (C5, C6).
func (p Pvecm) AddNode(member, joiner, link0 string, force bool) (core.ClusterInfo, error) {
	if _, err := p.AddNodeEntry(member, joiner, link0, force); err != nil {
		return core.ClusterInfo{}, err
	}
	return p.finishJoinOf(joiner, 0, nil)
}

// joinableLocked is assert_joinable for node (cluster.JoinableReasons).
func joinableLocked(s *core.Sim, node string, links map[string]string) []string {
	db := s.DBOf(node)
	return cluster.JoinableReasons(cluster.Joiner{
		Name: node, Addr: s.State.Nodes[node].Addr,
		InCluster: db.Corosync != nil, HasGuests: len(s.VMListLocked(db)) > 0,
	}, links)
}

// detachedCopyLocked copies db (with its root CA, which signed the removed
// node's certificate) as the stale /etc/pve of a node removed by delnode.
func detachedCopyLocked(s *core.Sim, db *core.ConfigDB) (*core.ConfigDB, error) {
	raw, err := json.Marshal(db)
	if err != nil {
		return nil, fmt.Errorf("copy /etc/pve for the removed node: %w", err)
	}
	var stale core.ConfigDB
	if err := json.Unmarshal(raw, &stale); err != nil {
		return nil, fmt.Errorf("copy /etc/pve for the removed node: %w", err)
	}
	stale.ID = db.ID + "-detached-" + core.RandomHex(2)
	stale.Detached = true
	if err := nodecert.CopyCA(s.Cfg.Dir, db.ID, stale.ID); err != nil {
		return nil, err
	}
	if err := etcpvefs.CopyTree(s.EtcPveDirOfDB(db.ID), s.EtcPveDirOfDB(stale.ID)); err != nil {
		return nil, fmt.Errorf("copy /etc/pve for the removed node: %w", err)
	}
	s.CopyWrittenLocked(db.ID, stale.ID)
	s.State.DBs[stale.ID] = &stale
	return &stale, nil
}
