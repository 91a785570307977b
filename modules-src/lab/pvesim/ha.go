package pvesim

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// HA as pve-ha-manager keeps it (src/PVE/API2/HA/{Resources,Groups,Rules}.pm,
// src/PVE/HA/Config.pm): /etc/pve/ha/resources.cfg, groups.cfg (PVE 8) and
// rules.cfg (PVE 9). On PVE 9 an empty or missing groups.cfg means "groups
// have been migrated to rules" (have_groups_been_migrated) and every group
// call fails (H2).
//
// The CRM is a timer: after any HA change or an HA start/stop request it
// brings each managed guest to its requested state HADelay later (H4: the
// hastart/hastop task is OK long before the guest runs). A node powered off
// (SetOnline) is fenced FenceDelay later and its HA guests are recovered on
// another member (H3, H7): the config file is renamed to the new node as
// PVE2.pm steal_service does, honouring node-affinity rules (9) or groups
// (8), and the guests' replication jobs are rewritten source↔target as the
// next pvesr run on the new node does (ReplicationState.pm).

const (
	haResourcesCfg = "ha/resources.cfg"
	haGroupsCfg    = "ha/groups.cfg"
	haRulesCfg     = "ha/rules.cfg"
)

var sidRe = regexp.MustCompile(`^(vm|ct):([1-9][0-9]*)$`)

// parseSID is HA::Config parse_sid: "vm:100", "ct:200" or a bare VMID.
func (s *Sim) parseSID(db *ConfigDB, sid string) (string, int, error) {
	if n, err := strconv.Atoi(sid); err == nil {
		e, ok := s.findVMLocked(db, n)
		if !ok {
			return "", 0, fmt.Errorf("unable to detect SID from VMID - VM/CT %d does not exist", n)
		}
		if e.Kind == "lxc" {
			return fmt.Sprintf("ct:%d", n), n, nil
		}
		return fmt.Sprintf("vm:%d", n), n, nil
	}
	m := sidRe.FindStringSubmatch(sid)
	if m == nil {
		return "", 0, fmt.Errorf("unable to parse service id '%s'", sid)
	}
	n, _ := strconv.Atoi(m[2])
	return sid, n, nil
}

func sidSection(sid string) (typ, id string) { typ, id, _ = strings.Cut(sid, ":"); return }

func sid(r *section) string { return r.Type + ":" + r.ID }

func (s *Sim) haErrorLocked(db *ConfigDB, sid string) bool { return s.haErrors[db.ID+"/"+sid] }

func (s *Sim) setHAErrorLocked(db *ConfigDB, sid string, on bool) {
	if s.haErrors == nil {
		s.haErrors = map[string]bool{}
	}
	if on {
		s.haErrors[db.ID+"/"+sid] = true
	} else {
		delete(s.haErrors, db.ID+"/"+sid)
	}
}

func (s *Sim) haResourcesLocked(db *ConfigDB) ([]*section, string) {
	return s.readSectionsLocked(db, haResourcesCfg)
}

func findResource(list []*section, sid string) *section {
	typ, id := sidSection(sid)
	for _, r := range list {
		if r.Type == typ && r.ID == id {
			return r
		}
	}
	return nil
}

// groupsMigrated is have_groups_been_migrated: always false on PVE 8.
func (s *Sim) groupsMigrated(db *ConfigDB) bool {
	if s.cfg.Version < 9 {
		return false
	}
	groups, _ := s.readSectionsLocked(db, haGroupsCfg)
	return len(groups) == 0
}

// haManagedLocked is vm_is_ha_managed: configured and not ignored.
func (s *Sim) haManagedLocked(db *ConfigDB, vmid int) (*section, bool) {
	list, _ := s.haResourcesLocked(db)
	r := findResource(list, fmt.Sprintf("vm:%d", vmid))
	if r == nil || r.Opts["state"] == "ignored" {
		return r, false
	}
	return r, true
}

// haConfiguredLocked is service_is_configured (any state).
func (s *Sim) haConfiguredLocked(db *ConfigDB, vmid int) bool {
	list, _ := s.haResourcesLocked(db)
	return findResource(list, fmt.Sprintf("vm:%d", vmid)) != nil
}

// haConfiguredSIDLocked tells whether a guest of the VM list is an HA resource.
func (s *Sim) haConfiguredSIDLocked(db *ConfigDB, e vmEntry) bool {
	list, _ := s.haResourcesLocked(db)
	typ := "vm"
	if e.Kind == "lxc" {
		typ = "ct"
	}
	return findResource(list, fmt.Sprintf("%s:%d", typ, e.VMID)) != nil
}

var haResourceOpts = []string{"state", "max_restart", "max_relocate", "comment", "group", "failback"}

// setResourceOpts takes a resource's options from the request; "enabled"
// is stored as its alias "started", as Resources.pm does.
func setResourceOpts(rc *reqCtx, r *section) {
	setOpts(rc, haResourceOpts, r.Opts)
	if r.Opts["state"] == "enabled" {
		r.Opts["state"] = "started"
	}
}

func resourceView(r *section, digest string, hideGroup bool) map[string]any {
	out := sectionView(map[string]any{"sid": r.Type + ":" + r.ID, "type": r.Type, "state": "started"},
		r, digest, "max_restart", "max_relocate", "failback")
	if hideGroup {
		delete(out, "group")
	}
	return out
}

// sectionView is an HA section as the API returns it: base's keys (ids
// and defaults), then the section's options, those named in ints as
// integers, and the file's digest when there is one.
func sectionView(base map[string]any, sec *section, digest string, ints ...string) map[string]any {
	for k, v := range sec.Opts {
		base[k] = v
		if slices.Contains(ints, k) {
			n, _ := strconv.Atoi(v)
			base[k] = n
		}
	}
	if digest != "" {
		base["digest"] = digest
	}
	return base
}

func (s *Sim) getHAResources(rc *reqCtx) (any, error) {
	db := rc.db()
	list, digest := s.haResourcesLocked(db)
	out := []map[string]any{}
	for _, r := range list {
		if rc.has("type") && rc.str("type") != r.Type {
			continue
		}
		out = append(out, resourceView(r, digest, s.groupsMigrated(db)))
	}
	return out, nil
}

func (s *Sim) getHAResource(rc *reqCtx) (any, error) {
	db := rc.db()
	sid, _, err := s.parseSID(db, rc.str("sid"))
	if err != nil {
		return nil, err
	}
	list, digest := s.haResourcesLocked(db)
	r := findResource(list, sid)
	if r == nil {
		return nil, fmt.Errorf("no such resource '%s'", sid)
	}
	return resourceView(r, digest, s.groupsMigrated(db)), nil
}

func (s *Sim) postHAResource(rc *reqCtx) (any, error) {
	db := rc.db()
	if err := s.requireQuorumLocked(db); err != nil {
		return nil, err
	}
	sid, vmid, err := s.parseSID(db, rc.str("sid"))
	if err != nil {
		return nil, err
	}
	typ, id := sidSection(sid)
	if t := rc.str("type"); t != "" && t != typ {
		return nil, fmt.Errorf("types does not match")
	}
	if rc.has("group") && s.groupsMigrated(db) {
		return nil, fmt.Errorf("invalid parameter 'group': ha groups have been migrated to rules")
	}
	e, ok := s.findVMLocked(db, vmid)
	if !ok {
		return nil, fmt.Errorf("resource '%s' does not exist in cluster", sid)
	}
	if typ == "vm" && e.Kind != "qemu-server" {
		return nil, fmt.Errorf("resource '%s' - guest with ID %d is not a VM", sid, vmid)
	}
	if typ == "ct" && e.Kind != "lxc" {
		return nil, fmt.Errorf("resource '%s' - guest with ID %d is not a CT", sid, vmid)
	}
	list, _ := s.haResourcesLocked(db)
	if findResource(list, sid) != nil {
		return nil, fmt.Errorf("create resource failed: resource ID '%s' already defined", sid)
	}
	r := &section{Type: typ, ID: id, Opts: map[string]string{}}
	setResourceOpts(rc, r)
	s.commitHALocked(db, haResourcesCfg, append(list, r), true)
	return nil, nil
}

func (s *Sim) putHAResource(rc *reqCtx) (any, error) {
	db := rc.db()
	sid, _, err := s.parseSID(db, rc.str("sid"))
	if err != nil {
		return nil, err
	}
	if g := rc.str("group"); g != "" {
		if s.groupsMigrated(db) {
			return nil, fmt.Errorf("invalid parameter 'group': ha groups have been migrated to rules")
		}
		groups, _ := s.readSectionsLocked(db, haGroupsCfg)
		if findSection(groups, g) == nil {
			return nil, fmt.Errorf("HA group '%s' does not exist", g)
		}
	}
	list, digest := s.haResourcesLocked(db)
	// API2/HA/Resources.pm update: lock_ha_domain(..., "update resource failed").
	if err := staleDigest(rc, digest, "update resource failed: "); err != nil {
		return nil, err
	}
	r := findResource(list, sid)
	if r == nil {
		return nil, fmt.Errorf("no such resource '%s'", sid) // reconstruction (update_resources_config)
	}
	if s.haErrorLocked(db, sid) {
		// Resources.pm check_service_state; disabling is the way out.
		if rc.str("state") != "disabled" {
			return nil, fmt.Errorf("service '%s' in error state, must be disabled and fixed first", sid)
		}
		s.setHAErrorLocked(db, sid, false)
	}
	setResourceOpts(rc, r)
	for _, k := range pveSplit(rc.str("delete")) {
		delete(r.Opts, k)
	}
	s.commitHALocked(db, haResourcesCfg, list, true)
	return nil, nil
}

func (s *Sim) deleteHAResource(rc *reqCtx) (any, error) {
	db := rc.db()
	sid, _, err := s.parseSID(db, rc.str("sid"))
	if err != nil {
		return nil, err
	}
	list, _ := s.haResourcesLocked(db)
	if findResource(list, sid) == nil {
		return nil, pveDie("cannot delete service '%s', not HA managed!", sid)
	}
	typ, id := sidSection(sid)
	list = slices.DeleteFunc(list, func(r *section) bool { return r.Type == typ && r.ID == id })
	s.writeSectionsLocked(db, haResourcesCfg, list)
	purge := s.cfg.Version >= 9 && (!rc.has("purge") || rc.boolean("purge"))
	if purge {
		rules, _ := s.readSectionsLocked(db, haRulesCfg)
		kept := rules[:0:0]
		for _, r := range rules {
			res := slices.DeleteFunc(splitComma(r.Opts["resources"]), func(x string) bool { return x == sid })
			if len(res) == 0 {
				continue
			}
			r.Opts["resources"] = strings.Join(res, ",")
			kept = append(kept, r)
		}
		s.writeSectionsLocked(db, haRulesCfg, kept)
	}
	s.saveLocked()
	return nil, nil
}

// ---- what groups, rules and resources share ----

// haSectionFile is one HA section-config collection served as
// /cluster/ha/<collection>[/{id}] (Groups.pm, Rules.pm): what differs
// between groups and rules. Every message is the one its PVE module dies
// with.
type haSectionFile struct {
	cfg  string // the file under /etc/pve
	key  string // the id parameter: "group", "rule"
	view func(sec *section, digest string) map[string]any
	// noSuch is read's message for a missing id (%s); deleteFailed
	// prefixes delete's copy of it ("" on rules, which die plainly).
	noSuch, deleteFailed string
}

var (
	haGroups = haSectionFile{cfg: haGroupsCfg, key: "group", view: groupView,
		noSuch: "no such ha group '%s'", deleteFailed: "delete ha group failed: "}
	haRules = haSectionFile{cfg: haRulesCfg, key: "rule",
		noSuch: "no such ha rule '%s'"}
)

// setOpts copies the request's values of opts into into: create and update
// take only the options the request names.
func setOpts(rc *reqCtx, opts []string, into map[string]string) {
	for _, k := range opts {
		if rc.has(k) {
			into[k] = rc.str(k)
		}
	}
}

// staleDigest is PVE's refusal of an update whose digest is not the file's
// (prefix: the module's "update … failed: ", if it has one).
func staleDigest(rc *reqCtx, digest, prefix string) error {
	if d := rc.str("digest"); d != "" && d != digest {
		return pveDie("%sdetected modified configuration - file changed by other user? Try again.", prefix)
	}
	return nil
}

// commitHALocked writes an HA file after a change and, for a change the
// CRM acts on, schedules its round.
func (s *Sim) commitHALocked(db *ConfigDB, cfg string, list []*section, crm bool) {
	s.writeSectionsLocked(db, cfg, list)
	s.saveLocked()
	if crm {
		s.scheduleCRMLocked(db.ID)
	}
}

// indexHA lists f's sections that keep accepts (nil: all), each with the
// file's digest.
func (s *Sim) indexHA(rc *reqCtx, f haSectionFile, keep func(*section) bool) []map[string]any {
	list, digest := s.readSectionsLocked(rc.db(), f.cfg)
	out := []map[string]any{}
	for _, sec := range list {
		if keep == nil || keep(sec) {
			out = append(out, f.view(sec, digest))
		}
	}
	return out
}

// readHA answers GET /cluster/ha/<collection>/{id}.
func (s *Sim) readHA(rc *reqCtx, f haSectionFile) (any, error) {
	list, digest := s.readSectionsLocked(rc.db(), f.cfg)
	sec := findSection(list, rc.str(f.key))
	if sec == nil {
		return nil, fmt.Errorf(f.noSuch, rc.str(f.key))
	}
	return f.view(sec, digest), nil
}

// deleteHA answers DELETE /cluster/ha/<collection>/{id}; inUse, when set,
// refuses to delete a section something still names.
func (s *Sim) deleteHA(rc *reqCtx, f haSectionFile, inUse func(id string) error) (any, error) {
	db := rc.db()
	list, _ := s.readSectionsLocked(db, f.cfg)
	id := rc.str(f.key)
	if findSection(list, id) == nil {
		return nil, fmt.Errorf(f.deleteFailed+f.noSuch, id)
	}
	if inUse != nil {
		if err := inUse(id); err != nil {
			return nil, err
		}
	}
	s.commitHALocked(db, f.cfg, slices.DeleteFunc(list, func(sec *section) bool { return sec.ID == id }), false)
	return nil, nil
}

// ---- groups ----

func (s *Sim) groupsRefused(db *ConfigDB, verb string) error {
	if s.groupsMigrated(db) {
		return fmt.Errorf("cannot %s: ha groups have been migrated to rules", verb)
	}
	return nil
}

func groupView(g *section, digest string) map[string]any {
	return sectionView(map[string]any{"group": g.ID, "type": "group"}, g, digest, "restricted", "nofailback")
}

func (s *Sim) getHAGroups(rc *reqCtx) (any, error) {
	if err := s.groupsRefused(rc.db(), "index groups"); err != nil {
		return nil, err
	}
	return s.indexHA(rc, haGroups, nil), nil
}

func (s *Sim) getHAGroup(rc *reqCtx) (any, error) {
	if err := s.groupsRefused(rc.db(), "read group"); err != nil {
		return nil, err
	}
	return s.readHA(rc, haGroups)
}

var groupOpts = []string{"nodes", "restricted", "nofailback", "comment"}

func (s *Sim) postHAGroup(rc *reqCtx) (any, error) {
	db := rc.db()
	if err := s.groupsRefused(db, "create group"); err != nil {
		return nil, err
	}
	list, _ := s.readSectionsLocked(db, haGroupsCfg)
	if findSection(list, rc.str("group")) != nil {
		return nil, fmt.Errorf("create ha group failed: ha group ID '%s' already defined", rc.str("group"))
	}
	g := &section{Type: "group", ID: rc.str("group"), Opts: map[string]string{}}
	setOpts(rc, groupOpts, g.Opts)
	s.commitHALocked(db, haGroupsCfg, append(list, g), true)
	return nil, nil
}

func (s *Sim) putHAGroup(rc *reqCtx) (any, error) {
	db := rc.db()
	if err := s.groupsRefused(db, "update group"); err != nil {
		return nil, err
	}
	list, digest := s.readSectionsLocked(db, haGroupsCfg)
	if err := staleDigest(rc, digest, "update ha group failed: "); err != nil {
		return nil, err
	}
	g := findSection(list, rc.str("group"))
	if g == nil {
		return nil, fmt.Errorf("update ha group failed: no such ha group '%s'", rc.str("group"))
	}
	setOpts(rc, groupOpts, g.Opts)
	for _, k := range pveSplit(rc.str("delete")) {
		if k == "nodes" {
			return nil, fmt.Errorf("update ha group failed: unable to delete required option '%s'", k)
		}
		delete(g.Opts, k)
	}
	s.commitHALocked(db, haGroupsCfg, list, true)
	return nil, nil
}

func (s *Sim) deleteHAGroup(rc *reqCtx) (any, error) {
	db := rc.db()
	if err := s.groupsRefused(db, "delete group"); err != nil {
		return nil, err
	}
	return s.deleteHA(rc, haGroups, func(id string) error {
		res, _ := s.haResourcesLocked(db)
		for _, r := range res {
			if r.Opts["group"] == id {
				return fmt.Errorf("delete ha group failed: ha group is used by service '%s:%s'", r.Type, r.ID)
			}
		}
		return nil
	})
}

// ---- rules (PVE 9) ----

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
