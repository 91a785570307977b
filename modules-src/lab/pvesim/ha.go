package pvesim

import (
	"fmt"
	"regexp"
	"slices"
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
