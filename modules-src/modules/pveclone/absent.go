package pveclone

import (
	"context"
	"fmt"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
	"github.com/gopve/proxmox/modules-src/pveapi/guest"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// planDestroy plans state: absent as one change per write (issue 23 §2): a
// running VM is first stopped — through HA when HA manages it — and waited
// for until PVE reports it stopped (pveansible.StopBeforeDestroy), then it
// is destroyed (exactly this
// VMID; its name was checked by owned). Everything destroy_vm would refuse
// is refused here, before the first write and in check mode alike, so the
// stop never happens for a destroy PVE then refuses; should PVE refuse the
// destroy all the same (the config changed between this read and the
// destroy), the stop is reported as the change it was.
func (v *vm) planDestroy(ctx context.Context, g clusterguests.Guest) ([]ansible.Change, error) {
	st, err := v.observe(ctx, g.Node, g.Status == "running", g.HAManaged())
	if err != nil {
		return nil, err
	}
	v.before = st.Next.Values
	d, err := guest.DestroyRefusal(ctx, v.c, guest.Destroy{Kind: guest.VM, VMID: g.VMID, Name: g.Name, Config: st.Next.Values, Purge: v.p.Purge})
	if err != nil {
		return nil, err
	}
	destroy := qemu.Destroy(g.Node, g.VMID, v.p.Purge)
	destroy.Params.Set("destroy-unreferenced-disks", "1")
	if err := destroy.Validate(v.version); err != nil {
		return nil, v.schemaError(err)
	}
	var changes []ansible.Change
	if g.Status == "running" {
		stop := qemu.Power(g.Node, g.VMID, "stop")
		if err := stop.Validate(v.version); err != nil {
			return nil, v.schemaError(err)
		}
		changes = append(changes, pveansible.StopBeforeDestroy{Kind: guest.VM, Guest: g, HAManaged: d.HAManaged, Task: "qmstop", Client: v.c, Poll: v.poll,
			Send: func(ctx context.Context, what, task string, settle func(context.Context) (bool, error)) error {
				_, err := v.send(ctx, write{req: stop, what: what, taskType: task, settle: settle})
				return err
			}}.Change())
	}
	return append(changes, ansible.Change{
		ID:      "vm:absent",
		Summary: fmt.Sprintf("destroy VM %d (%s) on %s%s", g.VMID, g.Name, g.Node, guest.PurgeSummary(d.Purged)),
		Diff:    ansible.TextDiff(confHeader(g.Node, g.VMID), renderConf(st.Next.Values), ""),
		Apply: func(ctx context.Context) error {
			_, err := v.send(ctx, write{req: destroy, what: fmt.Sprintf("destroy VM %d", g.VMID),
				settle: func(ctx context.Context) (bool, error) { ok, err := v.exists(ctx); return !ok, err }})
			return err
		},
		Verify: func(ctx context.Context) error { return guest.Gone(ctx, v.c, guest.VM, g.VMID) },
	}), nil
}
