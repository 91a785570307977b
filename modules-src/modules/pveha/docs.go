package pveha

import "github.com/gopve/proxmox/modules-src/ansible"

const examples = `- name: The seed's runner container, replicated to the two other nodes, at home on pve01
  gopve.proxmox.pve_ha:
    vmid: 200
    type: ct
    state: started
    max_restart: 1
    max_relocate: 1
    comment: Managed by Ansible
    node_affinity: {pve01: 100}
    wait_first_sync: true
  run_once: true

- name: Dokploy's VM at home on pve02, replication every 5 minutes to pve01 and pve03
  gopve.proxmox.pve_ha:
    vmid: 201
    targets: [pve01, pve03]
    schedule: "*/5"
    node_affinity: {pve02: 100}
    strict: false
  run_once: true

- name: Keep two guests apart (PVE 9)
  gopve.proxmox.pve_ha:
    vmid: 202
    resource_affinity:
      - resources: [203]
        affinity: negative
  run_once: true

- name: Take a guest out of HA and stop replicating it (the guest stays)
  gopve.proxmox.pve_ha:
    vmid: 200
    state: absent
  run_once: true
`

const returnDoc = `mechanism:
  description: How placement is written on this cluster - groups (PVE 8), rules (PVE 9), or "groups (not yet migrated to rules)" on a PVE 9 cluster whose HA groups PVE has not migrated yet.
  returned: when the API was reached
  type: str
guest:
  description: The guest as the cluster lists it now (after the run) - vmid, sid, node, status, hastate.
  returned: when the API was reached
  type: dict
  sample: {vmid: 200, sid: "ct:200", node: pve01, status: running, hastate: started}
jobs:
  description: The guest's replication jobs after the run (predicted in check mode), with the live status its node reports - last_sync (Unix time, 0 = never), fail_count, error, and state as pvesr status tells it - syncing (a run in progress), error (the last run failed), pending (no sync completed yet), ok, or not listed (the node does not show it). followed_guest marks a job PVE rewrote when HA recovered the guest on another node.
  returned: when the API was reached
  type: list
  elements: dict
  sample: [{id: "200-0", source: pve01, target: pve02, schedule: "*/15", disable: false, last_sync: 1764582000, fail_count: 0, state: ok, followed_guest: false}]
resource:
  description: The HA resource after the run with PVE's defaults filled in, and its live state (node, status, hastate); empty when none.
  returned: when the API was reached
  type: dict
  sample: {sid: "ct:200", state: started, max_restart: 1, max_relocate: 1, failback: true, live: {node: pve01, status: running, hastate: started}}
placement:
  description: The node-affinity rule (rule, nodes, strict) or the HA group (group, nodes, strict, nofailback) of the guest; empty when not managed.
  returned: when the API was reached
  type: dict
  sample: {rule: gopve-ct-200, nodes: "pve01:100", strict: false}
resource_affinity:
  description: The resource-affinity rules the task manages (rule, resources, affinity).
  returned: when the API was reached
  type: list
  elements: dict
`

// about is pve_ha's documentation, written by gen-plugins into
// plugins/modules/pve_ha.py with the options of spec.
func about() ansible.Module {
	return ansible.Module{
		Name:             "pve_ha",
		ShortDescription: "A Proxmox VE guest made highly available: replication, HA resource and placement as one chain",
		Description: []string{
			"Makes one guest (VM or container, found by VMID wherever it runs now) highly available on a Proxmox VE 8 or 9 cluster: ZFS replication jobs to the other nodes, the HA resource, and its placement, in that order, each read back before the next.",
			"Replication: one job per target node (targets, default every other member), ids <vmid>-<n>. A job is identified by the guest and its target, and a job that PVE rewrote when HA recovered the guest on another node (its target becomes the node the guest left) is recognised as the same job, not drift. Every disk of the guest must be on a zfspool storage that is available on every target; otherwise the task fails naming the disk and the node, before any write.",
			"HA resource: state, max_restart, max_relocate, comment, failback (PVE 9), compared with PVE's defaults so that a resource created elsewhere compares equal. Starting and stopping belong to the HA manager: the module sets the requested state and polls the guest's real state, bounded by wait_timeout; it never calls the guest's start or stop.",
			"Placement: node_affinity ({node: priority}) with strict. On PVE 9 it is a node-affinity rule; on PVE 8 an HA group (restricted = strict, nofailback = not failback). A PVE 9 cluster whose HA groups PVE has not migrated to rules yet keeps groups as the writable mechanism; the module says so and adopts the ha-group-<group> rule PVE later makes from it, instead of fighting the migration. A guest may be in one node-affinity rule only: another rule naming it fails the task, naming it. resource_affinity (PVE 9) keeps the guest together with, or apart from, other HA guests.",
			"state=absent removes, in reverse order, the guest's rule (or its group), the HA resource and its replication jobs, and waits until PVE has really dropped the jobs (a removal is carried out by the source node's next replication run). PVE first drops the replica on the job's target, so a job whose target is offline stays until that node is back: the task then fails at once, naming the job and PVE's error.",
			"Every update of an HA resource, group or rule carries the digest of the read it was planned from, so another run's or user's change made meanwhile is never overwritten: PVE refuses the stale update without writing (detected modified configuration), the module reads the HA config again, plans that object anew (a guest another run added to the rule stays), warns naming what changed and sends it once more; a second refusal fails the task, naming both changes.",
			"Check mode reads only and reports the whole plan with a diff of every object.",
		},
		Notes: []string{
			"Run it once per guest for the cluster (run_once, or from the controller): every object lives in /etc/pve, shared by all members.",
			"Token privileges (from the PVE 8 and 9 API schemas): VM.Audit on /vms/<vmid> (the guest, its config, its jobs and their status); replication writes need Datastore.Allocate on /storage on PVE 8 and VM.Replicate on /vms/<vmid> on PVE 9; HA resources, groups and rules need Sys.Audit on / to read and Sys.Console on / to write; Datastore.Audit on /storage/<storage> for the guest's storages and their status on the targets. Without VM.Audit the guest list is silently empty (K19): the module checks the privilege instead of reporting the guest missing.",
			"HA recovery of a guest after a node failure takes about a minute (PVE fences the node first, H7); data written after the last replication is lost. Only full clones can move (H8): a linked clone's base disk lives on its template's node, so replicating one on a local pool is refused before any write.",
		},
		Requirements: []string{"Proxmox VE 8 or 9, a cluster with quorum", "the guest's disks on a zfspool storage present on every target (for replication)"},
		Examples:     examples,
		Return:       returnDoc,
	}
}
