package pvesim

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The CRM, as pve-ha-manager's src/PVE/HA/Manager.pm runs it, on the lab's
// clock. A round (Config.HADelay, PVE: 10 s, CRM.pm $max_time) after any HA
// change, HA request or node event, every managed guest is brought to its
// requested state and placed where select_service_node puts it: a started
// service whose node is not among the highest-priority online nodes of its
// node-affinity rule (9) or group (8) migrates there (VM: online migrate;
// CT: relocate, stop–move–start), unless failback is off and its node is
// allowed (next_state_started, select_service_node 'none'). A service in
// error stays where it is until disabled (next_state_error).
//
// A node that goes down (SetOnline, the lab's power-off) is fenced
// FenceDelay later (NodeStatus.pm $fence_delay = 60 s; the agent lock's
// expiry, pmxcfs CFS_LOCK_TIMEOUT 120 s after the dead LRM's last refresh,
// is not modelled separately: seed 003 measured 1 min 14 s from power-off
// to the guest running elsewhere on PVE 9) and its services are recovered
// on the node select_service_node 'best-score' picks (next_state_recovery,
// PVE2.pm steal_service: the config file is renamed). The replication jobs
// follow at the recovered node's next pvesr run (replrun.go).
//
// A node that comes back counts as a placement target FailbackDelay later:
// reconstruction, the lab folds the failback's own duration (seed 003: 2 min
// 06 s from the node's return, ~1 min 45 s of it transfer and restart) into
// that wait.

// scheduleCRMLocked runs a CRM round on db HADelay from now.
func (s *Sim) scheduleCRMLocked(dbID string) {
	s.haLaterLocked(s.crmRound(), dbID, s.reconcileHALocked)
}

func (s *Sim) crmRound() time.Duration { return s.cfg.dur(s.cfg.HADelay, 10*time.Second) }

// haLaterLocked runs f on the ConfigDB dbID d from now, under the state
// lock: the HA stack's delayed acts (CRM round, fencing, failback). It does
// nothing if the simulator closes first or the DB is gone by then.
func (s *Sim) haLaterLocked(d time.Duration, dbID string, f func(db *ConfigDB)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if !s.sleep(d) {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if db := s.st.DBs[dbID]; db != nil {
			f(db)
		}
	}()
}

// crmOnlineLocked is NodeStatus node_is_online as the lab's CRM sees it:
// the node is up, a corosync member, and back for FailbackDelay if it was
// down.
func (s *Sim) crmOnlineLocked(node string) bool {
	if !s.nodeUpLocked(node) || !s.memberUpLocked(node) {
		return false
	}
	back := s.haBackAt[node]
	return back.IsZero() || time.Since(back) >= s.cfg.dur(s.cfg.FailbackDelay, 2*time.Minute)
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

// nodeAffinity is a service's compiled node affinity: node → priority.
type nodeAffinity struct {
	nodes  map[string]int
	strict bool
}

// parseNodePriorities is a "node[:prio],…" list (Tools.pm
// parse_node_priority: no priority is 0).
func parseNodePriorities(list string) map[string]int {
	out := map[string]int{}
	for _, p := range splitComma(list) {
		name, prio, _ := strings.Cut(p, ":")
		n, _ := strconv.Atoi(prio)
		out[name] = n
	}
	return out
}

// serviceAffinityLocked is what the CRM compiled for sid: on PVE 9 the
// enabled, feasible node-affinity rule naming it (the groups of a cluster
// not yet migrated count as their ha-group-* rules, migrate_groups_to_rules
// in Manager.pm manage); on PVE 8 its group (Manager.pm 4.x
// get_service_group). ok is false when nothing constrains it.
func (s *Sim) serviceAffinityLocked(db *ConfigDB, r *section) (nodeAffinity, bool) {
	if s.cfg.Version < 9 {
		groups, _ := s.readSectionsLocked(db, haGroupsCfg)
		g := findSection(groups, r.Opts["group"])
		if g == nil {
			return nodeAffinity{}, false
		}
		return nodeAffinity{nodes: parseNodePriorities(g.Opts["nodes"]), strict: g.Opts["restricted"] == "1"}, true
	}
	sid := sid(r)
	rules := s.effectiveRulesLocked(db)
	errs := s.ruleErrorsLocked(db, rules)
	for _, rule := range rules {
		if rule.Type != "node-affinity" || rule.Opts["disable"] != "" || errs[rule.ID] != nil {
			continue
		}
		if slices.Contains(splitComma(rule.Opts["resources"]), sid) {
			return nodeAffinity{nodes: parseNodePriorities(rule.Opts["nodes"]), strict: rule.Opts["strict"] == "1"}, true
		}
	}
	return nodeAffinity{}, false
}

// serviceFailbackLocked: PVE 9's resource failback (default 1; a group's
// nofailback before the migration, migrate_groups_to_resources); PVE 8's
// group nofailback.
func (s *Sim) serviceFailbackLocked(db *ConfigDB, r *section) bool {
	groups, _ := s.readSectionsLocked(db, haGroupsCfg)
	if g := findSection(groups, r.Opts["group"]); g != nil {
		return g.Opts["nofailback"] != "1"
	}
	return s.cfg.Version < 9 || r.Opts["failback"] != "0"
}

// haLoadLocked is the basic scheduler's usage (Usage/Basic.pm): HA
// services per node.
func (s *Sim) haLoadLocked(db *ConfigDB) map[string]int {
	list, _ := s.haResourcesLocked(db)
	load := map[string]int{}
	for _, r := range list {
		if vmid, err := strconv.Atoi(r.ID); err == nil {
			if e, ok := s.findVMLocked(db, vmid); ok {
				load[e.Node]++
			}
		}
	}
	return load
}

// selectServiceNodeLocked is Manager.pm select_service_node with node
// preference "none" (where a started service belongs) or "best-score"
// (recovery): "" when no online node is allowed.
func (s *Sim) selectServiceNodeLocked(db *ConfigDB, r *section, current string, bestScore bool) string {
	online := map[string]bool{}
	for _, m := range s.membersLocked(s.anyMemberLocked(db)) {
		if s.crmOnlineLocked(m) {
			online[m] = true
		}
	}
	// get_node_affinity / get_node_priority_groups: the allowed nodes and
	// the top-priority ones among those online; a non-strict rule (an
	// unrestricted group) adds every other online node at priority -1.
	aff, constrained := s.serviceAffinityLocked(db, r)
	allowed := map[string]int{}
	if !constrained {
		for n := range online {
			allowed[n] = 0
		}
	} else {
		for n, p := range aff.nodes {
			if online[n] {
				allowed[n] = p
			}
		}
		if !aff.strict {
			for n := range online {
				if _, ok := aff.nodes[n]; !ok {
					allowed[n] = -1
				}
			}
		}
	}
	if len(allowed) == 0 {
		return ""
	}
	top := -1 << 31
	for _, p := range allowed {
		top = max(top, p)
	}
	var pri []string
	for n, p := range allowed {
		if p == top {
			pri = append(pri, n)
		}
	}
	_, currentAllowed := allowed[current]
	if !bestScore && !s.serviceFailbackLocked(db, r) && currentAllowed {
		return current // stay: failback off (PVE 9) / nofailback group (8)
	}
	if !bestScore && slices.Contains(pri, current) {
		return current
	}
	load := s.haLoadLocked(db)
	sort.Slice(pri, func(i, j int) bool {
		if load[pri[i]] != load[pri[j]] {
			return load[pri[i]] < load[pri[j]]
		}
		return pri[i] < pri[j]
	})
	return pri[0]
}

// reconcileHALocked is one CRM round: requested states, then placement.
func (s *Sim) reconcileHALocked(db *ConfigDB) {
	list, _ := s.haResourcesLocked(db)
	changed := false
	for _, r := range list {
		vmid, _ := strconv.Atoi(r.ID)
		e, ok := s.findVMLocked(db, vmid)
		if !ok || !s.nodeUpLocked(e.Node) || (r.Type == "ct") != (e.Kind == "lxc") {
			continue
		}
		want := r.Opts["state"]
		if want == "" {
			want = "started"
		}
		if want == "ignored" || s.haErrorLocked(db, sid(r)) || s.haMotionLocked(db, sid(r)) != "" {
			continue
		}
		running := s.runningLocked(e.Node, vmid)
		switch {
		case want == "started" && !running:
			if s.haStartLocked(db, e) {
				changed = true
			}
		case (want == "stopped" || want == "disabled") && running:
			s.setRunningLocked(e.Node, vmid, false)
			changed = true
		}
		if want != "started" {
			continue
		}
		if target := s.selectServiceNodeLocked(db, r, e.Node, false); target != "" && target != e.Node {
			s.crmMoveLocked(db, r, e, target)
		}
	}
	if changed {
		s.saveLocked()
	}
}

// haStartLocked is the LRM starting a service on its node. A VM's
// cloud-init drive on local storage is created there if missing
// (qemu-server regenerates the ISO at every start, Cloudinit.pm
// commit_cloudinit_disk allocates a missing volume).
func (s *Sim) haStartLocked(db *ConfigDB, e vmEntry) bool {
	if e.Kind == "lxc" {
		c, err := s.loadCtConfLocked(db, e.Node, e.VMID)
		if err != nil || c.IsTemplate() || c.Lock() != "" {
			return false
		}
		s.setRunningLocked(e.Node, e.VMID, true)
		return true
	}
	c, err := s.loadQmConfLocked(db, e.Node, e.VMID)
	if err != nil || c.IsTemplate() || c.Lock() != "" {
		return false
	}
	c.ApplyPending()
	for _, k := range slices.Sorted(maps.Keys(c.Keys)) {
		d := parseDrive(c.Keys[k])
		if !isDriveKey(k) || !d.cloudinit() {
			continue
		}
		store, _, ok := volumeID(d.file())
		st := db.Storage[store]
		if ok && st != nil && !st.shared() && s.st.Nodes[e.Node].Volumes[d.file()] == nil {
			if _, err := s.allocCloudinitLocked(e.Node, st, e.VMID, ""); err != nil {
				return false
			}
		}
	}
	s.writeQmConfLocked(db, e.Node, e.VMID, c)
	s.setRunningLocked(e.Node, e.VMID, true)
	return true
}

// crmMoveLocked is the CRM's migrate (VM, online) or relocate (CT: stop,
// move, start) of a started service: its state shows the motion until the
// source LRM has carried it out, a round later.
func (s *Sim) crmMoveLocked(db *ConfigDB, r *section, e vmEntry, target string) {
	motion := "migrate"
	if e.Kind == "lxc" {
		motion = "relocate"
	}
	sid := sid(r)
	s.setHAMotionLocked(db, sid, motion)
	from := e.Node
	s.haLaterLocked(s.crmRound(), db.ID, func(d *ConfigDB) {
		defer s.scheduleCRMLocked(d.ID)
		s.setHAMotionLocked(d, sid, "")
		if !s.nodeUpLocked(from) || !s.nodeUpLocked(target) {
			return
		}
		if g, ok := s.findVMLocked(d, e.VMID); ok && g.Node == from {
			_ = s.moveGuestLocked(d, e.VMID, from, target, func(string, ...any) {})
		}
	})
}

// ---- fencing and recovery ----

// nodeDownLocked is called when a node powers off: FenceDelay later, if it
// is still down and the rest is quorate, its HA services are recovered.
func (s *Sim) nodeDownLocked(node string) {
	dbID := s.st.Nodes[node].DB
	delete(s.haBackAt, node)
	d := s.cfg.dur(s.cfg.FenceDelay, 60*time.Second)
	s.haLaterLocked(d, dbID, func(db *ConfigDB) {
		if !s.nodeUpLocked(node) && db.Corosync != nil && s.quorateLocked(db) {
			s.recoverNodeLocked(db, node)
		}
	})
}

// recoverNodeLocked moves the fenced node's HA services to their recovery
// node (next_state_recovery): the config file is renamed, nothing else —
// the replication jobs switch at the new node's next pvesr run.
func (s *Sim) recoverNodeLocked(db *ConfigDB, dead string) {
	list, _ := s.haResourcesLocked(db)
	n := s.st.Nodes[dead]
	for _, r := range list {
		if r.Opts["state"] == "disabled" || r.Opts["state"] == "ignored" {
			continue
		}
		vmid, _ := strconv.Atoi(r.ID)
		e, ok := s.findVMLocked(db, vmid)
		if !ok || e.Node != dead {
			continue
		}
		target := s.selectServiceNodeLocked(db, r, dead, true)
		if target == "" {
			continue // no allowed node: stays in recovery (retried next round)
		}
		missing := s.missingVolumesLocked(db, e, target)
		raw, _ := s.readEtcPve(db, guestConfPath(dead, e.Kind, vmid))
		s.removeEtcPve(db, guestConfPath(dead, e.Kind, vmid))
		s.writeEtcPve(db, guestConfPath(target, e.Kind, vmid), raw)
		delete(n.Running, vmid)
		s.setHAMotionLocked(db, sid(r), "")
		if len(missing) > 0 {
			// H8: without a replica (a local or linked disk) the guest cannot
			// start there; after its restarts and relocations the CRM gives up
			// and the service is in error (reconstruction of the sequence).
			s.setHAErrorLocked(db, sid(r), true)
		}
	}
	s.reconcileHALocked(db)
	s.saveLocked()
}

// ---- a node's return ----

// nodeBackLocked: pve-guests starts the onboot guests HA does not manage;
// the CRM counts the node as a placement target FailbackDelay later and
// then moves home the services that prefer it (failback).
func (s *Sim) nodeBackLocked(node string) {
	dbID := s.st.Nodes[node].DB
	if s.haBackAt == nil {
		s.haBackAt = map[string]time.Time{}
	}
	s.haBackAt[node] = time.Now()
	db := s.st.DBs[dbID]
	if db == nil {
		return
	}
	for _, e := range s.vmListLocked(db) {
		if e.Node != node || s.haConfiguredSIDLocked(db, e) {
			continue
		}
		raw, _ := s.readEtcPve(db, guestConfPath(node, e.Kind, e.VMID))
		if c := parseQmConf(raw); c.Keys["onboot"] == "1" && !c.IsTemplate() {
			s.setRunningLocked(node, e.VMID, true)
		}
	}
	s.scheduleCRMLocked(dbID)
	s.haLaterLocked(s.cfg.dur(s.cfg.FailbackDelay, 2*time.Minute), dbID, func(db *ConfigDB) {
		if s.nodeUpLocked(node) && s.quorateLocked(db) {
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
	if s.cfg.Version < 9 {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		rounds := map[string]int{}
		for s.sleep(max(s.crmRound(), 10*time.Millisecond)) {
			s.mu.Lock()
			for id, db := range s.st.DBs {
				res, _ := s.haResourcesLocked(db)
				groups, _ := s.readSectionsLocked(db, haGroupsCfg)
				if len(groups) == 0 || len(res) == 0 {
					delete(rounds, id)
					continue
				}
				if _, ok := rounds[id]; !ok {
					rounds[id] = 3
				}
				rounds[id]--
				if rounds[id] > 0 {
					continue
				}
				rounds[id] = 6
				if s.canMigrateGroupsLocked(db) == nil {
					s.migrateGroupsLocked(db)
				}
			}
			s.mu.Unlock()
		}
	}()
}

// canMigrateGroupsLocked is assert_cluster_can_migrate_ha_groups: quorum,
// every node online with its LRM active or idle in mode active (a lab
// node's LRM is whenever the node is up), every node on pve-manager ≥
// 9.0.0~16.
func (s *Sim) canMigrateGroupsLocked(db *ConfigDB) error {
	if !s.quorateLocked(db) {
		return fmt.Errorf("cluster is not quorate")
	}
	for _, m := range s.membersLocked(s.anyMemberLocked(db)) {
		if !s.nodeUpLocked(m) || !s.memberUpLocked(m) {
			return fmt.Errorf("node '%s' is not online", m)
		}
		major, _ := strconv.Atoi(strings.SplitN(s.nodeVersionLocked(m).Version, ".", 2)[0])
		if major < 9 {
			return fmt.Errorf("node '%s' needs at least pve-manager version '9.0.0~16'", m)
		}
	}
	return nil
}

// migrateGroupsLocked is migrate_group_persistently: the groups become
// rules in rules.cfg, every resource loses its group (failback 0 where the
// group had nofailback), and groups.cfg is deleted.
func (s *Sim) migrateGroupsLocked(db *ConfigDB) {
	rules, _ := s.readSectionsLocked(db, haRulesCfg)
	res, _ := s.haResourcesLocked(db)
	groups, _ := s.readSectionsLocked(db, haGroupsCfg)
	s.writeSectionsLocked(db, haRulesCfg, migrateGroupsToRules(rules, groups, res))
	for _, r := range res {
		g, ok := r.Opts["group"]
		if !ok {
			continue
		}
		if gs := findSection(groups, g); gs != nil && gs.Opts["nofailback"] == "1" {
			r.Opts["failback"] = "0"
		}
		delete(r.Opts, "group")
	}
	s.writeSectionsLocked(db, haResourcesCfg, res)
	s.removeEtcPve(db, haGroupsCfg)
	s.saveLocked()
	s.scheduleCRMLocked(db.ID)
}
