package pvecontainer

const examples = `- name: Seed 003's GitLab runner container, replicated and HA-managed later by pve_ha
  gopve.proxmox.pve_container:
    api_host: pve01.example.com
    api_token_id: ansible@pve!ct
    api_token_secret: "{{ vault_pve_token }}"
    vmid: 200
    hostname: gitlab-runner
    node: pve01
    ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst
    unprivileged: true
    cores: 2
    memory: 2048
    swap: 512
    rootfs: {storage: nvme-vm, size: 16G}    # subvol-200-disk-0 on a zfspool; grown, never shrunk
    mounts:
      mp0: {storage: nvme-vm, size: 32G, mp: /srv/builds, backup: false}
    nets:
      net0: {name: eth0, bridge: vmbr0, ip: 192.168.3.50/24, gw: 192.168.3.1}
    features: {nesting: true, keyctl: true}
    onboot: true
    tags: [ci, runner]
    ssh_public_keys: "{{ admin_ssh_keys }}"      # only at creation
    state: started
  delegate_to: localhost
  register: runner

- name: Its MAC, every run
  ansible.builtin.debug:
    msg: "{{ runner.mac.net0 }}"

- name: Remove it (the hostname must match the VMID's; purge takes its replication jobs and HA resource)
  gopve.proxmox.pve_container:
    vmid: 200
    hostname: gitlab-runner
    state: absent
    purge: true
  delegate_to: localhost
`

const returnDoc = `vmid:
  description: The container's VMID.
  returned: always
  type: int
node:
  description: The node the container lives on (or will, in check mode).
  returned: when known
  type: str
existed:
  description: Whether the VMID existed before the run.
  returned: always
  type: bool
mac:
  description: The MAC of every NIC by key, whether or not the container was created by this run. In check mode for a container not yet created, "(assigned at creation)".
  returned: always
  type: dict
  sample: {net0: "BC:24:11:4E:2A:01"}
config:
  description: The container's configuration after the run as PVE reads it (on a running container the live one), predicted in check mode.
  returned: always
  type: dict
pending:
  description: Changes PVE keeps for the next start of a running container (key, value in force, pending value, delete); never reported as done.
  returned: always
  type: list
  elements: dict
restart_required:
  description: Whether pending is non-empty (the module never restarts a container).
  returned: always
  type: bool
task_log:
  description: The tail of a failed task's log.
  returned: when a task failed
  type: list
  elements: str
pve_version:
  description: Major version of the PVE node answering (8 or 9).
  returned: when the API was reached
  type: int
`
