package pvecluster

const examples = `- name: Prepare every node and collect its root key
  gopve.proxmox.pve_cluster:
    cluster_name: lab
    primary: pve01
    nodes: [{name: pve01, address: 192.0.2.11}, {name: pve02, address: 192.0.2.12}, {name: pve03, address: 192.0.2.13}]
    domain: example.org
    prepare: [ssh_key]
    form: false
  register: prep

- name: Create on the primary, then join the others one at a time (the role does this)
  gopve.proxmox.pve_cluster:
    cluster_name: lab
    primary: pve01
    nodes: [{name: pve01, address: 192.0.2.11}, {name: pve02, address: 192.0.2.12}, {name: pve03, address: 192.0.2.13}]
    domain: example.org
    peer_keys: "{{ dict(groups.pve | zip(groups.pve | map('extract', hostvars, ['prep', 'ssh_public_key']))) }}"
  throttle: 1

- name: Join over the API instead (no SSH trust needed for the join)
  gopve.proxmox.pve_cluster:
    cluster_name: lab
    primary: pve01
    nodes: "{{ cluster_nodes }}"
    join_method: api
    api_password: "{{ vault_root_password }}"
    primary_api_fingerprint: "{{ hostvars.pve01.pve_api_fingerprint }}"
    api_fingerprint: "{{ pve_api_fingerprint }}"
  throttle: 1
`

const returnDoc = `node:
  description: This node's name.
  returned: always
  type: str
role:
  description: primary or member.
  returned: always
  type: str
cluster:
  description: The cluster as this node sees it after the run (read back; predicted in check mode); null when standalone. expected_votes and total_votes count one vote per listed and per online member (PVE's default of one vote per node).
  returned: always
  type: dict
  sample: {name: lab, quorate: true, expected_votes: 3, total_votes: 3, members: [{name: pve01, nodeid: 1, address: 192.0.2.11, online: true}]}
ssh_public_key:
  description: Root's public key on this node; empty in check mode when the run would create it.
  returned: always
  type: str
ssh_host_key:
  description: This node's ed25519 SSH host key (/etc/ssh/ssh_host_ed25519_key.pub, without comment), for the peers' peer_host_keys; empty when it has none.
  returned: always
  type: str
known_hosts_replaced:
  description: known_hosts lines replaced because a peer's host key changed (only with accept_changed_host_keys).
  returned: when a recorded host key was replaced
  type: list
  elements: str
ssh_key_created:
  description: Whether this run creates root's key pair.
  returned: always
  type: bool
joined_through:
  description: The member (the primary) through which this run joins this node to the cluster, or in check mode would join it; empty when this run joins nothing. The roles of the later phases read it in check mode, where the node has not joined yet, to predict from the cluster it joins instead of from its own standalone view (playbooks/site.yml --limit NEW).
  returned: always
  type: str
  sample: pve01
membership_read:
  description: What stage 1 read this node's membership from. /etc/pve/.members when pmxcfs's own files proved a converged member (this node online in the quorate cluster cluster_name, /etc/pve/corosync.conf naming it at the running config_version, and on a non-primary the primary online in the same partition at its address), with no API request, no process and no remote read. api otherwise (this node's /cluster/status, and the primary's own view for a member, a join or a repair).
  returned: always
  type: str
  sample: /etc/pve/.members
evidence:
  description: Output of pvecm or the join task's log, when a create or join ran.
  returned: when a create or join ran
  type: list
  elements: str
`
