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
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
	"github.com/gopve/proxmox/modules-src/pveapi/guest"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// planDestroy plans state: absent as pve_clone does, one change per write:
// a running CT is first stopped (through HA when HA manages it) and waited
// for until PVE reports it stopped (pveansible.StopBeforeDestroy), then
// destroyed. What pve-container's destroy_vm refuses (protection, a lock,
// HA or replication jobs without purge) is refused first, before any
// write, check mode alike.
func (v *ct) planDestroy(ctx context.Context, g clusterguests.Guest, st qemu.State) ([]ansible.Change, error) {
	v.setFinal(st)
	d, err := guest.DestroyRefusal(ctx, v.c, guest.Destroy{Kind: guest.CT, VMID: g.VMID, Name: g.Name, Config: st.Next.Values, Purge: v.p.Purge})
	if err != nil {
		return nil, err
	}
	id := strconv.Itoa(g.VMID)
	q := url.Values{"destroy-unreferenced-disks": {"1"}}
	if v.p.Purge {
		q.Set("purge", "1")
	}
	destroy := apischema.New(http.MethodDelete, "/nodes/{node}/lxc/{vmid}", q, g.Node, id)
	destroy.Task = &apischema.TaskHint{Node: g.Node, Types: []string{"vzdestroy"}, ID: id}
	if err := destroy.Validate(v.version); err != nil {
		return nil, v.schemaError(err)
	}
	var changes []ansible.Change
	if g.Status == "running" {
		stop := power(g.Node, g.VMID, "stop", nil)
		if err := stop.Validate(v.version); err != nil {
			return nil, v.schemaError(err)
		}
		changes = append(changes, pveansible.StopBeforeDestroy{Kind: guest.CT, Guest: g, HAManaged: d.HAManaged, Task: "vzstop", Client: v.c, Poll: v.poll,
			Send: func(ctx context.Context, what, task string, settle func(context.Context) (bool, error)) error {
				return v.send(ctx, stop, pveapi.Write{What: what, Settle: settle}, task)
			}}.Change())
	}
	return append(changes, ansible.Change{
		ID:      "ct:absent",
		Summary: fmt.Sprintf("destroy CT %d (%s) on %s%s", g.VMID, g.Name, g.Node, guest.PurgeSummary(d.Purged)),
		Diff:    ansible.TextDiff(confHeader(g.Node, g.VMID), renderConf(st.Next.Values), ""),
		Apply: func(ctx context.Context) error {
			return v.send(ctx, destroy, pveapi.Write{What: fmt.Sprintf("destroy CT %d", g.VMID),
				Settle: func(ctx context.Context) (bool, error) { ok, err := v.exists(ctx); return !ok, err }}, "")
		},
		Verify: func(ctx context.Context) error { return guest.Gone(ctx, v.c, guest.CT, g.VMID) },
	}), nil
}
