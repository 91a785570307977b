package pveclone

import (
	"context"
	"fmt"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi/replication"
	"github.com/gopve/proxmox/modules-src/pveapi/resources"
)

// destroyRefusal runs qemu-server's destroy_vm early checks read-only
// (API2/Qemu.pm destroy_vm, $early_checks): without purge, PVE refuses a
// VM that HA manages or that replication jobs name. The module decides it
// before its first write: the stop of a running VM comes before the
// destroy, and must not happen for a destroy PVE will refuse.
//
// It also returns what purge will take with the VM, for the summary:
// destroy_vm with purge=1 removes the replication jobs
// (ReplicationConfig::remove_vmid_jobs), the backup jobs' mention
// (VZDump::Plugin::remove_vmid_from_backup_jobs) and the HA resource
// (HA::Config::delete_service_from_config); with or without purge it
// removes the ACLs on /vms/<vmid> and the pool membership
// (AccessControl::remove_vm_access) and the guest's firewall file.
func (v *vm) destroyRefusal(ctx context.Context, g resources.Guest) (purged []string, err error) {
	jobs, err := replication.Jobs(ctx, v.c)
	if err != nil {
		return nil, fmt.Errorf("cannot read the replication jobs (PVE refuses to destroy a VM that has some, unless purge): %w", err)
	}
	var ids []string
	for _, j := range jobs {
		if j.ID.Guest == g.VMID {
			ids = append(ids, j.ID.String())
		}
	}
	ha := g.HAState != ""
	if !ha {
		// The guest list's hastate lags the HA config, which PVE checks
		// (HA::Config::service_is_configured).
		if ha, err = v.haManaged(ctx); err != nil {
			return nil, err
		}
	}
	if !v.p.Purge {
		switch {
		case ha:
			return nil, fmt.Errorf("purge: VM %d is managed by HA; PVE refuses to destroy it unless purge is set, which also removes its HA resource (unable to remove VM %d - used in HA resources and purge parameter not set.); nothing was changed", g.VMID, g.VMID)
		case len(ids) > 0:
			return nil, fmt.Errorf("purge: VM %d has replication jobs %s; PVE refuses to destroy it unless purge is set, which also removes them (There is a replication job '%s' for guest '%d' - Please remove that first.); nothing was changed", g.VMID, strings.Join(ids, ", "), ids[0], g.VMID)
		}
		return nil, nil
	}
	if len(ids) > 0 {
		purged = append(purged, "replication jobs "+strings.Join(ids, ", "))
	}
	if ha {
		purged = append(purged, fmt.Sprintf("HA resource vm:%d", g.VMID))
	}
	return purged, nil
}

func purgeSummary(purged []string) string {
	if len(purged) == 0 {
		return ""
	}
	return ", purging " + strings.Join(purged, " and ")
}
