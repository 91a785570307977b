package pvecontainer

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
	"github.com/gopve/proxmox/modules-src/pveapi/guest"
)

// power is POST …/lxc/{vmid}/status/{start,stop,shutdown}: a vzstart,
// vzstop or vzshutdown task, or hastart/hastop when HA manages the CT
// (pve-container asks the HA manager then, H4).
func power(node string, vmid int, action string, q url.Values) apischema.Request {
	id := strconv.Itoa(vmid)
	r := apischema.New(http.MethodPost, "/nodes/{node}/lxc/{vmid}/status/"+action, q, node, id)
	ha := map[string]string{"start": "hastart", "stop": "hastop", "shutdown": "hastop"}[action]
	r.Task = &apischema.TaskHint{Node: node, Types: []string{"vz" + action, ha}, ID: id}
	return r
}

// planPower starts or stops the CT after it is configured. An HA-managed
// guest's start/stop goes to the HA manager, so the real state is polled
// until it is reached (H4).
func (v *ct) planPower(ctx context.Context, w *ansible.World) ([]ansible.Change, error) {
	if v.p.State != "started" && v.p.State != "stopped" {
		return nil, nil
	}
	st, err := ctKey(v.p.VMID).Get(ctx, w, func(ctx context.Context) (ctState, error) {
		if v.read != nil {
			return *v.read, nil
		}
		return ctState{Node: v.node}, nil // made by this run: stopped
	})
	if err != nil {
		return nil, err
	}
	want := v.p.State == "started"
	if st.Running == want {
		return nil, nil
	}
	if !st.HA {
		// The guest list's hastate lags the HA manager: ask the HA config
		// (only when the power changes, so a no-op run stays at three reads).
		configured, state, err := guest.HAResource(ctx, v.c, guest.CT, v.p.VMID)
		if err != nil {
			return nil, err
		}
		st.HA = configured && state != "ignored"
	}
	action, verb := "start", "start"
	var q url.Values
	if !want {
		action, verb = "shutdown", "stop"
		q = url.Values{"forceStop": {"1"}} // a CT that ignores the shutdown is stopped at PVE's timeout
	}
	req := power(st.Node, v.p.VMID, action, q)
	if err := req.Validate(v.version); err != nil {
		return nil, v.schemaError(err)
	}
	task, via := "vz"+action, ""
	if st.HA {
		task, via = map[bool]string{true: "hastart", false: "hastop"}[want], " through HA"
	}
	return []ansible.Change{{
		ID:      "ct:" + v.p.State,
		Summary: fmt.Sprintf("%s CT %d on %s%s", verb, v.p.VMID, st.Node, via),
		Apply: func(ctx context.Context) error {
			if err := v.send(ctx, req, pveapi.Write{What: fmt.Sprintf("%s CT %d%s", verb, v.p.VMID, via),
				Settle: func(ctx context.Context) (bool, error) { r, err := v.isRunning(ctx, st.Node); return r == want, err }}, task); err != nil {
				return err
			}
			return guest.WaitRunning(ctx, v.c, guest.CT, st.Node, v.p.VMID, want, v.poll)
		},
		Verify: func(ctx context.Context) error {
			r, err := v.isRunning(ctx, st.Node)
			if err != nil {
				return err
			}
			if r != want {
				return fmt.Errorf("CT %d is %s after the %s", v.p.VMID, map[bool]string{true: "running", false: "stopped"}[r], verb)
			}
			if now, err := v.observe(ctx, st.Node, want, st.HA); err == nil {
				v.setFinal(now) // started: what was pending is live now
			}
			return nil
		},
		Predict: func(w *ansible.World) {
			n := st
			n.Running = want
			if want {
				n.Live, n.Pending = n.Next, nil
			}
			ctKey(v.p.VMID).Predict(w, n)
			v.setFinal(n)
		},
	}}, nil
}
