// Package pveha is the pve_ha module: one guest made highly available on a
// Proxmox VE 8 or 9 cluster, as one chain (seed 003, pitfalls H1–H8):
//
//   - replication: one ZFS replication job per target node (H1, H6), ids
//     "<vmid>-<n>", judged by (guest, target) so that a job HA relocation
//     rewrote is not drift (PVE switches a job's target when the guest is
//     recovered elsewhere: pve-guest-common ReplicationState.pm);
//   - the HA resource, compared with PVE's defaults (its list leaves them
//     out), its requested state the only way the module starts or stops the
//     guest (H4), with a bounded poll of the guest's real state;
//   - placement: a node-affinity rule on PVE 9, an HA group on PVE 8 or on
//     a PVE 9 cluster whose groups are not migrated yet (H2), chosen by how
//     the cluster answers (ha.Detect); resource-affinity rules on PVE 9.
//
// Stages, each observe → plan → apply → verify on the runtime:
//
//	state present: "replication" (jobs), then "ha" (group → resource →
//	rules; wait_first_sync waits in its observe, before anything HA).
//	state absent:  "ha" (rules, resource, group), then "replication"
//	(jobs removed, waited for until PVE really dropped them).
//
// The guest is found by VMID cluster-wide, wherever it runs now (H3).
package pveha

import (
	"fmt"
	"time"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
)

// Module builds pve_ha as the binary registers it; New builds it with
// client options (tests point it at a simulator with short retries).
var Module, New = pveansible.Declare(about, spec, params{}, 15*time.Minute, run)

func spec() ansible.Spec {
	opts := map[string]ansible.Option{
		"vmid": {Type: ansible.TypeInt, Required: true,
			Description: []string{"VMID of the guest. It is found cluster-wide, on whatever node runs it now (H3)."}},
		"type": {Type: ansible.TypeStr, Choices: []any{"vm", "ct"},
			Description: []string{"vm (QEMU) or ct (container). Optional: the type is read from the cluster; when given, a guest of the other type fails the task."}},
		"state": {Type: ansible.TypeStr, Default: "started", Choices: []any{"started", "stopped", "disabled", "ignored", "absent"},
			Description: []string{
				"The HA resource's requested state: started (HA keeps it running), stopped (kept stopped, still recovered on node failure), disabled (stopped and not recovered), ignored (HA leaves it alone).",
				"absent removes the guest's placement rule or group, its HA resource and its replication jobs (the guest itself stays).",
			}},
		"targets": {Type: ansible.TypeList, Elements: ansible.TypeStr,
			Description: []string{
				"Nodes to replicate the guest to, one job each. Default: every other member of the cluster. An empty list means no replication (existing jobs of the guest are removed): only for guests on shared storage.",
				"After a failover the guest may run on one of these nodes; the job PVE rewrote to point at the node the guest left is kept as it is.",
				"In check mode a node that created_earlier's C(nodes) names and that is not a member yet (one an earlier task of the run joins) counts as a member: the default targets include it and targets or node_affinity may name it, with a warning, as a real run sees it once it joined. A real run refuses a node that is not a member.",
			}},
		"schedule": {Type: ansible.TypeStr, Default: "*/15",
			Description: []string{"Replication schedule, a PVE calendar event (a subset of systemd's: */15, mon..fri 22:00, daily), refused before any write where PVE would refuse it; it bounds how much data a failover can lose."}},
		"rate": {Type: ansible.TypeFloat,
			Description: []string{"Replication bandwidth limit in MB/s. Unset: not managed (a rate set elsewhere stays)."}},
		"comment": {Type: ansible.TypeStr,
			Description: []string{"Comment on the jobs, the HA resource and the rule or group the module writes. Unset: not managed; an empty string removes it."}},
		"disable": {Type: ansible.TypeBool, Default: false,
			Description: []string{"Disable the replication jobs (kept, not run)."}},
		"wait_first_sync": {Type: ansible.TypeBool, Default: false,
			Description: []string{"Wait until every replication job of the guest has completed a sync before declaring the HA resource (H1: HA without replicated data restarts nothing useful). Bounded by wait_timeout. Contention (H5: pvesr.lck held by a long sync, the guest's migration lock held by a migration) only delays a run and is waited out. A job whose first sync failed fails the wait at once when PVE's next try (5, 10, 15, then 30 minutes after the failure; none while the target is offline) falls after wait_timeout, naming the job and its error.",
				"Without it, each job that has not completed a sync, or whose last run failed, is reported in jobs[].state and warned about."}},
		"wait_timeout": {Type: ansible.TypeInt, Default: 300,
			Description: []string{"Seconds to wait for each thing PVE does in the background: the first sync, the guest reaching the requested state, a removed job disappearing."}},
		"max_restart": {Type: ansible.TypeInt,
			Description: []string{"Restart attempts on the same node (PVE default 1). Unset: not managed."}},
		"max_relocate": {Type: ansible.TypeInt,
			Description: []string{"Relocations to another node after failed restarts (PVE default 1). Unset: not managed."}},
		"failback": {Type: ansible.TypeBool,
			Description: []string{"Move the guest back to its most preferred node when that node returns (PVE default: yes). On PVE 9 the resource's failback; on PVE 8 the group's nofailback (needs node_affinity). Unset: not managed."}},
		"node_affinity": {Type: ansible.TypeDict,
			Description: []string{
				"Preferred nodes with priorities, e.g. {pve01: 100}: higher is preferred, the same priority shares. Unset: placement not managed; an empty dict removes the guest's rule or group.",
				"Placement should stay within the nodes that hold a replica (the guest's node and targets): a node outside them is warned about, since HA could start the guest there without its data.",
			}},
		"strict": {Type: ansible.TypeBool, Default: false,
			Description: []string{"Only the nodes of node_affinity may run the guest (PVE 9 rule strict; PVE 8 group restricted)."}},
		"rule": {Type: ansible.TypeStr,
			Description: []string{"Name of the node-affinity rule (PVE 9). Default gopve-<type>-<vmid>, e.g. gopve-ct-200."}},
		"group": {Type: ansible.TypeStr,
			Description: []string{"Name of the HA group (PVE 8, or PVE 9 before the groups are migrated). Default gopve-<type>-<vmid>."}},
		"resource_affinity": {Type: ansible.TypeList, Elements: ansible.TypeDict,
			Description: []string{"PVE 9 only: resource-affinity rules of the guest with other HA guests. Unset: not managed."},
			Options: map[string]ansible.Option{
				"resources": {Type: ansible.TypeList, Elements: ansible.TypeStr, Required: true,
					Description: []string{"The other guests (VMIDs, vm:N or ct:N); each must be an HA resource already."}},
				"affinity": {Type: ansible.TypeStr, Default: "positive", Choices: []any{"positive", "negative"},
					Description: []string{"positive keeps them on one node, negative on different nodes."}},
				"rule": {Type: ansible.TypeStr,
					Description: []string{"Rule name. Default gopve-<type>-<vmid>-<affinity>; required when two entries have the same affinity."}},
			}},
	}
	return ansible.Spec{Options: opts}
}

// params are the decoded options.
type params struct {
	pveansible.Connection `ansible:",squash"`
	VMID                  int              `ansible:"vmid"`
	Type                  string           `ansible:"type"`
	State                 string           `ansible:"state"`
	Targets               []string         `ansible:"targets"`
	Schedule              string           `ansible:"schedule"`
	Rate                  *float64         `ansible:"rate"`
	Comment               *string          `ansible:"comment"`
	Disable               bool             `ansible:"disable"`
	WaitFirstSync         bool             `ansible:"wait_first_sync"`
	WaitTimeout           int              `ansible:"wait_timeout"`
	MaxRestart            *int             `ansible:"max_restart"`
	MaxRelocate           *int             `ansible:"max_relocate"`
	Failback              *bool            `ansible:"failback"`
	NodeAffinity          map[string]any   `ansible:"node_affinity"`
	Strict                bool             `ansible:"strict"`
	Rule                  string           `ansible:"rule"`
	Group                 string           `ansible:"group"`
	ResourceAffinity      []affinityParams `ansible:"resource_affinity"`
}

type affinityParams struct {
	Resources []string `ansible:"resources"`
	Affinity  string   `ansible:"affinity"`
	Rule      string   `ansible:"rule"`
}

func run(r *ansible.Run, o pveapi.Options) error {
	var p params
	if err := r.Decode(&p); err != nil {
		return err
	}
	if err := p.check(); err != nil {
		return err
	}
	c, err := pveansible.ForRun(r, p.Connection.API(), o)
	if err != nil {
		return err
	}
	g := &guestHA{r: r, c: c, p: p}
	defer g.report()
	if p.State == "absent" {
		if err := r.Stage("ha", g.planHA); err != nil {
			return err
		}
		return r.Stage("replication", g.planReplication)
	}
	if err := r.Stage("replication", g.planReplication); err != nil {
		return err
	}
	return r.Stage("ha", g.planHA)
}

// check refuses what the options alone decide, before any request.
func (p params) check() error {
	if p.VMID < 100 || p.VMID > 999999999 {
		return fmt.Errorf("vmid: %d is not a guest id (100 to 999999999)", p.VMID)
	}
	if p.WaitTimeout <= 0 {
		return fmt.Errorf("wait_timeout: must be positive, not %d", p.WaitTimeout)
	}
	if p.Rate != nil && *p.Rate < 1 {
		return fmt.Errorf("rate: at least 1 (MB/s), not %v", *p.Rate)
	}
	if p.Schedule == "" {
		return fmt.Errorf("schedule: must not be empty")
	}
	for _, n := range []*int{p.MaxRestart, p.MaxRelocate} {
		if n != nil && *n < 0 {
			return fmt.Errorf("max_restart and max_relocate: at least 0, not %d", *n)
		}
	}
	if _, err := nodePriorities(p.NodeAffinity); err != nil {
		return err
	}
	for i, t := range p.Targets {
		if t == "" {
			return fmt.Errorf("targets[%d]: empty node name", i)
		}
	}
	return nil
}
