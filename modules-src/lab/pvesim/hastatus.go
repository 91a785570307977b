package pvesim

import (
	"fmt"
	"strconv"
	"time"
)

// GET /cluster/ha/status/current, shaped as pve-ha-manager's
// src/PVE/API2/HA/Status.pm builds it from the manager and LRM status
// files. The simulated CRM's master is the first online member; LRMs are
// "active" on nodes holding a started HA guest, "idle" elsewhere, and a node
// that is down shows an old timestamp. PVE 9 adds the fencing entry and the
// watchdog words in the LRM line; PVE 8's lines lack them (reconstruction
// from the older Status.pm).
func (s *Sim) getHAStatusCurrent(rc *reqCtx) (any, error) {
	db := rc.db()
	now := time.Now()
	quorate := s.quorateLocked(db)
	q := map[string]any{"id": "quorum", "type": "quorum", "node": rc.node, "status": "OK", "quorate": 1}
	if !quorate {
		q["status"], q["quorate"] = fmt.Sprintf("No quorum on node '%s'!", rc.node), 0
	}
	out := []map[string]any{q}
	resources, _ := s.haResourcesLocked(db)
	if len(resources) == 0 {
		return out, nil // no CRM has ever run: no manager status
	}
	members := s.membersLocked(rc.node)
	master := ""
	for _, m := range members {
		if s.nodeUpLocked(m) {
			master = m
			break
		}
	}
	stamp := func(t time.Time) string { return t.Format("Mon Jan _2 15:04:05 2006") }
	if master != "" {
		out = append(out, map[string]any{"id": "master", "type": "master", "node": master,
			"status": fmt.Sprintf("%s (active, %s)", master, stamp(now)), "timestamp": now.Unix()})
		if s.cfg.Version >= 9 {
			out = append(out, map[string]any{"id": "fencing", "type": "fencing", "node": master,
				"status": "armed (CRM watchdog active)", "armed-state": "armed"})
		}
	}
	active := map[string]int{}
	for _, r := range resources {
		if vmid, err := strconv.Atoi(r.ID); err == nil {
			if e, ok := s.findVMLocked(db, vmid); ok && s.runningLocked(e.Node, vmid) {
				active[e.Node]++
			}
		}
	}
	for _, m := range members {
		t, state, wd := now, "idle", "watchdog standby"
		if !s.nodeUpLocked(m) {
			t, state = now.Add(-time.Minute), "old timestamp - dead?"
		} else if active[m] > 0 {
			state, wd = "active", "watchdog active"
		}
		text := fmt.Sprintf("%s (%s, %s)", m, state, stamp(t))
		if s.cfg.Version >= 9 {
			text = fmt.Sprintf("%s (%s, %s, %s)", m, state, wd, stamp(t))
		}
		out = append(out, map[string]any{"id": "lrm:" + m, "type": "lrm", "node": m, "status": text, "timestamp": t.Unix()})
	}
	for _, r := range resources {
		sid := r.Type + ":" + r.ID
		e := map[string]any{"id": "service:" + sid, "type": "service", "sid": sid}
		req := r.Opts["state"]
		if req == "" {
			req = "started"
		}
		e["request_state"] = req
		node, state := s.haServiceStateLocked(db, r)
		e["node"], e["state"], e["crm_state"] = node, state, rawCRMState(state)
		e["status"] = fmt.Sprintf("%s (%s, %s)", sid, node, state)
		for _, k := range []string{"group", "comment"} {
			if v, ok := r.Opts[k]; ok {
				e[k] = v
			}
		}
		for _, k := range []string{"max_restart", "max_relocate", "failback"} {
			if v, ok := r.Opts[k]; ok {
				n, _ := strconv.Atoi(v)
				e[k] = n
			}
		}
		if s.cfg.Version < 9 {
			delete(e, "failback")
		} else {
			delete(e, "group")
		}
		out = append(out, e)
	}
	return out, nil
}

// haServiceStateLocked is a service's entry in the manager status
// (service_status: node and CRM state), derived from what the lab's CRM
// did: "queued" with node "---" while the guest is unknown.
func (s *Sim) haServiceStateLocked(db *ConfigDB, r *section) (node, state string) {
	sid := r.Type + ":" + r.ID
	req := r.Opts["state"]
	if req == "" {
		req = "started"
	}
	node, state = "---", "queued"
	vmid, err := strconv.Atoi(r.ID)
	if err != nil {
		return node, state
	}
	g, ok := s.findVMLocked(db, vmid)
	if !ok {
		return node, state
	}
	node = g.Node
	running := s.runningLocked(g.Node, vmid)
	switch {
	case s.haErrorLocked(db, sid):
		state = "error"
	case req == "ignored":
		state = "ignored"
	case !s.nodeUpLocked(g.Node):
		state = "fence"
	case s.haMotionLocked(db, sid) != "":
		state = s.haMotionLocked(db, sid)
	case req == "started" && running:
		state = "started"
	case req == "started":
		state = "starting"
	case running:
		state = "stopping" // reconstruction of the verbose word
	default:
		state = req
	}
	return node, state
}

// haStatusOfGuestLocked is HA::Config get_service_status, the "ha" object
// of a guest's status/current: managed 0 for a guest HA does not manage
// (absent or ignored), else managed 1 and the CRM's state; PVE 8 adds the
// resource's group (null without one, pve-ha-manager 4.x).
func (s *Sim) haStatusOfGuestLocked(db *ConfigDB, sid string) map[string]any {
	out := map[string]any{"managed": 0}
	list, _ := s.haResourcesLocked(db)
	r := findResource(list, sid)
	if r == nil || r.Opts["state"] == "ignored" {
		return out
	}
	_, state := s.haServiceStateLocked(db, r)
	out["managed"], out["state"] = 1, rawCRMState(state)
	if s.cfg.Version < 9 {
		if g, ok := r.Opts["group"]; ok {
			out["group"] = g
		} else {
			out["group"] = nil
		}
	}
	return out
}

// haStateOfGuestLocked is /cluster/resources' hastate: the manager's state
// of the service, else its configured state; "" when not an HA resource
// (pve-manager API2/Cluster.pm resources).
func (s *Sim) haStateOfGuestLocked(db *ConfigDB, sid string) string {
	list, _ := s.haResourcesLocked(db)
	r := findResource(list, sid)
	if r == nil {
		return ""
	}
	if r.Opts["state"] == "ignored" {
		return "ignored" // not in service_status: the config's state
	}
	_, state := s.haServiceStateLocked(db, r)
	return rawCRMState(state)
}

// rawCRMState undoes Tools.pm get_verbose_service_state's words: the
// manager status itself says started while the LRM starts the service,
// request_stop while it stops, stopped for a disabled one.
func rawCRMState(state string) string {
	switch state {
	case "starting":
		return "started"
	case "stopping":
		return "request_stop"
	case "disabled":
		return "stopped"
	}
	return state
}
