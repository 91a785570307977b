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
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
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
	pw := pveansible.GuestPower{Kind: guest.CT, VMID: v.p.VMID, State: v.p.State, Key: ctKey(v.p.VMID), Read: v.read, Node: v.node, HAManaged: v.haManaged}
	st, want, change, err := pw.Need(ctx, w)
	if err != nil || !change {
		return nil, err
	}
	action := "start"
	var q url.Values
	if !want {
		action = "shutdown"
		q = url.Values{"forceStop": {"1"}} // a CT that ignores the shutdown is stopped at PVE's timeout
	}
	req := power(st.Node, v.p.VMID, action, q)
	if err := req.Validate(v.version); err != nil {
		return nil, v.schemaError(err)
	}
	task, via := "vz"+action, pveansible.Via(st.HA)
	if st.HA {
		task = map[bool]string{true: "hastart", false: "hastop"}[want]
	}
	apply := func(ctx context.Context) error {
		if err := v.send(ctx, req, pveapi.Write{What: fmt.Sprintf("%s CT %d%s", pveansible.Verb(want), v.p.VMID, via),
			Settle: func(ctx context.Context) (bool, error) { r, err := v.isRunning(ctx, st.Node); return r == want, err }}, task); err != nil {
			return err
		}
		return guest.WaitRunning(ctx, v.c, guest.CT, st.Node, v.p.VMID, want, v.poll)
	}
	refresh := func(ctx context.Context) {
		if now, err := v.observe(ctx, st.Node, want, st.HA); err == nil {
			v.setFinal(now) // started: what was pending is live now
		}
	}
	return []ansible.Change{pw.Change(pveansible.PowerChange{St: st, Want: want, Apply: apply, Running: v.isRunning, Refresh: refresh, SetFinal: v.setFinal})}, nil
}

// haManaged reads whether HA manages the CT (pve-container then asks the
// HA manager, H4).
func (v *ct) haManaged(ctx context.Context) (bool, error) {
	return guest.HAManaged(ctx, v.c, guest.CT, v.p.VMID)
}
