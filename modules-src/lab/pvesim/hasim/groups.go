package hasim

import (
	"fmt"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/ha"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// HA groups (/cluster/ha/groups; pve-ha-manager's API2/HA/Groups.pm).

func (s *backend) groupsRefused(db *core.ConfigDB, verb string) error {
	if s.groupsMigrated(db) {
		return fmt.Errorf("cannot %s: ha groups have been migrated to rules", verb)
	}
	return nil
}

func (s *backend) getHAGroups(rc *core.Req) (any, error) {
	if err := s.groupsRefused(rc.DB(), "index groups"); err != nil {
		return nil, err
	}
	return s.indexHA(rc, haGroups, nil), nil
}

func (s *backend) getHAGroup(rc *core.Req) (any, error) {
	if err := s.groupsRefused(rc.DB(), "read group"); err != nil {
		return nil, err
	}
	return s.readHA(rc, haGroups)
}

func (s *backend) postHAGroup(rc *core.Req) (any, error) {
	db := rc.DB()
	if err := s.groupsRefused(db, "create group"); err != nil {
		return nil, err
	}
	list, _ := s.ReadSectionsLocked(db, ha.GroupsCfg)
	if pvecommon.FindSection(list, rc.Str("group")) != nil {
		return nil, fmt.Errorf("create ha group failed: ha group ID '%s' already defined", rc.Str("group"))
	}
	g := &pvecommon.Section{Type: "group", ID: rc.Str("group"), Opts: map[string]string{}}
	setOpts(rc, ha.GroupOpts, g.Opts)
	s.commitHALocked(db, ha.GroupsCfg, append(list, g), true)
	return nil, nil
}

func (s *backend) putHAGroup(rc *core.Req) (any, error) {
	db := rc.DB()
	if err := s.groupsRefused(db, "update group"); err != nil {
		return nil, err
	}
	list, digest := s.ReadSectionsLocked(db, ha.GroupsCfg)
	if err := staleDigest(rc, digest, "update ha group failed: "); err != nil {
		return nil, err
	}
	g := pvecommon.FindSection(list, rc.Str("group"))
	if g == nil {
		return nil, fmt.Errorf("update ha group failed: no such ha group '%s'", rc.Str("group"))
	}
	setOpts(rc, ha.GroupOpts, g.Opts)
	for _, k := range pveschema.SplitList(rc.Str("delete")) {
		if k == "nodes" {
			return nil, fmt.Errorf("update ha group failed: unable to delete required option '%s'", k)
		}
		delete(g.Opts, k)
	}
	s.commitHALocked(db, ha.GroupsCfg, list, true)
	return nil, nil
}

func (s *backend) deleteHAGroup(rc *core.Req) (any, error) {
	db := rc.DB()
	if err := s.groupsRefused(db, "delete group"); err != nil {
		return nil, err
	}
	return s.deleteHA(rc, haGroups, func(id string) error {
		res, _ := s.HAResourcesLocked(db)
		return ha.GroupInUse(res, id)
	})
}
