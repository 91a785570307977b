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
		node, state := "---", "queued"
		if vmid, err := strconv.Atoi(r.ID); err == nil {
			if g, ok := s.findVMLocked(db, vmid); ok {
				node = g.Node
				running := s.runningLocked(g.Node, vmid)
				switch {
				case s.haErrorLocked(db, sid):
					state = "error"
				case req == "ignored":
					state = "ignored"
				case !s.nodeUpLocked(g.Node):
					state = "fence"
				case req == "started" && running:
					state = "started"
				case req == "started":
					state = "starting"
				case running:
					state = "stopping" // reconstruction of the verbose word
				default:
					state = req
				}
			}
		}
		e["node"], e["state"], e["crm_state"] = node, state, state
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
