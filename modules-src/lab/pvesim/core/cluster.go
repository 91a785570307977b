package core

import (
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/cluster"
)

// MemberUpLocked: the node runs, its API is not mid-restart and its
// corosync has started.
func (s *Sim) MemberUpLocked(name string) bool {
	n := s.State.Nodes[name]
	return n != nil && n.Online && !n.restarting && n.CorosyncUpAt <= time.Now().UnixMilli()
}

// VotesForLocked: name is up and runs db's corosync configuration. A node
// the primary's addnode has listed but whose finish_join has not started
// corosync with the cluster's configuration (Setup.pm finish_join) is in
// the nodelist, its vote expected, yet it is not there: it counts as
// offline, as corosync shows such a node.
func (s *Sim) VotesForLocked(db *ConfigDB, name string) bool {
	n := s.State.Nodes[name]
	return n != nil && n.DB == db.ID && !db.Detached && s.MemberUpLocked(name)
}

// QuorateLocked is cluster.Quorate for db: a copy left on a node removed
// from its cluster (Detached) never is.
func (s *Sim) QuorateLocked(db *ConfigDB) bool {
	if db.Corosync != nil && db.Detached {
		return false
	}
	return cluster.Quorate(db.Corosync, func(name string) bool { return s.VotesForLocked(db, name) })
}

// QuorateOnLocked is quorum as node's own pmxcfs reports it (.members,
// /cluster/status): its corosync's votequorum (pve-cluster quorum.c
// quorum_notification_fn), so a node whose corosync does not run with db's
// configuration (a join not finished, corosync not started yet) says not
// quorate, whatever the members that run it see (quorum.c
// service_quorum_finalize sets 0 when pmxcfs has no corosync).
func (s *Sim) QuorateOnLocked(db *ConfigDB, node string) bool {
	return s.QuorateLocked(db) && (db.Corosync == nil || s.VotesForLocked(db, node))
}

// CfsWriteLocked mirrors cfs_lock_file on a read-only /etc/pve: the
// answer, cluster.CfsLockNoQuorum, comes after the lock timeout.
func (s *Sim) CfsWriteLocked(db *ConfigDB, file, errmsg string) *APIError {
	if s.QuorateLocked(db) {
		return nil
	}
	e := ErrStatus(500, "%s", cluster.CfsLockNoQuorum(file, errmsg))
	e.wait = s.Cfg.Dur(s.Cfg.LockTimeout, DefaultLockTimeout)
	return e
}

// RequireQuorumLocked is check_cfs_quorum, used by cluster-wide writes.
func (s *Sim) RequireQuorumLocked(db *ConfigDB) error {
	return cluster.CheckCfsQuorum(s.QuorateLocked(db))
}
