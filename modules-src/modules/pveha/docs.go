package pveha

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

const returnDoc = `pve_version:
  description: Major version of the PVE node answering (8 or 9).
  returned: when the API was reached
  type: int
mechanism:
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
