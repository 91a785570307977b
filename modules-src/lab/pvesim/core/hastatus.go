package core

import (
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/ha"
)

// The HA status views, shaped by pvesim/ha from what the lab's CRM did:
// GET /cluster/ha/status/current (API2/HA/Status.pm), a guest's "ha"
// object and /cluster/resources' hastate.

func (s *Sim) getHAStatusCurrent(rc *Req) (any, error) {
	db := rc.DB()
	res, _ := s.HAResourcesLocked(db)
	cfg := ha.Config{Version: s.Cfg.Version, Resources: res}
	return cfg.StatusCurrent(ha.StatusQuery{Node: rc.Node, Quorate: s.QuorateLocked(db), Now: time.Now(),
		Members: s.MembersLocked(rc.Node), NodeUp: s.NodeUpLocked,
		Service: func(r *section) ha.Service { return s.haServiceLocked(db, r) }}), nil
}

// HAStatusOfGuestLocked is HA::Config get_service_status, the "ha" object
// of a guest's status/current.
func (s *Sim) HAStatusOfGuestLocked(db *ConfigDB, sid string) map[string]any {
	list, _ := s.HAResourcesLocked(db)
	cfg := ha.Config{Version: s.Cfg.Version, Resources: list}
	return cfg.GuestStatus(cfg.Resource(sid), func(r *section) ha.Service { return s.haServiceLocked(db, r) })
}

// haStateOfGuestLocked is /cluster/resources' hastate.
func (s *Sim) haStateOfGuestLocked(db *ConfigDB, sid string) string {
	list, _ := s.HAResourcesLocked(db)
	return ha.HAState(ha.FindResource(list, sid), func(r *section) ha.Service { return s.haServiceLocked(db, r) })
}
