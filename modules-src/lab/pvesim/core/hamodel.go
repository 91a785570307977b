package core

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/ha"
)

// The HA model: what guest code still in core (qemu), lxcsim and the pools
// read of HA, and the CRM's state they show (a service in error, a motion
// under way). The /cluster/ha endpoints and the CRM's engine (rounds,
// fencing, failback, the groups' migration) are the backend pvesim/hasim's,
// which registers for the CRM rounds a guest's HA request asks for
// (OnHARequest) and for the nodes' power events (OnNodePower). Files and
// rules follow pve-ha-manager's PVE/HA/Config.pm, the models are
// pvesim/ha's.

// HAServiceLocked is what the lab knows of resource r's guest.
func (s *Sim) HAServiceLocked(db *ConfigDB, r *section) ha.Service {
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
func (s *Sim) HAErrorLocked(db *ConfigDB, sid string) bool { return s.haErrors[db.ID+"/"+sid] }

// SetHAErrorLocked puts service sid of db in error state or out of it.
func (s *Sim) SetHAErrorLocked(db *ConfigDB, sid string, on bool) {
	if s.haErrors == nil {
		s.haErrors = map[string]bool{}
	}
	if on {
		s.haErrors[db.ID+"/"+sid] = true
	} else {
		delete(s.haErrors, db.ID+"/"+sid)
	}
}

// HAResourcesLocked is db's resources.cfg with its digest.
func (s *Sim) HAResourcesLocked(db *ConfigDB) ([]*section, string) {
	return s.ReadSectionsLocked(db, ha.ResourcesCfg)
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

// HAMotionLocked is the CRM's motion of service sid under way ("migrate",
// "relocate", "" for none), which its state shows until the LRM is done.
func (s *Sim) HAMotionLocked(db *ConfigDB, sid string) string { return s.haMotions[db.ID+"/"+sid] }

// SetHAMotionLocked records (or, with "", ends) service sid's motion.
func (s *Sim) SetHAMotionLocked(db *ConfigDB, sid, motion string) {
	if s.haMotions == nil {
		s.haMotions = map[string]string{}
	}
	if motion == "" {
		delete(s.haMotions, db.ID+"/"+sid)
		return
	}
	s.haMotions[db.ID+"/"+sid] = motion
}

// HAStatusOfGuestLocked is HA::Config get_service_status, the "ha" object
// of a guest's status/current.
func (s *Sim) HAStatusOfGuestLocked(db *ConfigDB, sid string) map[string]any {
	list, _ := s.HAResourcesLocked(db)
	cfg := ha.Config{Version: s.Cfg.Version, Resources: list}
	return cfg.GuestStatus(cfg.Resource(sid), func(r *section) ha.Service { return s.HAServiceLocked(db, r) })
}

// haStateOfGuestLocked is /cluster/resources' hastate.
func (s *Sim) haStateOfGuestLocked(db *ConfigDB, sid string) string {
	list, _ := s.HAResourcesLocked(db)
	return ha.HAState(ha.FindResource(list, sid), func(r *section) ha.Service { return s.HAServiceLocked(db, r) })
}

// HARequestTask is the hastart/hastop task of an HA-managed guest: it only
// sets the requested state (ha-manager set / crm-command stop), the CRM acts
// later.
func (s *Sim) HARequestTask(rc *Req, typ string, vmid int, state string) string {
	return s.HARequestTaskSID(rc, typ, fmt.Sprintf("vm:%d", vmid), vmid, state)
}

// HARequestTaskSID is HARequestTask for service sid (vm:N or ct:N): the
// task sets its requested state, then asks the CRM (OnHARequest) for a round.
func (s *Sim) HARequestTaskSID(rc *Req, typ, sid string, vmid int, state string) string {
	db := rc.DB()
	kind := "VM"
	if strings.HasPrefix(sid, "ct:") {
		kind = "CT"
	}
	verb := "start"
	if typ == "hastop" {
		verb = "stop"
	}
	return s.StartTaskLocked(rc, rc.Node, typ, strconv.Itoa(vmid), func(t *TaskRun) string {
		t.Logf("Requesting HA %s for %s %d", verb, kind, vmid)
		if !s.Sleep(s.Cfg.Dur(s.Cfg.TaskDuration, DefaultTaskDuration)) {
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
		for _, f := range s.haRequest { // the CRM's next round (hasim)
			f(db.ID)
		}
		return ""
	})
}
