package guests

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/ha"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// The HA model: what the guest model, qemusim, lxcsim and the pools read
// of HA, and the CRM's state they show (a service in error, a motion
// under way). The /cluster/ha endpoints and the CRM's engine (rounds,
// fencing, failback, the groups' migration) are the backend pvesim/hasim's,
// which registers for the CRM rounds a guest's HA request asks for
// (OnHARequest) and for the nodes' power events (OnNodePower). Files and
// rules follow pve-ha-manager's PVE/HA/Config.pm, the models are
// pvesim/ha's.

// HAServiceLocked is what the lab knows of resource r's guest.
func (s Model) HAServiceLocked(db *core.ConfigDB, r *pvecommon.Section) ha.Service {
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
		Error: s.HAErrorLocked(db, sid), Motion: s.HAMotionLocked(db, sid)}
}

// HAErrorLocked tells whether the CRM put service sid of db in error
// (a recovery without its volumes, H8); disabling the service clears it.
func (s Model) HAErrorLocked(db *core.ConfigDB, sid string) bool { return s.HAErrors[db.ID+"/"+sid] }

// SetHAErrorLocked puts service sid of db in error state or out of it.
func (s Model) SetHAErrorLocked(db *core.ConfigDB, sid string, on bool) {
	if s.HAErrors == nil {
		s.HAErrors = map[string]bool{}
	}
	if on {
		s.HAErrors[db.ID+"/"+sid] = true
	} else {
		delete(s.HAErrors, db.ID+"/"+sid)
	}
}

// HAResourcesLocked is db's resources.cfg with its digest.
func (s Model) HAResourcesLocked(db *core.ConfigDB) ([]*pvecommon.Section, string) {
	return s.ReadSectionsLocked(db, ha.ResourcesCfg)
}

// HAManagedLocked is vm_is_ha_managed: configured and not ignored.
func (s Model) HAManagedLocked(db *core.ConfigDB, vmid int) (*pvecommon.Section, bool) {
	list, _ := s.HAResourcesLocked(db)
	r := ha.FindResource(list, ha.GuestSID(false, vmid))
	return r, ha.Managed(r)
}

// HAConfiguredLocked is service_is_configured (any state).
func (s Model) HAConfiguredLocked(db *core.ConfigDB, vmid int) bool {
	list, _ := s.HAResourcesLocked(db)
	return ha.FindResource(list, ha.GuestSID(false, vmid)) != nil
}

// haConfiguredSIDLocked tells whether a guest of the VM list is an HA resource.
func (s Model) haConfiguredSIDLocked(db *core.ConfigDB, e core.VMEntry) bool {
	list, _ := s.HAResourcesLocked(db)
	return ha.FindResource(list, ha.GuestSID(e.Kind == "lxc", e.VMID)) != nil
}

// HAMotionLocked is the CRM's motion of service sid under way ("migrate",
// "relocate", "" for none), which its state shows until the LRM is done.
func (s Model) HAMotionLocked(db *core.ConfigDB, sid string) string {
	return s.HAMotions[db.ID+"/"+sid]
}

// SetHAMotionLocked records (or, with "", ends) service sid's motion.
func (s Model) SetHAMotionLocked(db *core.ConfigDB, sid, motion string) {
	if s.HAMotions == nil {
		s.HAMotions = map[string]string{}
	}
	if motion == "" {
		delete(s.HAMotions, db.ID+"/"+sid)
		return
	}
	s.HAMotions[db.ID+"/"+sid] = motion
}

// HAStatusOfGuestLocked is HA::Config get_service_status, the "ha" object
// of a guest's status/current.
func (s Model) HAStatusOfGuestLocked(db *core.ConfigDB, sid string) map[string]any {
	list, _ := s.HAResourcesLocked(db)
	cfg := ha.Config{Version: s.Cfg.Version, Resources: list}
	return cfg.GuestStatus(cfg.Resource(sid), func(r *pvecommon.Section) ha.Service { return s.HAServiceLocked(db, r) })
}

// haStateOfGuestLocked is /cluster/resources' hastate.
func (s Model) haStateOfGuestLocked(db *core.ConfigDB, sid string) string {
	list, _ := s.HAResourcesLocked(db)
	return ha.HAState(ha.FindResource(list, sid), func(r *pvecommon.Section) ha.Service { return s.HAServiceLocked(db, r) })
}

// HARequestTask is the hastart/hastop task of an HA-managed guest: it only
// sets the requested state (ha-manager set / crm-command stop), the CRM acts
// later.
func (s Model) HARequestTask(rc *core.Req, typ string, vmid int, state string) string {
	return s.HARequestTaskSID(rc, typ, fmt.Sprintf("vm:%d", vmid), vmid, state)
}

// HARequestTaskSID is HARequestTask for service sid (vm:N or ct:N): the
// task sets its requested state, then asks the CRM (OnHARequest) for a round.
func (s Model) HARequestTaskSID(rc *core.Req, typ, sid string, vmid int, state string) string {
	db := rc.DB()
	kind := "VM"
	if strings.HasPrefix(sid, "ct:") {
		kind = "CT"
	}
	verb := "start"
	if typ == "hastop" {
		verb = "stop"
	}
	return s.StartTaskLocked(rc, rc.Node, typ, strconv.Itoa(vmid), func(t *core.TaskRun) string {
		t.Logf("Requesting HA %s for %s %d", verb, kind, vmid)
		if !s.Sleep(s.Cfg.Dur(s.Cfg.TaskDuration, core.DefaultTaskDuration)) {
			return "unexpected status"
		}
		s.Mu.Lock()
		defer s.Mu.Unlock()
		list, _ := s.HAResourcesLocked(db)
		if r := ha.FindResource(list, sid); r != nil {
			r.Opts["state"] = state
			s.WriteSectionsLocked(db, ha.ResourcesCfg, list)
			s.SaveLocked()
		}
		s.HARequestedLocked(db.ID) // the CRM's next round (hasim)
		return ""
	})
}
