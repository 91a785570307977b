package hasim

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/ha"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// HA rules, PVE 9 (/cluster/ha/rules; pve-ha-manager's API2/HA/Rules.pm).

// fullRulesLocked is the API's $get_full_rules_config (ha.Config.FullRules)
// with rules.cfg's digest.
func (s *backend) fullRulesLocked(db *core.ConfigDB) ([]ha.OrderedRule, string) {
	_, digest := s.ReadSectionsLocked(db, ha.RulesCfg)
	return s.haConfigLocked(db).FullRules(), digest
}

// haMembersLocked are the members of db's cluster, the nodes rules name.
func (s *backend) haMembersLocked(db *core.ConfigDB) []string {
	return s.MembersLocked(s.anyMemberLocked(db))
}

func (s *backend) getHARules(rc *core.Req) (any, error) {
	db := rc.DB()
	full, digest := s.fullRulesLocked(db)
	errs := ha.RuleErrors(ha.Sections(full), len(s.haMembersLocked(db)))
	out := []map[string]any{}
	for _, r := range full {
		if rc.Has("type") && rc.Str("type") != r.Sec.Type {
			continue
		}
		if rc.Has("resource") && !slices.Contains(pvecommon.SplitComma(r.Sec.Opts["resources"]), rc.Str("resource")) {
			continue
		}
		out = append(out, ha.RuleView(r.Sec, digest, r.Order, errs[r.Sec.ID]))
	}
	return out, nil
}

func (s *backend) getHARule(rc *core.Req) (any, error) {
	db := rc.DB()
	full, digest := s.fullRulesLocked(db)
	for _, r := range full {
		if r.Sec.ID == rc.Str("rule") {
			return ha.RuleView(r.Sec, digest, r.Order, ha.RuleErrors(ha.Sections(full), len(s.haMembersLocked(db)))[r.Sec.ID]), nil
		}
	}
	return nil, fmt.Errorf("no such ha rule '%s'", rc.Str("rule"))
}

// setRuleOpts takes a rule's options from the request; disable=0 is
// dropped, as create_rule and update_rule do ("delete $param->{disable} if
// !$param->{disable}"): re-enabling takes delete=disable.
func setRuleOpts(rc *core.Req, into map[string]string) {
	prev, had := into["disable"]
	setOpts(rc, ha.RuleOpts, into)
	if rc.Has("disable") && !rc.Bool("disable") {
		delete(into, "disable")
		if had {
			into["disable"] = prev
		}
	}
}

// checkRuleLocked validates a rule as Rules.pm's API does
// (ha.Config.CheckRule); an infeasible rule is answered 400 with the
// messages per option.
func (s *backend) checkRuleLocked(db *core.ConfigDB, rules []*pvecommon.Section, r *pvecommon.Section) error {
	cfg := s.haConfigLocked(db)
	cfg.Rules = rules
	err := cfg.CheckRule(r, s.haMembersLocked(db))
	var invalid *ha.InvalidRule
	if errors.As(err, &invalid) {
		return &core.APIError{Status: 400, Message: invalid.Error(), Errors: invalid.Fields}
	}
	return err
}

// anyMemberLocked names a node whose /etc/pve is db.
func (s *backend) anyMemberLocked(db *core.ConfigDB) string {
	for _, n := range s.SortedNodeNamesLocked() {
		if s.State.Nodes[n].DB == db.ID {
			return n
		}
	}
	return ""
}

func (s *backend) postHARule(rc *core.Req) (any, error) {
	db := rc.DB()
	if !s.groupsMigrated(db) {
		return nil, fmt.Errorf("cannot create ha rule: ha groups have not been migrated yet")
	}
	list, _ := s.ReadSectionsLocked(db, ha.RulesCfg)
	r := &pvecommon.Section{Type: rc.Str("type"), ID: rc.Str("rule"), Opts: map[string]string{}}
	setRuleOpts(rc, r.Opts)
	ha.NormaliseRuleLists(r)
	if err := s.checkRuleLocked(db, list, r); err != nil {
		return nil, err
	}
	if pvecommon.FindSection(list, r.ID) != nil {
		return nil, fmt.Errorf("HA rule '%s' already defined", r.ID)
	}
	s.commitHALocked(db, ha.RulesCfg, ha.AddRule(list, r), true)
	return nil, nil
}

func (s *backend) putHARule(rc *core.Req) (any, error) {
	db := rc.DB()
	if !s.groupsMigrated(db) {
		return nil, fmt.Errorf("cannot update ha rule: ha groups have not been migrated yet")
	}
	list, digest := s.ReadSectionsLocked(db, ha.RulesCfg)
	// API2/HA/Rules.pm update_rule: lock_ha_domain(..., "update HA rules failed").
	if err := staleDigest(rc, digest, "update HA rules failed: "); err != nil {
		return nil, err
	}
	r := pvecommon.FindSection(list, rc.Str("rule"))
	if r == nil {
		return nil, fmt.Errorf("HA rule '%s' does not exist", rc.Str("rule"))
	}
	if t := rc.Str("type"); t != "" && t != r.Type {
		return nil, fmt.Errorf("types does not match") // reconstruction
	}
	updated := &pvecommon.Section{Type: r.Type, ID: r.ID, Opts: map[string]string{}}
	maps.Copy(updated.Opts, r.Opts)
	setRuleOpts(rc, updated.Opts)
	for _, k := range pveschema.SplitList(rc.Str("delete")) {
		delete(updated.Opts, k)
	}
	ha.NormaliseRuleLists(updated)
	if err := s.checkRuleLocked(db, list, updated); err != nil {
		return nil, err
	}
	r.Opts = updated.Opts
	s.commitHALocked(db, ha.RulesCfg, list, true)
	return nil, nil
}

func (s *backend) deleteHARule(rc *core.Req) (any, error) { return s.deleteHA(rc, haRules, nil) }

// POST /cluster/ha/resources/{sid}/migrate|relocate: a CRM command the
// manager carries out HADelay later (relocate stops and starts; the lab
// treats both as moving the guest). PVE 9 answers {sid, requested-node},
// PVE 8 null (pve-ha-manager API2/HA/Resources.pm).
func (s *backend) postHAMotion(rc *core.Req) (any, error) {
	db := rc.DB()
	sid, vmid, err := s.parseSID(db, rc.Str("sid"))
	if err != nil {
		return nil, err
	}
	list, _ := s.HAResourcesLocked(db)
	if !ha.Managed(ha.FindResource(list, sid)) {
		return nil, pvecommon.Die("resource '%s' is not HA managed", sid)
	}
	if s.HAErrorLocked(db, sid) {
		return nil, pvecommon.Die("service '%s' in error state, must be disabled and fixed first", sid)
	}
	target := rc.Str("node")
	if db.Corosync == nil || db.Corosync.Member(target) == nil {
		return nil, pvecommon.Die("no such cluster node '%s'", target) // reconstruction: the CRM ignores it, PVE logs only
	}
	s.haLaterLocked(s.crmRound(), db.ID, func(d *core.ConfigDB) {
		if !s.NodeUpLocked(target) {
			return
		}
		if e, ok := s.FindVMLocked(d, vmid); ok && e.Node != target {
			_ = s.MoveGuestLocked(d, vmid, e.Node, target, func(string, ...any) {})
			s.scheduleCRMLocked(d.ID)
		}
	})
	if s.Cfg.Version < 9 {
		return nil, nil
	}
	return map[string]any{"sid": sid, "requested-node": target}, nil
}
