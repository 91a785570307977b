// Package guest is what pve_clone (QEMU VMs) and pve_container (LXC
// containers) both need of a guest, whatever its kind: whether HA manages
// it, its power state and the wait for it, and the refusals of PVE's
// destroy_vm run read-only before any write. qemu-server's and
// pve-container's destroy_vm make the same checks with the same messages,
// only the word (VM, CT) and the HA resource prefix (vm:, ct:) differ.
package guest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
	"github.com/gopve/proxmox/modules-src/pveapi/ha"
	"github.com/gopve/proxmox/modules-src/pveapi/replication"
)

// Kind is a guest type as PVE names it.
type Kind struct {
	Word string // in PVE's messages: VM, CT
	SID  string // the HA resource prefix: vm, ct
	API  string // the API path segment: qemu, lxc
}

var (
	VM = Kind{Word: "VM", SID: "vm", API: "qemu"}
	CT = Kind{Word: "CT", SID: "ct", API: "lxc"}
)

// HAResource reads the guest's HA resource (ha.ReadResource): whether HA
// has it configured (HA::Config::service_is_configured), and its
// requested state. The guest list's hastate lags the HA config, so this
// is the read that decides.
func HAResource(ctx context.Context, g pveapi.Getter, k Kind, vmid int) (configured bool, state string, err error) {
	r, found, err := ha.ReadResource(ctx, g, ha.SID{Type: k.SID, VMID: vmid})
	if err != nil {
		return false, "", fmt.Errorf("cannot read whether HA manages %s %d: %w", k.Word, vmid, err)
	}
	return found, r.State, nil
}

// HAManaged reads whether HA manages the guest as qemu-server's and
// pve-container's start, stop and migrate ask it (vm_is_ha_managed,
// ha.Manages). Those calls then hand the request to the HA manager (H4).
func HAManaged(ctx context.Context, g pveapi.Getter, k Kind, vmid int) (bool, error) {
	configured, state, err := HAResource(ctx, g, k, vmid)
	return ha.Manages(configured, state), err
}

// Running reads GET /nodes/N/{qemu,lxc}/VMID/status/current.
func Running(ctx context.Context, g pveapi.Getter, k Kind, node string, vmid int) (bool, error) {
	var st struct {
		Status string `json:"status"`
	}
	if err := g.Get(ctx, pveapi.Path("/nodes/%s/%s/%s/status/current", node, k.API, fmt.Sprint(vmid)), nil, &st); err != nil {
		return false, err
	}
	return st.Status == "running", nil
}

// WaitRunning polls the guest's real state until it is want, bounded by
// the run's deadline: an HA request task (hastart/hastop) ends when the
// CRM has the request, before the LRM acted.
func WaitRunning(ctx context.Context, g pveapi.Getter, k Kind, node string, vmid int, want bool, poll time.Duration) error {
	for {
		r, err := Running(ctx, g, k, node, vmid)
		if err == nil && r == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s %d did not reach state %s before the deadline", k.Word, vmid, map[bool]string{true: "started", false: "stopped"}[want])
		case <-time.After(poll):
		}
	}
}

// DestroyCheck is what the read-only destroy checks found.
type DestroyCheck struct {
	Purged    []string // what purge takes with the guest, for the summary
	HAManaged bool     // a stop goes through HA (configured, not ignored)
}

// Destroy names the guest to destroy_vm's checks.
type Destroy struct {
	Kind   Kind
	VMID   int
	Name   string
	Config map[string]string // its config (protection, lock)
	Purge  bool
}

// DestroyRefusal runs destroy_vm's checks read-only (qemu-server
// API2/Qemu.pm destroy_vm $early_checks and QemuServer.pm destroy_vm;
// pve-container API2/LXC.pm destroy_vm $early_checks): protection
// (AbstractConfig check_protection), HA without purge, replication jobs
// without purge (ReplicationConfig::check_for_existing_jobs), and the
// config lock (check_lock, a VM's 'suspended' excepted). Each is refused
// with PVE's own message, before the first write (the stop of a running
// guest comes first and must not happen for a destroy PVE will refuse),
// check mode alike. Being running is not refused: the caller stops first.
//
// It also says what purge takes with the guest: the replication jobs
// (remove_vmid_jobs) and the HA resource (delete_service_from_config);
// with or without purge the ACLs and the pool membership go
// (remove_vm_access).
func DestroyRefusal(ctx context.Context, g pveapi.Getter, d Destroy) (DestroyCheck, error) {
	var out DestroyCheck
	w, id := d.Kind.Word, d.VMID
	if p, err := pveapi.ParseBool(d.Config["protection"]); err == nil && p {
		return out, fmt.Errorf("state: %s %d (%s) has protection enabled; PVE refuses to destroy it (can't remove %s %d - protection mode enabled); nothing was changed: turn its protection off first", w, id, d.Name, w, id)
	}
	jobs, err := replication.Jobs(ctx, g)
	if err != nil {
		return out, fmt.Errorf("cannot read the replication jobs (PVE refuses to destroy a %s that has some, unless purge): %w", w, err)
	}
	var ids []string
	for _, j := range jobs {
		if j.ID.Guest == id {
			ids = append(ids, j.ID.String())
		}
	}
	configured, state, err := HAResource(ctx, g, d.Kind, id)
	if err != nil {
		return out, err
	}
	out.HAManaged = ha.Manages(configured, state)
	if !d.Purge {
		switch {
		case configured:
			return out, fmt.Errorf("purge: %s %d is managed by HA; PVE refuses to destroy it unless purge is set, which also removes its HA resource (unable to remove %s %d - used in HA resources and purge parameter not set.); nothing was changed", w, id, w, id)
		case len(ids) > 0:
			return out, fmt.Errorf("purge: %s %d has replication jobs %s; PVE refuses to destroy it unless purge is set, which also removes them (There is a replication job '%s' for guest '%d' - Please remove that first.); nothing was changed", w, id, strings.Join(ids, ", "), ids[0], id)
		}
	}
	if l := d.Config["lock"]; l != "" && (l != "suspended" || d.Kind != VM) {
		return out, fmt.Errorf("state: %s %d (%s) is locked (%s); PVE refuses to destroy it (%s is locked (%s)); nothing was changed: rerun once the operation holding the lock is done", w, id, d.Name, l, w, l)
	}
	if len(ids) > 0 && d.Purge {
		out.Purged = append(out.Purged, "replication jobs "+strings.Join(ids, ", "))
	}
	if configured && d.Purge {
		out.Purged = append(out.Purged, fmt.Sprintf("HA resource %s:%d", d.Kind.SID, id))
	}
	return out, nil
}

// Gone proves a destroy: the guest is no longer in the cluster's guest
// list.
func Gone(ctx context.Context, g pveapi.Getter, k Kind, vmid int) error {
	ok, err := clusterguests.Exists(ctx, g, vmid)
	if err != nil {
		return err
	}
	if ok {
		return fmt.Errorf("%s %d is still in the cluster's guest list after its destruction", k.Word, vmid)
	}
	return nil
}

// PurgeSummary is the summary's tail naming what purge takes.
func PurgeSummary(purged []string) string {
	if len(purged) == 0 {
		return ""
	}
	return ", purging " + strings.Join(purged, " and ")
}

// CheckNode reads GET /nodes: nil when node is a member and online; an
// error naming the option node when it is offline or the read fails; and
// apart, missing, when the cluster has no such node (a check run may
// assume it is one an earlier task joins, ansible.NotYet).
func CheckNode(ctx context.Context, g pveapi.Getter, node string) (missing, err error) {
	var nodes []struct {
		Node   string `json:"node"`
		Status string `json:"status"`
	}
	if err := g.Get(ctx, "/nodes", nil, &nodes); err != nil {
		return nil, fmt.Errorf("cannot list the nodes: %w", err)
	}
	var names []string
	for _, n := range nodes {
		if n.Node == node {
			if n.Status != "" && n.Status != "online" {
				return nil, fmt.Errorf("node: %s is %s", node, n.Status)
			}
			return nil, nil
		}
		names = append(names, n.Node)
	}
	slices.Sort(names)
	return fmt.Errorf("node: no such cluster node '%s' (the cluster has %s)", node, strings.Join(names, ", ")), nil
}
