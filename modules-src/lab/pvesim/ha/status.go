package ha

import (
	"fmt"
	"strconv"
	"time"
)

// The status views: /cluster/ha/status/current (API2/HA/Status.pm), a
// guest's "ha" object (Config.pm get_service_status) and /cluster/resources'
// hastate, from what the lab's CRM did.

// ServiceState is a service's entry in the manager status (service_status:
// node and CRM state, in Tools.pm get_verbose_service_state's words),
// derived from what the lab's CRM did: "queued" with node "---" while the
// guest is unknown.
func ServiceState(r *Section, f Service) (node, state string) {
	if _, err := strconv.Atoi(r.ID); err != nil || f.Node == "" {
		return "---", "queued"
	}
	req := RequestedState(r)
	switch {
	case f.Error:
		state = "error"
	case req == "ignored":
		state = "ignored"
	case !f.NodeUp:
		state = "fence"
	case f.Motion != "":
		state = f.Motion
	case req == "started" && f.Running:
		state = "started"
	case req == "started":
		state = "starting"
	case f.Running:
		state = "stopping" // reconstruction of the verbose word
	default:
		state = req
	}
	return f.Node, state
}

// RawCRMState undoes Tools.pm get_verbose_service_state's words: the
// manager status itself says started while the LRM starts the service,
// request_stop while it stops, stopped for a disabled one.
func RawCRMState(state string) string {
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

// GuestStatus is Config.pm get_service_status, the "ha" object of a
// guest's status/current (r: its resource, nil if none): managed 0 for a
// guest HA does not manage (absent or ignored), else managed 1 and the
// CRM's state; PVE 8 adds the resource's group (null without one,
// pve-ha-manager 4.x).
func (c Config) GuestStatus(r *Section, service func(*Section) Service) map[string]any {
	out := map[string]any{"managed": 0}
	if !Managed(r) {
		return out
	}
	_, state := ServiceState(r, service(r))
	out["managed"], out["state"] = 1, RawCRMState(state)
	if c.Version < 9 {
		if g, ok := r.Opts["group"]; ok {
			out["group"] = g
		} else {
			out["group"] = nil
		}
	}
	return out
}

// HAState is /cluster/resources' hastate (r: the guest's resource, nil
// if none): the manager's state of the service, else its configured state;
// "" when not an HA resource (pve-manager API2/Cluster.pm resources).
func HAState(r *Section, service func(*Section) Service) string {
	if r == nil {
		return ""
	}
	if r.Opts["state"] == "ignored" {
		return "ignored" // not in service_status: the config's state
	}
	_, state := ServiceState(r, service(r))
	return RawCRMState(state)
}

// StatusQuery is what /cluster/ha/status/current is answered from besides
// the config.
type StatusQuery struct {
	Node    string // the node answering
	Quorate bool
	Now     time.Time
	Members []string
	NodeUp  func(node string) bool
	Service func(r *Section) Service
}

// StatusCurrent is GET /cluster/ha/status/current, shaped as
// API2/HA/Status.pm builds it from the manager and LRM status files. The
// simulated CRM's master is the first member that is up; LRMs are "active"
// on nodes holding a running HA guest, "idle" elsewhere, and a node that
// is down shows an old timestamp. PVE 9 adds the fencing entry and the
// watchdog words in the LRM line; PVE 8's lines lack them (reconstruction
// from the older Status.pm).
func (c Config) StatusCurrent(q StatusQuery) []map[string]any {
	quorum := map[string]any{"id": "quorum", "type": "quorum", "node": q.Node, "status": "OK", "quorate": 1}
	if !q.Quorate {
		quorum["status"], quorum["quorate"] = fmt.Sprintf("No quorum on node '%s'!", q.Node), 0
	}
	out := []map[string]any{quorum}
	if len(c.Resources) == 0 {
		return out // no CRM has ever run: no manager status
	}
	master := ""
	for _, m := range q.Members {
		if q.NodeUp(m) {
			master = m
			break
		}
	}
	stamp := func(t time.Time) string { return t.Format("Mon Jan _2 15:04:05 2006") }
	now := q.Now
	if master != "" {
		out = append(out, map[string]any{"id": "master", "type": "master", "node": master,
			"status": fmt.Sprintf("%s (active, %s)", master, stamp(now)), "timestamp": now.Unix()})
		if c.Version >= 9 {
			out = append(out, map[string]any{"id": "fencing", "type": "fencing", "node": master,
				"status": "armed (CRM watchdog active)", "armed-state": "armed"})
		}
	}
	services := make([]Service, len(c.Resources))
	active := map[string]int{}
	for i, r := range c.Resources {
		services[i] = q.Service(r)
		if f := services[i]; f.Node != "" && f.Running {
			active[f.Node]++
		}
	}
	for _, m := range q.Members {
		t, state, wd := now, "idle", "watchdog standby"
		if !q.NodeUp(m) {
			t, state = now.Add(-time.Minute), "old timestamp - dead?"
		} else if active[m] > 0 {
			state, wd = "active", "watchdog active"
		}
		text := fmt.Sprintf("%s (%s, %s)", m, state, stamp(t))
		if c.Version >= 9 {
			text = fmt.Sprintf("%s (%s, %s, %s)", m, state, wd, stamp(t))
		}
		out = append(out, map[string]any{"id": "lrm:" + m, "type": "lrm", "node": m, "status": text, "timestamp": t.Unix()})
	}
	for i, r := range c.Resources {
		out = append(out, c.serviceStatus(r, services[i]))
	}
	return out
}

// serviceStatus is a service's entry of the status: its requested and
// CRM states, and the resource's options (group on PVE 8, failback on 9).
func (c Config) serviceStatus(r *Section, f Service) map[string]any {
	sid := SID(r)
	e := map[string]any{"id": "service:" + sid, "type": "service", "sid": sid, "request_state": RequestedState(r)}
	node, state := ServiceState(r, f)
	e["node"], e["state"], e["crm_state"] = node, state, RawCRMState(state)
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
	if c.Version < 9 {
		delete(e, "failback")
	} else {
		delete(e, "group")
	}
	return e
}
