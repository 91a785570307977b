package pvesim

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// HA rules, PVE 9 (/cluster/ha/rules; pve-ha-manager's API2/HA/Rules.pm).

// ruleView is $get_api_ha_rule: the rule's options (set_rule_defaults adds
// only truthy defaults, so strict 0 and disable 0 are absent), rule, the
// file's digest, its order, and the feasibility errors of a rule the CRM
// would drop.
func ruleView(r *section, digest string, order int, errs map[string][]string) map[string]any {
	out := sectionView(map[string]any{"rule": r.ID, "type": r.Type}, r, digest, "strict", "disable")
	out["order"] = order
	if len(errs) > 0 {
		e := map[string]any{}
		for k, msgs := range errs {
			e[k] = msgs
		}
		out["errors"] = e
	}
	return out
}

// orderedRule is a rule with its SectionConfig order: its position in
// rules.cfg, or get_next_ordinal for a rule made in memory.
type orderedRule struct {
	sec   *section
	order int
}

// nextOrdinal is Rules.pm get_next_ordinal as written: the *lowest* order
// plus one (so every new rule of a non-empty file gets 2).
func nextOrdinal(list []orderedRule) int {
	low := 0
	for i, r := range list {
		if i == 0 || r.order < low {
			low = r.order
		}
	}
	return low + 1
}

// groupRulesLocked is Groups.pm migrate_groups_to_rules on the rules of
// rules.cfg: every group some resource uses becomes the node-affinity rule
// ha-group-<group> (nodes and comment from the group, strict = restricted,
// resources = its members); unused groups vanish. Perl walks the groups in
// hash order; the lab in name order (reconstruction).
func migrateGroupsToRules(rules, groups, resources []*section) []*section {
	out := orderRules(rules)
	members := map[string][]string{}
	for _, r := range resources {
		if g := r.Opts["group"]; g != "" {
			members[g] = append(members[g], sid(r))
		}
	}
	for _, g := range slices.Sorted(maps.Keys(members)) {
		gs := findSection(groups, g)
		if gs == nil {
			continue
		}
		rule := &section{Type: "node-affinity", ID: "ha-group-" + g, Opts: map[string]string{
			"resources": normaliseList(strings.Join(members[g], ",")),
			"nodes":     normaliseNodes(gs.Opts["nodes"]),
			"comment":   gs.Opts["comment"],
		}}
		if rule.Opts["comment"] == "" {
			rule.Opts["comment"] = fmt.Sprintf("Generated from HA group '%s'.", g)
		}
		if v, ok := gs.Opts["restricted"]; ok {
			rule.Opts["strict"] = v
		}
		out = insertOrdered(out, orderedRule{sec: rule, order: nextOrdinal(out)})
	}
	var list []*section
	for _, r := range out {
		list = append(list, r.sec)
	}
	return list
}

// orderRules numbers rules.cfg's sections as parse_config does (1, 2, …).
func orderRules(list []*section) []orderedRule {
	out := make([]orderedRule, len(list))
	for i, r := range list {
		out[i] = orderedRule{sec: r, order: i + 1}
	}
	return out
}

// insertOrdered places r as write_config sorts sections by order; among
// equal orders Perl's hash order decides, the lab puts the newcomer last
// (reconstruction).
func insertOrdered(list []orderedRule, r orderedRule) []orderedRule {
	i := 0
	for i < len(list) && list[i].order <= r.order {
		i++
	}
	return slices.Insert(list, i, r)
}

// fullRulesLocked is the API's $get_full_rules_config: rules.cfg plus, on
// a cluster whose groups are not migrated yet, the ha-group-* rules made in
// memory (they carry get_next_ordinal's order, not a file position).
func (s *Sim) fullRulesLocked(db *ConfigDB) ([]orderedRule, string) {
	rules, digest := s.readSectionsLocked(db, haRulesCfg)
	out := orderRules(rules)
	groups, _ := s.readSectionsLocked(db, haGroupsCfg)
	if len(groups) == 0 {
		return out, digest
	}
	res, _ := s.haResourcesLocked(db)
	for _, r := range migrateGroupsToRules(nil, groups, res) {
		out = insertOrdered(out, orderedRule{sec: r, order: nextOrdinal(out)})
	}
	return out, digest
}

// effectiveRulesLocked are the rules the CRM compiles (order aside).
func (s *Sim) effectiveRulesLocked(db *ConfigDB) []*section {
	full, _ := s.fullRulesLocked(db)
	out := make([]*section, len(full))
	for i, r := range full {
		out[i] = r.sec
	}
	return out
}

// ruleErrorsLocked is Rules.pm check_feasibility over enabled rules (a
// subset of its checks: NodeAffinity.pm check_single_resource_reference —
// blamed on every rule sharing the resource —, ResourceAffinity.pm's
// "less than two resources" and negative affinity's "more resources than
// available nodes"): rule → option → messages.
func (s *Sim) ruleErrorsLocked(db *ConfigDB, rules []*section) map[string]map[string][]string {
	errs := map[string]map[string][]string{}
	blame := func(id, opt, msg string) {
		if errs[id] == nil {
			errs[id] = map[string][]string{}
		}
		errs[id][opt] = append(errs[id][opt], msg)
	}
	nodes := len(s.membersLocked(s.anyMemberLocked(db)))
	users := map[string][]string{}
	for _, r := range rules {
		if r.Opts["disable"] != "" {
			continue
		}
		res := splitComma(r.Opts["resources"])
		switch r.Type {
		case "node-affinity":
			for _, sid := range res {
				users[sid] = append(users[sid], r.ID)
			}
		case "resource-affinity":
			if len(res) < 2 {
				blame(r.ID, "resources", "rule is ineffective as there are less than two resources")
			} else if r.Opts["affinity"] == "negative" && len(res) > nodes {
				blame(r.ID, "resources", "rule defines more resources than available nodes")
			}
		}
	}
	for _, sid := range slices.Sorted(maps.Keys(users)) {
		if ids := users[sid]; len(ids) > 1 {
			for _, id := range slices.Sorted(slices.Values(ids)) {
				blame(id, "resources", fmt.Sprintf("resource '%s' is already used in another node affinity rule", sid))
			}
		}
	}
	return errs
}

func (s *Sim) getHARules(rc *reqCtx) (any, error) {
	db := rc.db()
	full, digest := s.fullRulesLocked(db)
	secs := make([]*section, len(full))
	for i, r := range full {
		secs[i] = r.sec
	}
	errs := s.ruleErrorsLocked(db, secs)
	out := []map[string]any{}
	for _, r := range full {
		if rc.has("type") && rc.str("type") != r.sec.Type {
			continue
		}
		if rc.has("resource") && !slices.Contains(splitComma(r.sec.Opts["resources"]), rc.str("resource")) {
			continue
		}
		out = append(out, ruleView(r.sec, digest, r.order, errs[r.sec.ID]))
	}
	return out, nil
}

func (s *Sim) getHARule(rc *reqCtx) (any, error) {
	db := rc.db()
	full, digest := s.fullRulesLocked(db)
	secs := make([]*section, len(full))
	for i, r := range full {
		secs[i] = r.sec
	}
	for _, r := range full {
		if r.sec.ID == rc.str("rule") {
			return ruleView(r.sec, digest, r.order, s.ruleErrorsLocked(db, secs)[r.sec.ID]), nil
		}
	}
	return nil, fmt.Errorf("no such ha rule '%s'", rc.str("rule"))
}

var ruleOpts = []string{"resources", "nodes", "strict", "affinity", "comment", "disable"}

// setRuleOpts takes a rule's options from the request; disable=0 is
// dropped, as create_rule and update_rule do ("delete $param->{disable} if
// !$param->{disable}"): re-enabling takes delete=disable.
func setRuleOpts(rc *reqCtx, into map[string]string) {
	prev, had := into["disable"]
	setOpts(rc, ruleOpts, into)
	if rc.has("disable") && !rc.boolean("disable") {
		delete(into, "disable")
		if had {
			into["disable"] = prev
		}
	}
}

// normaliseList sorts a comma list as PVE prints its hash-backed lists.
func normaliseList(v string) string {
	items := splitComma(v)
	sort.Strings(items)
	return strings.Join(slices.Compact(items), ",")
}

// normaliseNodes is NodeAffinity.pm encode_plugin_value: nodes sorted by
// name, a priority of 0 (or none) printed as the bare name.
func normaliseNodes(v string) string {
	prios := parseNodePriorities(v)
	var out []string
	for _, n := range slices.Sorted(maps.Keys(prios)) {
		if p := prios[n]; p != 0 {
			out = append(out, fmt.Sprintf("%s:%d", n, p))
		} else {
			out = append(out, n)
		}
	}
	return strings.Join(out, ",")
}

// normaliseRuleLists stores a rule's resources and nodes as PVE does.
func normaliseRuleLists(r *section) {
	if v, ok := r.Opts["resources"]; ok {
		r.Opts["resources"] = normaliseList(v)
	}
	if v, ok := r.Opts["nodes"]; ok {
		r.Opts["nodes"] = normaliseNodes(v)
	}
}

// checkRuleLocked validates a rule as Rules.pm's API does: resources must be
// HA-managed, nodes must exist, then the feasibility checks (a subset:
// one node-affinity rule per resource, resource-affinity with ≥ 2
// resources and no more negative-affinity resources than nodes).
func (s *Sim) checkRuleLocked(db *ConfigDB, rules []*section, r *section) error {
	res := splitComma(r.Opts["resources"])
	if len(res) == 0 {
		return fmt.Errorf("no resources were specified")
	}
	managed, _ := s.haResourcesLocked(db)
	var unmanaged []string
	for _, sid := range res {
		if findResource(managed, sid) == nil {
			unmanaged = append(unmanaged, sid)
		}
	}
	if len(unmanaged) > 0 {
		return pveDie("cannot use unmanaged resource(s) %s.", strings.Join(unmanaged, ", "))
	}
	members := s.membersLocked(s.anyMemberLocked(db))
	if r.Type == "node-affinity" {
		var missing []string
		for _, n := range splitComma(r.Opts["nodes"]) {
			name, _, _ := strings.Cut(n, ":")
			if !slices.Contains(members, name) {
				missing = append(missing, name)
			}
		}
		if len(splitComma(r.Opts["nodes"])) == 0 {
			return fmt.Errorf("no nodes were specified")
		}
		if len(missing) > 0 {
			return pveDie("cannot use non-existent node(s) %s.", strings.Join(missing, ", "))
		}
	}
	candidate := slices.DeleteFunc(slices.Clone(rules), func(o *section) bool { return o.ID == r.ID })
	errs := s.ruleErrorsLocked(db, append(candidate, r))[r.ID]
	if len(errs) > 0 {
		fields := map[string]string{}
		for k, msgs := range errs {
			fields[k] = strings.Join(msgs, ", ")
		}
		return &APIError{Status: 400, Message: fmt.Sprintf("Rule '%s' is invalid.", r.ID), Errors: fields}
	}
	return nil
}

// anyMemberLocked names a node whose /etc/pve is db.
func (s *Sim) anyMemberLocked(db *ConfigDB) string {
	for _, n := range s.sortedNodeNamesLocked() {
		if s.st.Nodes[n].DB == db.ID {
			return n
		}
	}
	return ""
}

func (s *Sim) sortedNodeNamesLocked() []string {
	var out []string
	for n := range s.st.Nodes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (s *Sim) postHARule(rc *reqCtx) (any, error) {
	db := rc.db()
	if !s.groupsMigrated(db) {
		return nil, fmt.Errorf("cannot create ha rule: ha groups have not been migrated yet")
	}
	list, _ := s.readSectionsLocked(db, haRulesCfg)
	r := &section{Type: rc.str("type"), ID: rc.str("rule"), Opts: map[string]string{}}
	setRuleOpts(rc, r.Opts)
	normaliseRuleLists(r)
	if err := s.checkRuleLocked(db, list, r); err != nil {
		return nil, err
	}
	if findSection(list, r.ID) != nil {
		return nil, fmt.Errorf("HA rule '%s' already defined", r.ID)
	}
	// create_rule: order = get_next_ordinal, then written sorted by order.
	placed := insertOrdered(orderRules(list), orderedRule{sec: r, order: nextOrdinal(orderRules(list))})
	list = list[:0:0]
	for _, o := range placed {
		list = append(list, o.sec)
	}
	s.commitHALocked(db, haRulesCfg, list, true)
	return nil, nil
}

func (s *Sim) putHARule(rc *reqCtx) (any, error) {
	db := rc.db()
	if !s.groupsMigrated(db) {
		return nil, fmt.Errorf("cannot update ha rule: ha groups have not been migrated yet")
	}
	list, digest := s.readSectionsLocked(db, haRulesCfg)
	// API2/HA/Rules.pm update_rule: lock_ha_domain(..., "update HA rules failed").
	if err := staleDigest(rc, digest, "update HA rules failed: "); err != nil {
		return nil, err
	}
	r := findSection(list, rc.str("rule"))
	if r == nil {
		return nil, fmt.Errorf("HA rule '%s' does not exist", rc.str("rule"))
	}
	if t := rc.str("type"); t != "" && t != r.Type {
		return nil, fmt.Errorf("types does not match") // reconstruction
	}
	updated := &section{Type: r.Type, ID: r.ID, Opts: map[string]string{}}
	maps.Copy(updated.Opts, r.Opts)
	setRuleOpts(rc, updated.Opts)
	for _, k := range pveSplit(rc.str("delete")) {
		delete(updated.Opts, k)
	}
	normaliseRuleLists(updated)
	if err := s.checkRuleLocked(db, list, updated); err != nil {
		return nil, err
	}
	r.Opts = updated.Opts
	s.commitHALocked(db, haRulesCfg, list, true)
	return nil, nil
}

func (s *Sim) deleteHARule(rc *reqCtx) (any, error) { return s.deleteHA(rc, haRules, nil) }

// haRequestTask is the hastart/hastop task of an HA-managed guest: it only
// sets the requested state (ha-manager set / crm-command stop), the CRM acts
// later.
func (s *Sim) haRequestTask(rc *reqCtx, typ string, vmid int, state string) string {
	return s.haRequestTaskSID(rc, typ, fmt.Sprintf("vm:%d", vmid), vmid, state)
}

func (s *Sim) haRequestTaskSID(rc *reqCtx, typ, sid string, vmid int, state string) string {
	db := rc.db()
	kind := "VM"
	if strings.HasPrefix(sid, "ct:") {
		kind = "CT"
	}
	verb := "start"
	if typ == "hastop" {
		verb = "stop"
	}
	return s.startTaskLocked(rc, rc.node, typ, strconv.Itoa(vmid), func(t *taskRun) string {
		t.logf("Requesting HA %s for %s %d", verb, kind, vmid)
		if !s.sleep(s.cfg.dur(s.cfg.TaskDuration, DefaultTaskDuration)) {
			return "unexpected status"
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		list, _ := s.haResourcesLocked(db)
		if r := findResource(list, sid); r != nil {
			r.Opts["state"] = state
			s.writeSectionsLocked(db, haResourcesCfg, list)
			s.saveLocked()
		}
		s.scheduleCRMLocked(db.ID)
		return ""
	})
}

// POST /cluster/ha/resources/{sid}/migrate|relocate: a CRM command the
// manager carries out HADelay later (relocate stops and starts; the lab
// treats both as moving the guest). PVE 9 answers {sid, requested-node},
// PVE 8 null (pve-ha-manager API2/HA/Resources.pm).
func (s *Sim) postHAMotion(rc *reqCtx) (any, error) {
	db := rc.db()
	sid, vmid, err := s.parseSID(db, rc.str("sid"))
	if err != nil {
		return nil, err
	}
	list, _ := s.haResourcesLocked(db)
	r := findResource(list, sid)
	if r == nil || r.Opts["state"] == "ignored" {
		return nil, pveDie("resource '%s' is not HA managed", sid)
	}
	if s.haErrorLocked(db, sid) {
		return nil, pveDie("service '%s' in error state, must be disabled and fixed first", sid)
	}
	target := rc.str("node")
	if db.Corosync == nil || db.Corosync.Member(target) == nil {
		return nil, pveDie("no such cluster node '%s'", target) // reconstruction: the CRM ignores it, PVE logs only
	}
	s.haLaterLocked(s.crmRound(), db.ID, func(d *ConfigDB) {
		if !s.nodeUpLocked(target) {
			return
		}
		if e, ok := s.findVMLocked(d, vmid); ok && e.Node != target {
			_ = s.moveGuestLocked(d, vmid, e.Node, target, func(string, ...any) {})
			s.scheduleCRMLocked(d.ID)
		}
	})
	if s.cfg.Version < 9 {
		return nil, nil
	}
	return map[string]any{"sid": sid, "requested-node": target}, nil
}
