package core

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/ha"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
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
func (s *Sim) scheduleCRMLocked(dbID string) {
	s.haLaterLocked(s.crmRound(), dbID, s.reconcileHALocked)
}

func (s *Sim) crmRound() time.Duration { return s.Cfg.Dur(s.Cfg.HADelay, 10*time.Second) }

// haLaterLocked runs f on the ConfigDB dbID d from now, under the state
// lock: the HA stack's delayed acts (CRM round, fencing, failback). It does
// nothing if the simulator closes first or the DB is gone by then.
func (s *Sim) haLaterLocked(d time.Duration, dbID string, f func(db *ConfigDB)) {
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
func (s *Sim) crmOnlineLocked(node string) bool {
	if !s.NodeUpLocked(node) || !s.memberUpLocked(node) {
		return false
	}
	back := s.haBackAt[node]
	return back.IsZero() || time.Since(back) >= s.Cfg.Dur(s.Cfg.FailbackDelay, 2*time.Minute)
}

func (s *Sim) haMotionLocked(db *ConfigDB, sid string) string { return s.haMotions[db.ID+"/"+sid] }

func (s *Sim) setHAMotionLocked(db *ConfigDB, sid, motion string) {
	if s.haMotions == nil {
		s.haMotions = map[string]string{}
	}
	if motion == "" {
		delete(s.haMotions, db.ID+"/"+sid)
		return
	}
	s.haMotions[db.ID+"/"+sid] = motion
}

// haClusterLocked is what db's CRM sees of nodes and guests.
func (s *Sim) haClusterLocked(db *ConfigDB) ha.Cluster {
	return ha.Cluster{Members: s.haMembersLocked(db), Online: s.crmOnlineLocked,
		GuestNode: func(vmid int) (string, bool) {
			e, ok := s.FindVMLocked(db, vmid)
			return e.Node, ok
		}}
}

// selectServiceNodeLocked is Manager.pm select_service_node on db's HA
// files as they are now (ha.Config.SelectNode).
func (s *Sim) selectServiceNodeLocked(db *ConfigDB, r *section, current string, bestScore bool) string {
	return s.haConfigLocked(db).SelectNode(s.haClusterLocked(db), r, current, bestScore)
}

// reconcileHALocked is one CRM round: requested states, then placement.
func (s *Sim) reconcileHALocked(db *ConfigDB) {
	list, _ := s.HAResourcesLocked(db)
	changed := false
	for _, r := range list {
		step := ha.NextStep(r, s.haServiceLocked(db, r))
		vmid, _ := strconv.Atoi(r.ID)
		e, _ := s.FindVMLocked(db, vmid)
		switch {
		case step.Start:
			if s.haStartLocked(db, e) {
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

// haStartLocked is the LRM starting a service on its node. A VM's
// cloud-init drive on local storage is created there if missing
// (qemu-server regenerates the ISO at every start, Cloudinit.pm
// commit_cloudinit_disk allocates a missing volume).
func (s *Sim) haStartLocked(db *ConfigDB, e VMEntry) bool {
	if e.Kind == "lxc" {
		c, err := s.LoadCTConfLocked(db, e.Node, e.VMID)
		if err != nil || c.IsTemplate() || c.Lock() != "" {
			return false
		}
		s.SetRunningLocked(e.Node, e.VMID, true)
		return true
	}
	c, err := s.LoadQMConfLocked(db, e.Node, e.VMID)
	if err != nil || c.IsTemplate() || c.Lock() != "" {
		return false
	}
	c.ApplyPending()
	for _, k := range slices.Sorted(maps.Keys(c.Keys)) {
		d := qemuserver.ParseDrive(c.Keys[k])
		if !qemuserver.IsDriveKey(k) || !d.Cloudinit() {
			continue
		}
		store, _, ok := storage.ParseVolumeID(d.File())
		st := db.Storage[store]
		if ok && st != nil && !st.Shared() && s.State.Nodes[e.Node].Volumes[d.File()] == nil {
			if _, err := s.AllocCloudinitLocked(e.Node, st, e.VMID, ""); err != nil {
				return false
			}
		}
	}
	s.WriteQMConfLocked(db, e.Node, e.VMID, c)
	s.SetRunningLocked(e.Node, e.VMID, true)
	return true
}

// crmMoveLocked is the CRM's migrate (VM, online) or relocate (CT: stop,
// move, start) of a started service: its state shows the motion until the
// source LRM has carried it out, a round later.
func (s *Sim) crmMoveLocked(db *ConfigDB, r *section, e VMEntry, target string) {
	motion := "migrate"
	if e.Kind == "lxc" {
		motion = "relocate"
	}
	sid := ha.SID(r)
	s.setHAMotionLocked(db, sid, motion)
	from := e.Node
	s.haLaterLocked(s.crmRound(), db.ID, func(d *ConfigDB) {
		defer s.scheduleCRMLocked(d.ID)
		s.setHAMotionLocked(d, sid, "")
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
func (s *Sim) nodeDownLocked(node string) {
	dbID := s.State.Nodes[node].DB
	delete(s.haBackAt, node)
	d := s.Cfg.Dur(s.Cfg.FenceDelay, 60*time.Second)
	s.haLaterLocked(d, dbID, func(db *ConfigDB) {
		if !s.NodeUpLocked(node) && db.Corosync != nil && s.QuorateLocked(db) {
			s.recoverNodeLocked(db, node)
		}
	})
}

// recoverNodeLocked moves the fenced node's HA services to their recovery
// node (next_state_recovery): the config file is renamed, nothing else —
// the replication jobs switch at the new node's next pvesr run.
func (s *Sim) recoverNodeLocked(db *ConfigDB, dead string) {
	list, _ := s.HAResourcesLocked(db)
	n := s.State.Nodes[dead]
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
		missing := s.missingVolumesLocked(db, e, target)
		raw, _ := s.ReadEtcPve(db, GuestConfPath(dead, e.Kind, vmid))
		s.RemoveEtcPve(db, GuestConfPath(dead, e.Kind, vmid))
		s.WriteEtcPve(db, GuestConfPath(target, e.Kind, vmid), raw)
		delete(n.Running, vmid)
		s.setHAMotionLocked(db, ha.SID(r), "")
		if len(missing) > 0 {
			// H8: without a replica (a local or linked disk) the guest cannot
			// start there; after its restarts and relocations the CRM gives up
			// and the service is in error (reconstruction of the sequence).
			s.setHAErrorLocked(db, ha.SID(r), true)
		}
	}
	s.reconcileHALocked(db)
	s.SaveLocked()
}

// ---- a node's return ----

// nodeBackLocked: pve-guests starts the onboot guests HA does not manage;
// the CRM counts the node as a placement target FailbackDelay later and
// then moves home the services that prefer it (failback).
func (s *Sim) nodeBackLocked(node string) {
	dbID := s.State.Nodes[node].DB
	if s.haBackAt == nil {
		s.haBackAt = map[string]time.Time{}
	}
	s.haBackAt[node] = time.Now()
	db := s.State.DBs[dbID]
	if db == nil {
		return
	}
	for _, e := range s.VMListLocked(db) {
		if e.Node != node || s.haConfiguredSIDLocked(db, e) {
			continue
		}
		raw, _ := s.ReadEtcPve(db, GuestConfPath(node, e.Kind, e.VMID))
		if c := guestconf.Parse(raw); c.Keys["onboot"] == "1" && !c.IsTemplate() {
			s.SetRunningLocked(node, e.VMID, true)
		}
	}
	s.scheduleCRMLocked(dbID)
	s.haLaterLocked(s.Cfg.Dur(s.Cfg.FailbackDelay, 2*time.Minute), dbID, func(db *ConfigDB) {
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
func (s *Sim) groupMigrationLoop() {
	if s.Cfg.Version < 9 {
		return
	}
	s.Workers.Add(1)
	go func() {
		defer s.Workers.Done()
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
	}()
}

// canMigrateGroupsLocked is assert_cluster_can_migrate_ha_groups on db
// (ha.CanMigrateGroups): a lab node's LRM is active or idle whenever the
// node is up.
func (s *Sim) canMigrateGroupsLocked(db *ConfigDB) error {
	return ha.CanMigrateGroups(s.QuorateLocked(db), s.haMembersLocked(db),
		func(m string) bool { return s.NodeUpLocked(m) && s.memberUpLocked(m) },
		func(m string) string { return s.nodeVersionLocked(m).Version })
}

// migrateGroupsLocked is migrate_group_persistently (ha.Config.MigrateGroups):
// rules.cfg and resources.cfg rewritten, groups.cfg deleted.
func (s *Sim) migrateGroupsLocked(db *ConfigDB) {
	rules, res := s.haConfigLocked(db).MigrateGroups()
	s.WriteSectionsLocked(db, ha.RulesCfg, rules)
	s.WriteSectionsLocked(db, ha.ResourcesCfg, res)
	s.RemoveEtcPve(db, ha.GroupsCfg)
	s.SaveLocked()
	s.scheduleCRMLocked(db.ID)
}
