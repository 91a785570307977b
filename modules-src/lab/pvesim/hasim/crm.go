package hasim

import (
	"strconv"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/ha"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// The CRM, as pve-ha-manager's src/PVE/HA/Manager.pm runs it, on the lab's
// clock: its decisions (placement, a round's step for each service, recovery,
// the groups' migration) are pvesim/ha's, the timers and what they do to
// guests are here. A round (Config.HADelay, PVE: 10 s, CRM.pm $max_time)
// after any HA change, HA request or node event, every managed guest is
// brought to its requested state and placed where select_service_node puts
// it: a started service whose node is not among the highest-priority online
// nodes of its node-affinity rule (9) or group (8) migrates there (VM: online
// migrate; CT: relocate, stop–move–start), unless failback is off and its
// node is allowed (next_state_started, select_service_node 'none'). A service
// in error stays where it is until disabled (next_state_error).
//
// A node that goes down (SetOnline, the lab's power-off) is fenced
// FenceDelay later (NodeStatus.pm $fence_delay = 60 s; the agent lock's
// expiry, pmxcfs CFS_LOCK_TIMEOUT 120 s after the dead LRM's last refresh,
// is not modelled separately: seed 003 measured 1 min 14 s from power-off
// to the guest running elsewhere on PVE 9) and its services are recovered
// on the node select_service_node 'best-score' picks (next_state_recovery,
// PVE2.pm steal_service: the config file is renamed). The replication jobs
// follow at the recovered node's next pvesr run (pvesim/replsim).
//
// A node that comes back counts as a placement target FailbackDelay later:
// reconstruction, the lab folds the failback's own duration (seed 003: 2 min
// 06 s from the node's return, ~1 min 45 s of it transfer and restart) into
// that wait.

// scheduleCRMLocked runs a CRM round on db HADelay from now.
func (s *backend) scheduleCRMLocked(dbID string) {
	s.haLaterLocked(s.crmRound(), dbID, s.reconcileHALocked)
}

func (s *backend) crmRound() time.Duration { return s.Cfg.Dur(s.Cfg.HADelay, 10*time.Second) }

// haLaterLocked runs f on the ConfigDB dbID d from now, under the state
// lock: the HA stack's delayed acts (CRM round, fencing, failback). It does
// nothing if the simulator closes first or the DB is gone by then.
func (s *backend) haLaterLocked(d time.Duration, dbID string, f func(db *core.ConfigDB)) {
	s.Workers.Add(1)
	go func() {
		defer s.Workers.Done()
		if !s.Sleep(d) {
			return
		}
		s.Mu.Lock()
		defer s.Mu.Unlock()
		if db := s.State.DBs[dbID]; db != nil {
			f(db)
		}
	}()
}

// crmOnlineLocked is NodeStatus node_is_online as the lab's CRM sees it:
// the node is up, a corosync member, and back for FailbackDelay if it was
// down.
func (s *backend) crmOnlineLocked(node string) bool {
	if !s.NodeUpLocked(node) || !s.MemberUpLocked(node) {
		return false
	}
	back := s.haBackAt[node]
	return back.IsZero() || time.Since(back) >= s.Cfg.Dur(s.Cfg.FailbackDelay, 2*time.Minute)
}

// haClusterLocked is what db's CRM sees of nodes and guests.
func (s *backend) haClusterLocked(db *core.ConfigDB) ha.Cluster {
	return ha.Cluster{Members: s.haMembersLocked(db), Online: s.crmOnlineLocked,
		GuestNode: func(vmid int) (string, bool) {
			e, ok := s.FindVMLocked(db, vmid)
			return e.Node, ok
		}}
}

// selectServiceNodeLocked is Manager.pm select_service_node on db's HA
// files as they are now (ha.Config.SelectNode).
func (s *backend) selectServiceNodeLocked(db *core.ConfigDB, r *pvecommon.Section, current string, bestScore bool) string {
	return s.haConfigLocked(db).SelectNode(s.haClusterLocked(db), r, current, bestScore)
}

// reconcileHALocked is one CRM round: requested states, then placement.
func (s *backend) reconcileHALocked(db *core.ConfigDB) {
	list, _ := s.HAResourcesLocked(db)
	changed := false
	for _, r := range list {
		step := ha.NextStep(r, s.HAServiceLocked(db, r))
		vmid, _ := strconv.Atoi(r.ID)
		e, _ := s.FindVMLocked(db, vmid)
		switch {
		case step.Start:
			if s.StartGuestLocked(db, e) {
				changed = true
			}
		case step.Stop:
			s.SetRunningLocked(e.Node, vmid, false)
			changed = true
		}
		if !step.Place {
			continue
		}
		if target := s.selectServiceNodeLocked(db, r, e.Node, false); target != "" && target != e.Node {
			s.crmMoveLocked(db, r, e, target)
		}
	}
	if changed {
		s.SaveLocked()
	}
}

// crmMoveLocked is the CRM's migrate (VM, online) or relocate (CT: stop,
// move, start) of a started service: its state shows the motion until the
// source LRM has carried it out, a round later.
func (s *backend) crmMoveLocked(db *core.ConfigDB, r *pvecommon.Section, e core.VMEntry, target string) {
	motion := "migrate"
	if e.Kind == "lxc" {
		motion = "relocate"
	}
	sid := ha.SID(r)
	s.SetHAMotionLocked(db, sid, motion)
	from := e.Node
	s.haLaterLocked(s.crmRound(), db.ID, func(d *core.ConfigDB) {
		defer s.scheduleCRMLocked(d.ID)
		s.SetHAMotionLocked(d, sid, "")
		if !s.NodeUpLocked(from) || !s.NodeUpLocked(target) {
			return
		}
		if g, ok := s.FindVMLocked(d, e.VMID); ok && g.Node == from {
			_ = s.MoveGuestLocked(d, e.VMID, from, target, func(string, ...any) {})
		}
	})
}

// ---- fencing and recovery ----

// nodeDownLocked is called when a node powers off: FenceDelay later, if it
// is still down and the rest is quorate, its HA services are recovered.
func (s *backend) nodeDownLocked(node string) {
	dbID := s.State.Nodes[node].DB
	delete(s.haBackAt, node)
	d := s.Cfg.Dur(s.Cfg.FenceDelay, 60*time.Second)
	s.haLaterLocked(d, dbID, func(db *core.ConfigDB) {
		if !s.NodeUpLocked(node) && db.Corosync != nil && s.QuorateLocked(db) {
			s.recoverNodeLocked(db, node)
		}
	})
}

// recoverNodeLocked moves the fenced node's HA services to their recovery
// node (next_state_recovery): the config file is renamed, nothing else —
// the replication jobs switch at the new node's next pvesr run.
func (s *backend) recoverNodeLocked(db *core.ConfigDB, dead string) {
	list, _ := s.HAResourcesLocked(db)
	for _, r := range list {
		if !ha.Recoverable(r) {
			continue
		}
		vmid, _ := strconv.Atoi(r.ID)
		e, ok := s.FindVMLocked(db, vmid)
		if !ok || e.Node != dead {
			continue
		}
		target := s.selectServiceNodeLocked(db, r, dead, true)
		if target == "" {
			continue // no allowed node: stays in recovery (retried next round)
		}
		missing := s.MissingVolumesLocked(db, e, target)
		s.StealGuestLocked(db, e, target)
		s.SetHAMotionLocked(db, ha.SID(r), "")
		if len(missing) > 0 {
			// H8: without a replica (a local or linked disk) the guest cannot
			// start there; after its restarts and relocations the CRM gives up
			// and the service is in error (reconstruction of the sequence).
			s.SetHAErrorLocked(db, ha.SID(r), true)
		}
	}
	s.reconcileHALocked(db)
	s.SaveLocked()
}

// ---- a node's return ----

// nodeBackLocked: the CRM counts the node as a placement target
// FailbackDelay later and then moves home the services that prefer it
// (failback); core has started the onboot guests HA does not manage.
func (s *backend) nodeBackLocked(node string) {
	dbID := s.State.Nodes[node].DB
	if s.haBackAt == nil {
		s.haBackAt = map[string]time.Time{}
	}
	s.haBackAt[node] = time.Now()
	if s.State.DBs[dbID] == nil {
		return
	}
	s.scheduleCRMLocked(dbID)
	s.haLaterLocked(s.Cfg.Dur(s.Cfg.FailbackDelay, 2*time.Minute), dbID, func(db *core.ConfigDB) {
		if s.NodeUpLocked(node) && s.QuorateLocked(db) {
			s.reconcileHALocked(db)
		}
	})
}

// ---- PVE 9: the groups' migration to rules ----

// groupMigrationLoop is the CRM's try_persistent_group_migration on every
// PVE 9 cluster: each round, a cluster whose groups.cfg still has groups
// and whose CRM is active (some HA resource) counts down; the first try is
// on the 3rd round, a failed one is retried 6 rounds later (Manager.pm
// group_migration_round, $group_migration_cooldown_rounds).
func (s *backend) groupMigrationLoop() {
	if s.Cfg.Version < 9 {
		return
	}
	var rounds ha.GroupMigration
	for s.Sleep(max(s.crmRound(), 10*time.Millisecond)) {
		s.Mu.Lock()
		for id, db := range s.State.DBs {
			if !rounds.Due(id, s.haConfigLocked(db).GroupMigrationPending()) {
				continue
			}
			if s.canMigrateGroupsLocked(db) == nil {
				s.migrateGroupsLocked(db)
			}
		}
		s.Mu.Unlock()
	}
}

// canMigrateGroupsLocked is assert_cluster_can_migrate_ha_groups on db
// (ha.CanMigrateGroups): a lab node's LRM is active or idle whenever the
// node is up.
func (s *backend) canMigrateGroupsLocked(db *core.ConfigDB) error {
	return ha.CanMigrateGroups(s.QuorateLocked(db), s.haMembersLocked(db),
		func(m string) bool { return s.NodeUpLocked(m) && s.MemberUpLocked(m) },
		func(m string) string { return s.NodeVersionLocked(m).Version })
}

// migrateGroupsLocked is migrate_group_persistently (ha.Config.MigrateGroups):
// rules.cfg and resources.cfg rewritten, groups.cfg deleted.
func (s *backend) migrateGroupsLocked(db *core.ConfigDB) {
	rules, res := s.haConfigLocked(db).MigrateGroups()
	s.WriteSectionsLocked(db, ha.RulesCfg, rules)
	s.WriteSectionsLocked(db, ha.ResourcesCfg, res)
	s.RemoveEtcPve(db, ha.GroupsCfg)
	s.SaveLocked()
	s.scheduleCRMLocked(db.ID)
}
