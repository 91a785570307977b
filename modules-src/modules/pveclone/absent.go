package pveclone

import (
	"context"
	"fmt"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
	"github.com/gopve/proxmox/modules-src/pveapi/replication"
	"github.com/gopve/proxmox/modules-src/pveapi/resources"
)

// planDestroy plans state: absent as one change per write (issue 23 §2): a
// running VM is first stopped — through HA when HA manages it — and waited
// for until PVE reports it stopped, then it is destroyed (exactly this
// VMID; its name was checked by owned). Everything destroy_vm would refuse
// is refused here, before the first write and in check mode alike, so the
// stop never happens for a destroy PVE then refuses; should PVE refuse the
// destroy all the same (the config changed between this read and the
// destroy), the stop is reported as the change it was.
func (v *vm) planDestroy(ctx context.Context, g resources.Guest) ([]ansible.Change, error) {
	st, err := v.observe(ctx, g.Node, g.Status == "running", g.HAState != "")
	if err != nil {
		return nil, err
	}
	v.before = st.Next.Values
	d, err := v.destroyRefusal(ctx, g, st.Next)
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
		Summary: fmt.Sprintf("destroy VM %d (%s) on %s%s", g.VMID, g.Name, g.Node, purgeSummary(d.purged)),
		Diff:    ansible.TextDiff(confHeader(g.Node, g.VMID), renderConf(st.Next.Values), ""),
		Apply: func(ctx context.Context) error {
			_, err := v.send(ctx, write{req: destroy, what: fmt.Sprintf("destroy VM %d", g.VMID),
				settle: func(ctx context.Context) (bool, error) { ok, err := v.exists(ctx); return !ok, err }})
			return err
		},
		Verify: func(ctx context.Context) error {
			ok, err := v.exists(ctx)
			if err != nil {
				return err
			}
			if ok {
				return fmt.Errorf("VM %d is still in the cluster's guest list after its destruction", g.VMID)
			}
			return nil
		},
	}), nil
}

// planStopForDestroy is the stop before the destroy: a hard stop (the VM
// is about to go), sent once; PVE turns it into an HA request (hastop)
// when HA manages the guest (H4: qemu-server's vm_stop runs `ha-manager
// crm-command stop vm:N 0`, which the CRM and then the LRM carry out in
// their rounds), so the change waits, bounded by the run's deadline,
// until PVE reports the VM stopped: destroy_vm refuses a running VM
// ("VM N is running - destroy failed").
func (v *vm) planStopForDestroy(g resources.Guest, d destroyCheck) (ansible.Change, error) {
	req := qemu.Power(g.Node, g.VMID, "stop")
	if err := req.Validate(v.version); err != nil {
		return ansible.Change{}, v.schemaError(err)
	}
	task, via := "qmstop", ""
	if d.haManaged {
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

// destroyCheck is what the read-only destroy checks found.
type destroyCheck struct {
	purged    []string // what purge takes with the VM, for the summary
	haManaged bool     // a stop goes through HA (vm_is_ha_managed: configured, not ignored)
}

// destroyRefusal runs qemu-server's destroy_vm checks read-only, in PVE's
// order (API2/Qemu.pm destroy_vm $early_checks, then QemuServer.pm
// destroy_vm): protection (AbstractConfig check_protection), HA without
// purge, replication jobs without purge
// (ReplicationConfig::check_for_existing_jobs), and the config lock
// (check_lock, unless the lock is 'suspended'). Each is refused with PVE's
// own message, before the first write (the stop of a running VM comes
// first, and must not happen for a destroy PVE will refuse), and in check
// mode alike. Being running is not refused: that is what the stop is for.
//
// It also says what purge will take with the VM: destroy_vm with purge=1
// removes the replication jobs (ReplicationConfig::remove_vmid_jobs), the
// backup jobs' mention (VZDump::Plugin::remove_vmid_from_backup_jobs) and
// the HA resource (HA::Config::delete_service_from_config); with or
// without purge it removes the ACLs on /vms/<vmid> and the pool membership
// (AccessControl::remove_vm_access) and the guest's firewall file.
func (v *vm) destroyRefusal(ctx context.Context, g resources.Guest, conf qemu.Config) (destroyCheck, error) {
	var d destroyCheck
	if p, err := pveapi.ParseBool(conf.Values["protection"]); err == nil && p {
		return d, fmt.Errorf("state: VM %d (%s) has protection enabled; PVE refuses to destroy it (can't remove VM %d - protection mode enabled); nothing was changed: turn its protection off first", g.VMID, g.Name, g.VMID)
	}
	jobs, err := replication.Jobs(ctx, v.c)
	if err != nil {
		return d, fmt.Errorf("cannot read the replication jobs (PVE refuses to destroy a VM that has some, unless purge): %w", err)
	}
	var ids []string
	for _, j := range jobs {
		if j.ID.Guest == g.VMID {
			ids = append(ids, j.ID.String())
		}
	}
	// The guest list's hastate lags the HA config, which PVE checks
	// (HA::Config::service_is_configured): read the resource itself.
	configured, state, err := v.haResource(ctx)
	if err != nil {
		return d, err
	}
	d.haManaged = configured && state != "ignored"
	if !v.p.Purge {
		switch {
		case configured:
			return d, fmt.Errorf("purge: VM %d is managed by HA; PVE refuses to destroy it unless purge is set, which also removes its HA resource (unable to remove VM %d - used in HA resources and purge parameter not set.); nothing was changed", g.VMID, g.VMID)
		case len(ids) > 0:
			return d, fmt.Errorf("purge: VM %d has replication jobs %s; PVE refuses to destroy it unless purge is set, which also removes them (There is a replication job '%s' for guest '%d' - Please remove that first.); nothing was changed", g.VMID, strings.Join(ids, ", "), ids[0], g.VMID)
		}
	}
	if l := conf.Lock(); l != "" && l != "suspended" {
		return d, fmt.Errorf("state: VM %d (%s) is locked (%s); PVE refuses to destroy it (VM is locked (%s)); nothing was changed: rerun once the operation holding the lock is done", g.VMID, g.Name, l, l)
	}
	if len(ids) > 0 && v.p.Purge {
		d.purged = append(d.purged, "replication jobs "+strings.Join(ids, ", "))
	}
	if configured && v.p.Purge {
		d.purged = append(d.purged, fmt.Sprintf("HA resource vm:%d", g.VMID))
	}
	return d, nil
}

// haResource reads the VM's HA resource (GET /cluster/ha/resources/vm:N;
// PVE answers 500 "no such resource" when there is none): whether HA has
// it configured, and its requested state.
func (v *vm) haResource(ctx context.Context) (configured bool, state string, err error) {
	var out map[string]any
	err = v.c.Get(ctx, pveapi.Path("/cluster/ha/resources/%s", fmt.Sprintf("vm:%d", v.p.VMID)), nil, &out)
	switch {
	case err == nil:
		return true, pveapi.String(out["state"]), nil
	case pveapi.IsNotFound(err) || strings.Contains(err.Error(), "no such resource"):
		return false, "", nil
	}
	return false, "", fmt.Errorf("cannot read whether HA manages VM %d: %w", v.p.VMID, err)
}

func purgeSummary(purged []string) string {
	if len(purged) == 0 {
		return ""
	}
	return ", purging " + strings.Join(purged, " and ")
}
