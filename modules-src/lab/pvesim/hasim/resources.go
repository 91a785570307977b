// Package hasim simulates PVE's high availability: the /cluster/ha
// endpoints of pve-ha-manager's PVE/API2/HA/{Resources,Groups,Rules,Status}.pm
// on /etc/pve/ha/resources.cfg, groups.cfg (PVE 8) and rules.cfg (PVE 9;
// PVE/HA/Config.pm), and the CRM that acts on them as PVE/HA/Manager.pm,
// PVE/HA/NodeStatus.pm and PVE/HA/Env/PVE2.pm do, on the lab's clock. The
// files' model and rules, and the CRM's decisions, are pvesim/ha's; here are
// the handlers and the CRM's timers (crm.go). What the guest model,
// qemusim, lxcsim and the pools read of HA (a guest's HA state, a
// hastart/hastop request, the services in error or moving) is
// pvesim/guests' hamodel.go; a request recorded there reaches the CRM
// through core's OnHARequest, a node's power through OnNodePower. On PVE 9 an empty or missing groups.cfg means "groups
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
// next pvesr run on the new node does (ReplicationState.pm). Guests start
// and move through the guest model's operations (pvesim/guests:
// StartGuestLocked, MoveGuestLocked, SetRunningLocked), never qemu or lxc
// code.
package hasim

import (
	"fmt"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guests"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/ha"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// haConfigLocked is db's HA files as pvesim/ha reads them.
func (s *backend) haConfigLocked(db *core.ConfigDB) ha.Config {
	res, _ := s.ReadSectionsLocked(db, ha.ResourcesCfg)
	groups, _ := s.ReadSectionsLocked(db, ha.GroupsCfg)
	rules, _ := s.ReadSectionsLocked(db, ha.RulesCfg)
	return ha.Config{Version: s.Cfg.Version, Resources: res, Groups: groups, Rules: rules}
}

// haGuestLocked tells pvesim/ha a guest's kind (ct) and whether db has it.
func (s *backend) haGuestLocked(db *core.ConfigDB) func(vmid int) (ct, exists bool) {
	return func(vmid int) (bool, bool) {
		e, ok := s.FindVMLocked(db, vmid)
		return e.Kind == "lxc", ok
	}
}

// parseSID is HA::Config parse_sid on db's guests.
func (s *backend) parseSID(db *core.ConfigDB, sid string) (string, int, error) {
	return ha.ParseSID(sid, s.haGuestLocked(db))
}

// groupsMigrated is have_groups_been_migrated: always false on PVE 8.
func (s *backend) groupsMigrated(db *core.ConfigDB) bool {
	if s.Cfg.Version < 9 {
		return false
	}
	groups, _ := s.ReadSectionsLocked(db, ha.GroupsCfg)
	return ha.Config{Version: s.Cfg.Version, Groups: groups}.GroupsMigrated()
}

// setResourceOpts takes a resource's options from the request.
func setResourceOpts(rc *core.Req, r *pvecommon.Section) {
	setOpts(rc, ha.ResourceOpts, r.Opts)
	ha.StoreResourceState(r)
}

func (s *backend) getHAResources(rc *core.Req) (any, error) {
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

func (s *backend) getHAResource(rc *core.Req) (any, error) {
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

func (s *backend) postHAResource(rc *core.Req) (any, error) {
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

func (s *backend) putHAResource(rc *core.Req) (any, error) {
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
	if s.HAErrorLocked(db, sid) {
		// Resources.pm check_service_state; disabling is the way out.
		if rc.Str("state") != "disabled" {
			return nil, fmt.Errorf("service '%s' in error state, must be disabled and fixed first", sid)
		}
		s.SetHAErrorLocked(db, sid, false)
	}
	setResourceOpts(rc, r)
	for _, k := range pveschema.SplitList(rc.Str("delete")) {
		delete(r.Opts, k)
	}
	s.commitHALocked(db, ha.ResourcesCfg, list, true)
	return nil, nil
}

func (s *backend) deleteHAResource(rc *core.Req) (any, error) {
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

// routes are the HA endpoints: rules only on PVE 9.
func (s *backend) routes() map[string]core.Handler {
	table := map[string]core.Handler{
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

// backend serves the /cluster/ha endpoints and runs the CRM on the core's
// state. The HA files are State's; what the backend keeps of its own is
// the CRM's clock of the nodes back from a power-off.
type backend struct {
	guests.Model
	haBackAt map[string]time.Time // when each node came back from a power-off (crm.go), under Mu
}

// Register adds the HA endpoints (rules only on PVE 9), the CRM's rounds
// for the HA requests of guests and its reaction to the nodes' power, and
// PVE 9's groups' migration loop to s.
func Register(s *core.Sim) {
	b := &backend{Model: guests.New(s)}
	s.Handle(b.routes())
	s.OnHARequest(b.scheduleCRMLocked)
	s.OnNodePower(func(node string, online bool) {
		if online {
			b.nodeBackLocked(node)
		} else {
			b.nodeDownLocked(node)
		}
	})
	s.OnStart(b.groupMigrationLoop)
}
