package pveclone

import (
	"context"
	"fmt"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
	"github.com/gopve/proxmox/modules-src/pveapi/guest"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// planDestroy plans state: absent as one change per write (issue 23 §2): a
// running VM is first stopped — through HA when HA manages it — and waited
// for until PVE reports it stopped, then it is destroyed (exactly this
// VMID; its name was checked by owned). Everything destroy_vm would refuse
// is refused here, before the first write and in check mode alike, so the
// stop never happens for a destroy PVE then refuses; should PVE refuse the
// destroy all the same (the config changed between this read and the
// destroy), the stop is reported as the change it was.
func (v *vm) planDestroy(ctx context.Context, g clusterguests.Guest) ([]ansible.Change, error) {
	st, err := v.observe(ctx, g.Node, g.Status == "running", g.HAState != "")
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
		stop, err := v.planStopForDestroy(g, d)
		if err != nil {
			return nil, err
		}
		changes = append(changes, stop)
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

// planStopForDestroy is the stop before the destroy: a hard stop (the VM
// is about to go), sent once; PVE turns it into an HA request (hastop)
// when HA manages the guest (H4: qemu-server's vm_stop runs `ha-manager
// crm-command stop vm:N 0`, which the CRM and then the LRM carry out in
// their rounds), so the change waits, bounded by the run's deadline,
// until PVE reports the VM stopped: destroy_vm refuses a running VM
// ("VM N is running - destroy failed").
func (v *vm) planStopForDestroy(g clusterguests.Guest, d guest.DestroyCheck) (ansible.Change, error) {
	req := qemu.Power(g.Node, g.VMID, "stop")
	if err := req.Validate(v.version); err != nil {
		return ansible.Change{}, v.schemaError(err)
	}
	task, via := "qmstop", ""
	if d.HAManaged {
		task, via = "hastop", " through HA"
	}
	return ansible.Change{
		ID:      "vm:absent-stop",
		Summary: fmt.Sprintf("stop VM %d (%s) on %s%s before destroying it", g.VMID, g.Name, g.Node, via),
		Diff:    &ansible.Diff{Before: "status: running\n", After: "status: stopped\n", BeforeHeader: fmt.Sprintf("VM %d", g.VMID), AfterHeader: fmt.Sprintf("VM %d", g.VMID)},
		Apply: func(ctx context.Context) error {
			if _, err := v.send(ctx, write{req: req, what: fmt.Sprintf("stop VM %d%s", g.VMID, via), taskType: task,
				settle: func(ctx context.Context) (bool, error) { r, err := v.isRunning(ctx, g.Node); return !r, err }}); err != nil {
				return err
			}
			return v.waitStopped(ctx, g.Node, via)
		},
		Verify: func(ctx context.Context) error {
			r, err := v.isRunning(ctx, g.Node)
			if err != nil {
				return err
			}
			if r {
				return fmt.Errorf("VM %d is still running after the stop", g.VMID)
			}
			return nil
		},
	}, nil
}

// waitStopped waits (waitRunning) until PVE reports the VM stopped,
// bounded by the run's deadline: an HA stop request ends its task when the
// CRM has the request, before the LRM stopped anything.
func (v *vm) waitStopped(ctx context.Context, node, via string) error {
	if err := v.waitRunning(ctx, node, false); err != nil {
		return fmt.Errorf("VM %d was asked to stop%s but PVE still reports it running: it was not destroyed: %w", v.p.VMID, via, err)
	}
	return nil
}
