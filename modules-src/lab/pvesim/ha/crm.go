package ha

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// The CRM's decisions, as src/PVE/HA/Manager.pm takes them each round:
// where a service belongs (select_service_node), what its LRM does next
// (next_state_started/stopped, next_state_error), what recovery takes,
// and the PVE 9 groups' persistent migration. pvesim runs the rounds on
// its clock and carries the decisions out (pvesim/hasim crm.go).

// Cluster is what the CRM sees of the nodes and guests.
type Cluster struct {
	Members []string // the corosync members
	// Online is NodeStatus node_is_online as the lab's CRM sees it.
	Online func(node string) bool
	// GuestNode is the node whose config holds vmid.
	GuestNode func(vmid int) (string, bool)
}

// Service is what the lab knows of a resource's guest.
type Service struct {
	Node    string // the guest's node; "" when the cluster has no such guest
	CT      bool   // the guest is a container
	NodeUp  bool   // its node is up
	Running bool
	Error   bool   // the CRM gave up on it (error state)
	Motion  string // "migrate" or "relocate" under way, "" none
}

// NodeAffinity is a service's compiled node affinity: node → priority.
type NodeAffinity struct {
	Nodes  map[string]int
	Strict bool
}

// Affinity is what the CRM compiled for r in a cluster of nodes nodes: on
// PVE 9 the enabled, feasible node-affinity rule naming it (the groups of
// a cluster not yet migrated count as their ha-group-* rules,
// migrate_groups_to_rules in Manager.pm manage); on PVE 8 its group
// (Manager.pm 4.x get_service_group). ok is false when nothing constrains
// it.
func (c Config) Affinity(r *Section, nodes int) (NodeAffinity, bool) {
	if c.Version < 9 {
		g := pvecommon.FindSection(c.Groups, r.Opts["group"])
		if g == nil {
			return NodeAffinity{}, false
		}
		return NodeAffinity{Nodes: ParseNodePriorities(g.Opts["nodes"]), Strict: g.Opts["restricted"] == "1"}, true
	}
	sid := SID(r)
	rules := Sections(c.FullRules())
	errs := RuleErrors(rules, nodes)
	for _, rule := range rules {
		if rule.Type != "node-affinity" || rule.Opts["disable"] != "" || errs[rule.ID] != nil {
			continue
		}
		if slices.Contains(pvecommon.SplitComma(rule.Opts["resources"]), sid) {
			return NodeAffinity{Nodes: ParseNodePriorities(rule.Opts["nodes"]), Strict: rule.Opts["strict"] == "1"}, true
		}
	}
	return NodeAffinity{}, false
}

// Failback is PVE 9's resource failback (default 1; a group's nofailback
// before the migration, migrate_groups_to_resources); PVE 8's group
// nofailback.
func (c Config) Failback(r *Section) bool {
	if g := pvecommon.FindSection(c.Groups, r.Opts["group"]); g != nil {
		return g.Opts["nofailback"] != "1"
	}
	return c.Version < 9 || r.Opts["failback"] != "0"
}

// Load is the basic scheduler's usage (Usage/Basic.pm): HA services per
// node.
func (c Config) Load(guestNode func(vmid int) (string, bool)) map[string]int {
	load := map[string]int{}
	for _, r := range c.Resources {
		if vmid, err := strconv.Atoi(r.ID); err == nil {
			if node, ok := guestNode(vmid); ok {
				load[node]++
			}
		}
	}
	return load
}

// SelectNode is Manager.pm select_service_node with node preference
// "none" (where a started service belongs) or "best-score" (recovery): ""
// when no online node is allowed.
func (c Config) SelectNode(cl Cluster, r *Section, current string, bestScore bool) string {
	online := map[string]bool{}
	for _, m := range cl.Members {
		if cl.Online(m) {
			online[m] = true
		}
	}
	// get_node_affinity / get_node_priority_groups: the allowed nodes and
	// the top-priority ones among those online; a non-strict rule (an
	// unrestricted group) adds every other online node at priority -1.
	aff, constrained := c.Affinity(r, len(cl.Members))
	allowed := map[string]int{}
	if !constrained {
		for n := range online {
			allowed[n] = 0
		}
	} else {
		for n, p := range aff.Nodes {
			if online[n] {
				allowed[n] = p
			}
		}
		if !aff.Strict {
			for n := range online {
				if _, ok := aff.Nodes[n]; !ok {
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
	if !bestScore && !c.Failback(r) && currentAllowed {
		return current // stay: failback off (PVE 9) / nofailback group (8)
	}
	if !bestScore && slices.Contains(pri, current) {
		return current
	}
	load := c.Load(cl.GuestNode)
	sort.Slice(pri, func(i, j int) bool {
		if load[pri[i]] != load[pri[j]] {
			return load[pri[i]] < load[pri[j]]
		}
		return pri[i] < pri[j]
	})
	return pri[0]
}

// Step is what a CRM round has done with a service: its LRM starts or
// stops the guest, and a started service is placed (SelectNode).
type Step struct {
	Start, Stop, Place bool
}

// NextStep is a round's decision for r (next_state_started /
// next_state_stopped): nothing for a guest the cluster lacks, on a node
// that is down or of the other kind, nor for an ignored service, one in
// error (next_state_error: it stays until disabled) or one moving.
func NextStep(r *Section, f Service) Step {
	if f.Node == "" || !f.NodeUp || (r.Type == "ct") != f.CT {
		return Step{}
	}
	want := RequestedState(r)
	if want == "ignored" || f.Error || f.Motion != "" {
		return Step{}
	}
	return Step{
		Start: want == "started" && !f.Running,
		Stop:  (want == "stopped" || want == "disabled") && f.Running,
		Place: want == "started",
	}
}

// Recoverable tells whether a fenced node's service is recovered on
// another node (next_state_recovery): not when disabled or ignored.
func Recoverable(r *Section) bool {
	st := r.Opts["state"]
	return st != "disabled" && st != "ignored"
}

// ---- PVE 9: the groups' migration to rules ----

// GroupMigrationPending tells whether the CRM still has groups to migrate:
// groups.cfg has groups and the CRM is active (some HA resource).
func (c Config) GroupMigrationPending() bool { return len(c.Groups) > 0 && len(c.Resources) > 0 }

// GroupMigration counts each cluster's CRM rounds towards
// try_persistent_group_migration: the first try is on the 3rd round with
// groups pending, a failed one is retried 6 rounds later (Manager.pm
// group_migration_round, $group_migration_cooldown_rounds).
type GroupMigration struct {
	rounds map[string]int
}

// Due is one round of cluster id: whether it tries the migration now.
func (m *GroupMigration) Due(id string, pending bool) bool {
	if m.rounds == nil {
		m.rounds = map[string]int{}
	}
	if !pending {
		delete(m.rounds, id)
		return false
	}
	if _, ok := m.rounds[id]; !ok {
		m.rounds[id] = 3
	}
	m.rounds[id]--
	if m.rounds[id] > 0 {
		return false
	}
	m.rounds[id] = 6
	return true
}

// CanMigrateGroups is assert_cluster_can_migrate_ha_groups: quorum, every
// member online with its LRM active or idle in mode active (a lab node's
// LRM is whenever the node is up), every member on pve-manager ≥
// 9.0.0~16 (version: the member's pve-manager version).
func CanMigrateGroups(quorate bool, members []string, online func(string) bool, version func(string) string) error {
	if !quorate {
		return fmt.Errorf("cluster is not quorate")
	}
	for _, m := range members {
		if !online(m) {
			return fmt.Errorf("node '%s' is not online", m)
		}
		major, _ := strconv.Atoi(strings.SplitN(version(m), ".", 2)[0])
		if major < 9 {
			return fmt.Errorf("node '%s' needs at least pve-manager version '9.0.0~16'", m)
		}
	}
	return nil
}

// MigrateGroups is migrate_group_persistently: the groups become rules
// (the new rules.cfg), every resource loses its group, failback 0 where
// the group had nofailback (c.Resources changed in place); groups.cfg is
// then deleted.
func (c Config) MigrateGroups() (rules, resources []*Section) {
	rules = MigrateGroupsToRules(c.Rules, c.Groups, c.Resources)
	for _, r := range c.Resources {
		g, ok := r.Opts["group"]
		if !ok {
			continue
		}
		if gs := pvecommon.FindSection(c.Groups, g); gs != nil && gs.Opts["nofailback"] == "1" {
			r.Opts["failback"] = "0"
		}
		delete(r.Opts, "group")
	}
	return rules, c.Resources
}
