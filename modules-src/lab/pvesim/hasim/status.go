package hasim

import (
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/ha"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// The HA status views, shaped by pvesim/ha from what the lab's CRM did:
// GET /cluster/ha/status/current (API2/HA/Status.pm), a guest's "ha"
// object and /cluster/resources' hastate.

func (s *backend) getHAStatusCurrent(rc *core.Req) (any, error) {
	db := rc.DB()
	res, _ := s.HAResourcesLocked(db)
	cfg := ha.Config{Version: s.Cfg.Version, Resources: res}
	return cfg.StatusCurrent(ha.StatusQuery{Node: rc.Node, Quorate: s.QuorateLocked(db), Now: time.Now(),
		Members: s.MembersLocked(rc.Node), NodeUp: s.NodeUpLocked,
		Service: func(r *pvecommon.Section) ha.Service { return s.HAServiceLocked(db, r) }}), nil
}
