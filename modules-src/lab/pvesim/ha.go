package pvesim

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
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
	if err := staleDigest(rc, digest, ""); err != nil {
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
	haRules = haSectionFile{cfg: haRulesCfg, key: "rule", view: ruleView,
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
	s.commitHALocked(db, haGroupsCfg, append(list, g), false)
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
	s.commitHALocked(db, haGroupsCfg, list, false)
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

func ruleView(r *section, digest string) map[string]any {
	base := map[string]any{"rule": r.ID, "type": r.Type, "disable": 0}
	if r.Type == "node-affinity" {
		base["strict"] = 0
	}
	return sectionView(base, r, digest, "strict", "disable")
}

func (s *Sim) getHARules(rc *reqCtx) (any, error) {
	return s.indexHA(rc, haRules, func(r *section) bool {
		if rc.has("type") && rc.str("type") != r.Type {
			return false
		}
		return !rc.has("resource") || slices.Contains(splitComma(r.Opts["resources"]), rc.str("resource"))
	}), nil
}

func (s *Sim) getHARule(rc *reqCtx) (any, error) { return s.readHA(rc, haRules) }

var ruleOpts = []string{"resources", "nodes", "strict", "affinity", "comment", "disable"}

// normaliseList sorts a comma list as PVE prints its hash-backed lists.
func normaliseList(v string) string {
	items := splitComma(v)
	sort.Strings(items)
	return strings.Join(slices.Compact(items), ",")
}

// normaliseRuleLists stores a rule's resources and nodes as PVE does.
func normaliseRuleLists(r *section) {
	for _, k := range []string{"resources", "nodes"} {
		if v, ok := r.Opts[k]; ok {
			r.Opts[k] = normaliseList(v)
		}
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
	var problem string
	switch r.Type {
	case "node-affinity":
		for _, o := range rules {
			if o.ID == r.ID || o.Type != "node-affinity" || o.Opts["disable"] == "1" {
				continue
			}
			for _, sid := range res {
				if slices.Contains(splitComma(o.Opts["resources"]), sid) {
					problem = fmt.Sprintf("resource '%s' is already used in another node affinity rule", sid)
				}
			}
		}
	case "resource-affinity":
		if len(res) < 2 {
			problem = "rule is ineffective as there are less than two resources"
		} else if r.Opts["affinity"] == "negative" && len(res) > len(members) {
			problem = "rule defines more resources than available nodes"
		}
	}
	if problem != "" {
		return &APIError{Status: 400, Message: fmt.Sprintf("Rule '%s' is invalid.", r.ID), Errors: map[string]string{"resources": problem}}
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
	setOpts(rc, ruleOpts, r.Opts)
	normaliseRuleLists(r)
	if err := s.checkRuleLocked(db, list, r); err != nil {
		return nil, err
	}
	if findSection(list, r.ID) != nil {
		return nil, fmt.Errorf("HA rule '%s' already defined", r.ID)
	}
	s.commitHALocked(db, haRulesCfg, append(list, r), true)
	return nil, nil
}

func (s *Sim) putHARule(rc *reqCtx) (any, error) {
	db := rc.db()
	if !s.groupsMigrated(db) {
		return nil, fmt.Errorf("cannot update ha rule: ha groups have not been migrated yet")
	}
	list, digest := s.readSectionsLocked(db, haRulesCfg)
	if err := staleDigest(rc, digest, ""); err != nil {
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
	setOpts(rc, ruleOpts, updated.Opts)
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

// ---- the CRM ----

// scheduleCRMLocked brings every HA guest of db to its requested state
// HADelay from now (the CRM/LRM round trip, H4).
func (s *Sim) scheduleCRMLocked(dbID string) {
	s.haLaterLocked(s.cfg.dur(s.cfg.HADelay, 10*time.Second), dbID, s.reconcileHALocked)
}

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
		if s.haErrorLocked(db, sid(r)) {
			continue
		}
		running := s.runningLocked(e.Node, vmid)
		switch {
		case want == "started" && !running && e.Kind == "lxc":
			if c, err := s.loadCtConfLocked(db, e.Node, vmid); err == nil && !c.isTemplate() && c.lock() == "" {
				s.setRunningLocked(e.Node, vmid, true)
				changed = true
			}
		case want == "started" && !running:
			if c, err := s.loadQmConfLocked(db, e.Node, vmid); err == nil && !c.isTemplate() && c.lock() == "" {
				c.applyPending()
				s.writeQmConfLocked(db, e.Node, vmid, c)
				s.setRunningLocked(e.Node, vmid, true)
				changed = true
			}
		case (want == "stopped" || want == "disabled") && running:
			s.setRunningLocked(e.Node, vmid, false)
			changed = true
		}
	}
	if changed {
		s.saveLocked()
	}
}

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

// ---- fencing and recovery ----

// nodeDownLocked is called when a node powers off: FenceDelay later, if it
// is still down and the rest is quorate, its HA guests are recovered.
func (s *Sim) nodeDownLocked(node string) {
	dbID := s.st.Nodes[node].DB
	d := s.cfg.dur(s.cfg.FenceDelay, 60*time.Second)
	s.haLaterLocked(d, dbID, func(db *ConfigDB) {
		if !s.nodeUpLocked(node) && db.Corosync != nil && s.quorateLocked(db) {
			s.recoverNodeLocked(db, node)
		}
	})
}

// recoverNodeLocked moves the fenced node's HA guests to their best node.
func (s *Sim) recoverNodeLocked(db *ConfigDB, dead string) {
	list, _ := s.haResourcesLocked(db)
	rules, _ := s.readSectionsLocked(db, haRulesCfg)
	groups, _ := s.readSectionsLocked(db, haGroupsCfg)
	load := map[string]int{}
	for _, e := range s.vmListLocked(db) {
		load[e.Node]++
	}
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
		target := s.recoveryNodeLocked(db, r, rules, groups, dead, load)
		if target == "" {
			continue // no allowed node: stays in recovery (reconstruction of the state)
		}
		missing := s.missingVolumesLocked(db, e, target)
		raw, _ := s.readEtcPve(db, guestConfPath(dead, e.Kind, vmid))
		s.removeEtcPve(db, guestConfPath(dead, e.Kind, vmid))
		s.writeEtcPve(db, guestConfPath(target, e.Kind, vmid), raw)
		delete(n.Running, vmid)
		load[target]++
		s.switchReplicationLocked(db, vmid, dead, target)
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

// recoveryNodeLocked picks where a guest goes: the highest-priority online
// nodes of its node-affinity rule (9) or group (8), the least loaded among
// them; without a strict rule / restricted group any online member will do.
func (s *Sim) recoveryNodeLocked(db *ConfigDB, r *section, rules, groups []*section, dead string, load map[string]int) string {
	sid := r.Type + ":" + r.ID
	var prefs string
	strict := false
	for _, rule := range rules {
		if rule.Type == "node-affinity" && rule.Opts["disable"] != "1" && slices.Contains(splitComma(rule.Opts["resources"]), sid) {
			prefs, strict = rule.Opts["nodes"], rule.Opts["strict"] == "1"
		}
	}
	if g := r.Opts["group"]; g != "" && s.cfg.Version < 9 {
		if gs := findSection(groups, g); gs != nil {
			prefs, strict = gs.Opts["nodes"], gs.Opts["restricted"] == "1"
		}
	}
	up := func(n string) bool { return n != dead && s.nodeUpLocked(n) && s.memberUpLocked(n) }
	best, bestPrio := "", -1
	for _, p := range splitComma(prefs) {
		name, prio, _ := strings.Cut(p, ":")
		pr := 0
		if prio != "" {
			pr, _ = strconv.Atoi(prio)
		}
		if !up(name) {
			continue
		}
		if pr > bestPrio || pr == bestPrio && load[name] < load[best] {
			best, bestPrio = name, pr
		}
	}
	if best != "" || strict {
		return best
	}
	for _, m := range s.membersLocked(s.anyMemberLocked(db)) {
		if up(m) && (best == "" || load[m] < load[best]) {
			best = m
		}
	}
	return best
}

// switchReplicationLocked is what the next pvesr run on the new node does
// (ReplicationConfig.pm switch_replication_job_target_nolock): the job that
// targeted the new node now targets the old one; every job's source is the
// new node.
func (s *Sim) switchReplicationLocked(db *ConfigDB, vmid int, oldNode, newNode string) {
	list, _ := s.readSectionsLocked(db, replicationCfg)
	changed := false
	for _, j := range list {
		if g, _ := parseReplID(j.ID); g != vmid {
			continue
		}
		if j.Opts["target"] == newNode {
			j.Opts["target"] = oldNode
		}
		j.Opts["source"] = newNode
		changed = true
	}
	if changed {
		s.writeSectionsLocked(db, replicationCfg, list)
	}
}

// ---- failback ----

// nodeBackLocked: FailbackDelay after a node returns, HA guests whose
// node-affinity rule (9, failback not 0) or group (8, nofailback not 1)
// prefers it over their current node migrate there, running as they were.
func (s *Sim) nodeBackLocked(node string) {
	dbID := s.st.Nodes[node].DB
	// pve-guests at boot: guests with onboot=1 start, HA ones are the CRM's.
	if db := s.st.DBs[dbID]; db != nil {
		for _, e := range s.vmListLocked(db) {
			if e.Node != node || s.haConfiguredSIDLocked(db, e) {
				continue
			}
			raw, _ := s.readEtcPve(db, guestConfPath(node, e.Kind, e.VMID))
			if c := parseQmConf(raw); c.Keys["onboot"] == "1" && !c.isTemplate() {
				s.setRunningLocked(node, e.VMID, true)
			}
		}
		s.scheduleCRMLocked(dbID)
	}
	d := s.cfg.dur(s.cfg.FailbackDelay, 2*time.Minute)
	s.haLaterLocked(d, dbID, func(db *ConfigDB) {
		if s.nodeUpLocked(node) && s.quorateLocked(db) {
			s.failbackLocked(db, node)
		}
	})
}

func (s *Sim) failbackLocked(db *ConfigDB, back string) {
	list, _ := s.haResourcesLocked(db)
	rules, _ := s.readSectionsLocked(db, haRulesCfg)
	groups, _ := s.readSectionsLocked(db, haGroupsCfg)
	changed := false
	for _, r := range list {
		if r.Opts["state"] == "disabled" || r.Opts["state"] == "ignored" {
			continue
		}
		sid := r.Type + ":" + r.ID
		prefs, failback := "", true
		for _, rule := range rules {
			if rule.Type == "node-affinity" && rule.Opts["disable"] != "1" && slices.Contains(splitComma(rule.Opts["resources"]), sid) {
				prefs = rule.Opts["nodes"]
			}
		}
		if s.cfg.Version >= 9 {
			failback = r.Opts["failback"] != "0"
		} else if gs := findSection(groups, r.Opts["group"]); gs != nil {
			prefs, failback = gs.Opts["nodes"], gs.Opts["nofailback"] != "1"
		}
		if !failback || prefs == "" {
			continue
		}
		vmid, _ := strconv.Atoi(r.ID)
		e, ok := s.findVMLocked(db, vmid)
		if !ok || e.Node == back {
			continue
		}
		prio := func(n string) int {
			for _, p := range splitComma(prefs) {
				name, pr, _ := strings.Cut(p, ":")
				if name == n {
					v, _ := strconv.Atoi(pr)
					return v
				}
			}
			return -1
		}
		if prio(back) <= prio(e.Node) {
			continue
		}
		running := s.runningLocked(e.Node, vmid)
		raw, _ := s.readEtcPve(db, guestConfPath(e.Node, e.Kind, vmid))
		s.removeEtcPve(db, guestConfPath(e.Node, e.Kind, vmid))
		s.writeEtcPve(db, guestConfPath(back, e.Kind, vmid), raw)
		s.setRunningLocked(e.Node, vmid, false)
		if running {
			s.setRunningLocked(back, vmid, true)
		}
		s.switchReplicationLocked(db, vmid, e.Node, back)
		changed = true
	}
	if changed {
		s.saveLocked()
	}
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
	if db.Corosync == nil || db.Corosync.member(target) == nil {
		return nil, pveDie("no such cluster node '%s'", target) // reconstruction: the CRM ignores it, PVE logs only
	}
	s.haLaterLocked(s.cfg.dur(s.cfg.HADelay, 10*time.Second), db.ID, func(d *ConfigDB) {
		if !s.nodeUpLocked(target) {
			return
		}
		if e, ok := s.findVMLocked(d, vmid); ok && e.Node != target && e.Kind == "qemu-server" {
			_ = s.moveGuestLocked(d, vmid, e.Node, target, func(string, ...any) {})
		}
	})
	if s.cfg.Version < 9 {
		return nil, nil
	}
	return map[string]any{"sid": sid, "requested-node": target}, nil
}
