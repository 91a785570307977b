package core

import (
	"fmt"
	"strconv"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/ha"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// HA as pve-ha-manager keeps it (src/PVE/API2/HA/{Resources,Groups,Rules}.pm,
// src/PVE/HA/Config.pm): /etc/pve/ha/resources.cfg, groups.cfg (PVE 8) and
// rules.cfg (PVE 9). The files' model and rules, and the CRM's decisions,
// are pvesim/ha's; here are the handlers, the state they need and the CRM's
// timers. On PVE 9 an empty or missing groups.cfg means "groups have been
// migrated to rules" (have_groups_been_migrated) and every group call
// fails (H2).
//
// The CRM is a timer: after any HA change or an HA start/stop request it
// brings each managed guest to its requested state HADelay later (H4: the
// hastart/hastop task is OK long before the guest runs). A node powered off
// (SetOnline) is fenced FenceDelay later and its HA guests are recovered on
// another member (H3, H7): the config file is renamed to the new node as
// PVE2.pm steal_service does, honouring node-affinity rules (9) or groups
// (8), and the guests' replication jobs are rewritten source↔target as the
// next pvesr run on the new node does (ReplicationState.pm).

// haConfigLocked is db's HA files as pvesim/ha reads them.
func (s *Sim) haConfigLocked(db *ConfigDB) ha.Config {
	res, _ := s.ReadSectionsLocked(db, ha.ResourcesCfg)
	groups, _ := s.ReadSectionsLocked(db, ha.GroupsCfg)
	rules, _ := s.ReadSectionsLocked(db, ha.RulesCfg)
	return ha.Config{Version: s.Cfg.Version, Resources: res, Groups: groups, Rules: rules}
}

// haGuestLocked tells pvesim/ha a guest's kind (ct) and whether db has it.
func (s *Sim) haGuestLocked(db *ConfigDB) func(vmid int) (ct, exists bool) {
	return func(vmid int) (bool, bool) {
		e, ok := s.FindVMLocked(db, vmid)
		return e.Kind == "lxc", ok
	}
}

// haServiceLocked is what the lab knows of resource r's guest.
func (s *Sim) haServiceLocked(db *ConfigDB, r *section) ha.Service {
	vmid, err := strconv.Atoi(r.ID)
	if err != nil {
		return ha.Service{}
	}
	e, ok := s.FindVMLocked(db, vmid)
	if !ok {
		return ha.Service{}
	}
	sid := ha.SID(r)
	return ha.Service{Node: e.Node, CT: e.Kind == "lxc", NodeUp: s.NodeUpLocked(e.Node), Running: s.RunningLocked(e.Node, vmid),
		Error: s.haErrorLocked(db, sid), Motion: s.haMotionLocked(db, sid)}
}

// parseSID is HA::Config parse_sid on db's guests.
func (s *Sim) parseSID(db *ConfigDB, sid string) (string, int, error) {
	return ha.ParseSID(sid, s.haGuestLocked(db))
}

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

func (s *Sim) HAResourcesLocked(db *ConfigDB) ([]*section, string) {
	return s.ReadSectionsLocked(db, ha.ResourcesCfg)
}

// groupsMigrated is have_groups_been_migrated: always false on PVE 8.
func (s *Sim) groupsMigrated(db *ConfigDB) bool {
	if s.Cfg.Version < 9 {
		return false
	}
	groups, _ := s.ReadSectionsLocked(db, ha.GroupsCfg)
	return ha.Config{Version: s.Cfg.Version, Groups: groups}.GroupsMigrated()
}

// HAManagedLocked is vm_is_ha_managed: configured and not ignored.
func (s *Sim) HAManagedLocked(db *ConfigDB, vmid int) (*section, bool) {
	list, _ := s.HAResourcesLocked(db)
	r := ha.FindResource(list, ha.GuestSID(false, vmid))
	return r, ha.Managed(r)
}

// HAConfiguredLocked is service_is_configured (any state).
func (s *Sim) HAConfiguredLocked(db *ConfigDB, vmid int) bool {
	list, _ := s.HAResourcesLocked(db)
	return ha.FindResource(list, ha.GuestSID(false, vmid)) != nil
}

// haConfiguredSIDLocked tells whether a guest of the VM list is an HA resource.
func (s *Sim) haConfiguredSIDLocked(db *ConfigDB, e VMEntry) bool {
	list, _ := s.HAResourcesLocked(db)
	return ha.FindResource(list, ha.GuestSID(e.Kind == "lxc", e.VMID)) != nil
}

// setResourceOpts takes a resource's options from the request.
func setResourceOpts(rc *Req, r *section) {
	setOpts(rc, ha.ResourceOpts, r.Opts)
	ha.StoreResourceState(r)
}

func (s *Sim) getHAResources(rc *Req) (any, error) {
	db := rc.DB()
	list, digest := s.HAResourcesLocked(db)
	out := []map[string]any{}
	for _, r := range list {
		if rc.Has("type") && rc.Str("type") != r.Type {
			continue
		}
		out = append(out, ha.ResourceView(r, digest, s.groupsMigrated(db)))
	}
	return out, nil
}

func (s *Sim) getHAResource(rc *Req) (any, error) {
	db := rc.DB()
	sid, _, err := s.parseSID(db, rc.Str("sid"))
	if err != nil {
		return nil, err
	}
	list, digest := s.HAResourcesLocked(db)
	r := ha.FindResource(list, sid)
	if r == nil {
		return nil, fmt.Errorf("no such resource '%s'", sid)
	}
	return ha.ResourceView(r, digest, s.groupsMigrated(db)), nil
}

func (s *Sim) postHAResource(rc *Req) (any, error) {
	db := rc.DB()
	if err := s.RequireQuorumLocked(db); err != nil {
		return nil, err
	}
	sid, vmid, err := s.parseSID(db, rc.Str("sid"))
	if err != nil {
		return nil, err
	}
	cfg := s.haConfigLocked(db)
	r, err := cfg.NewResource(sid, vmid, rc.Str("type"), rc.Has("group"), s.haGuestLocked(db))
	if err != nil {
		return nil, err
	}
	setResourceOpts(rc, r)
	s.commitHALocked(db, ha.ResourcesCfg, append(cfg.Resources, r), true)
	return nil, nil
}

func (s *Sim) putHAResource(rc *Req) (any, error) {
	db := rc.DB()
	sid, _, err := s.parseSID(db, rc.Str("sid"))
	if err != nil {
		return nil, err
	}
	if g := rc.Str("group"); g != "" {
		if err := s.haConfigLocked(db).CheckGroupOption(g); err != nil {
			return nil, err
		}
	}
	list, digest := s.HAResourcesLocked(db)
	// API2/HA/Resources.pm update: lock_ha_domain(..., "update resource failed").
	if err := staleDigest(rc, digest, "update resource failed: "); err != nil {
		return nil, err
	}
	r := ha.FindResource(list, sid)
	if r == nil {
		return nil, fmt.Errorf("no such resource '%s'", sid) // reconstruction (update_resources_config)
	}
	if s.haErrorLocked(db, sid) {
		// Resources.pm check_service_state; disabling is the way out.
		if rc.Str("state") != "disabled" {
			return nil, fmt.Errorf("service '%s' in error state, must be disabled and fixed first", sid)
		}
		s.setHAErrorLocked(db, sid, false)
	}
	setResourceOpts(rc, r)
	for _, k := range pveschema.SplitList(rc.Str("delete")) {
		delete(r.Opts, k)
	}
	s.commitHALocked(db, ha.ResourcesCfg, list, true)
	return nil, nil
}

func (s *Sim) deleteHAResource(rc *Req) (any, error) {
	db := rc.DB()
	sid, _, err := s.parseSID(db, rc.Str("sid"))
	if err != nil {
		return nil, err
	}
	list, _ := s.HAResourcesLocked(db)
	if ha.FindResource(list, sid) == nil {
		return nil, pvecommon.Die("cannot delete service '%s', not HA managed!", sid)
	}
	s.WriteSectionsLocked(db, ha.ResourcesCfg, ha.WithoutResource(list, sid))
	purge := s.Cfg.Version >= 9 && (!rc.Has("purge") || rc.Bool("purge"))
	if purge {
		rules, _ := s.ReadSectionsLocked(db, ha.RulesCfg)
		s.WriteSectionsLocked(db, ha.RulesCfg, ha.PurgeFromRules(rules, sid))
	}
	s.SaveLocked()
	return nil, nil
}

// haRoutes are the HA endpoints: rules only on PVE 9.
func (s *Sim) haRoutes() map[string]Handler {
	table := map[string]Handler{
		"GET /cluster/ha/resources":                 s.getHAResources,
		"GET /cluster/ha/status/current":            s.getHAStatusCurrent,
		"POST /cluster/ha/resources":                s.postHAResource,
		"GET /cluster/ha/resources/{sid}":           s.getHAResource,
		"PUT /cluster/ha/resources/{sid}":           s.putHAResource,
		"DELETE /cluster/ha/resources/{sid}":        s.deleteHAResource,
		"POST /cluster/ha/resources/{sid}/migrate":  s.postHAMotion,
		"POST /cluster/ha/resources/{sid}/relocate": s.postHAMotion,
		"GET /cluster/ha/groups":                    s.getHAGroups,
		"POST /cluster/ha/groups":                   s.postHAGroup,
		"GET /cluster/ha/groups/{group}":            s.getHAGroup,
		"PUT /cluster/ha/groups/{group}":            s.putHAGroup,
		"DELETE /cluster/ha/groups/{group}":         s.deleteHAGroup,
	}
	if s.Cfg.Version >= 9 { // HA rules are new in PVE 9 (pve-ha-manager 5.0)
		table["GET /cluster/ha/rules"] = s.getHARules
		table["POST /cluster/ha/rules"] = s.postHARule
		table["GET /cluster/ha/rules/{rule}"] = s.getHARule
		table["PUT /cluster/ha/rules/{rule}"] = s.putHARule
		table["DELETE /cluster/ha/rules/{rule}"] = s.deleteHARule
	}
	return table
}
