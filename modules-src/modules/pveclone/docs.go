package pveclone

const examples = `- name: Seed 001's tenant VM in one task, from the controller
  gopve.proxmox.pve_clone:
    api_host: pve01.example.com
    api_token_id: ansible@pve!clone
    api_token_secret: "{{ vault_pve_token }}"
    vmid: 4101
    name: tenant-a-web-1
    template: debian-12-cloud      # exact name, exactly one template cluster-wide
    node: pve02                    # the template may live elsewhere: the clone goes there with target
    pool: tenant-a
    cores: 2
    memory: 4096
    nets:
      net0: {bridge: vmbr1, tag: 120, firewall: false, mtu: 1}
    disks:
      scsi0: 32G                   # grown, never shrunk
    ciuser: debian
    sshkeys: "{{ tenant_ssh_keys }}"
    ipconfig:
      ipconfig0: ip=10.12.0.21/24,gw=10.12.0.1
    nameservers: [10.12.0.1]
    state: started
  delegate_to: localhost

- name: Seed 002's bare VM (q35, OVMF, scsi disk, ISO CD-ROM, two NICs)
  gopve.proxmox.pve_clone:
    vmid: 310
    name: "{{ inventory_hostname }}"
    node: pve1
    cores: 4
    memory: 8192
    machine: q35
    bios: ovmf
    ostype: l26
    scsihw: virtio-scsi-single
    disks:
      scsi0: "vmdata:32,discard=on,ssd=1"
    cdrom: isos:iso/debian-13-netinst.iso
    efidisk: {storage: vmdata, efitype: 4m, pre_enrolled_keys: true}
    nets:
      net0: virtio,bridge=vmbr0
      net1: {model: virtio, bridge: vmbr1, tag: 30}
    boot: order=scsi0;ide2
    agent: enabled=1,fstrim_cloned_disks=1
    onboot: true
    tags: [production]
  delegate_to: localhost
  register: vm

- name: A VMID claimed within a range, the VM found again by its name
  gopve.proxmox.pve_clone:
    vmid: auto
    vmid_range: 2000-2099          # never outside it; full range: the task fails
    name: tenant-b-db-1            # required: exactly one guest of the range may carry it
    template: debian-12-cloud
    node: pve03
  delegate_to: localhost
  register: db

- name: The VMID it took (the same on every rerun)
  ansible.builtin.debug:
    msg: "{{ db.vmid }}"

- name: The MACs, every run (K17)
  ansible.builtin.debug:
    msg: "{{ vm.mac.net0 }}"

- name: A template of our own, built bare, configured, then converted (a rerun leaves it alone)
  gopve.proxmox.pve_clone:
    vmid: 9100
    name: debian-13-cloud
    node: pve1
    disks:
      scsi0: vmdata:8              # becomes vmdata:base-9100-disk-0
      ide2: vmdata:cloudinit
    nets:
      net0: virtio,bridge=vmbr0
    ciuser: debian
    as_template: true              # state: stopped would stop a running VM first; started is refused
  delegate_to: localhost

- name: A template on pve1's local-lvm, the VM wanted on pve2 - cloned on pve1, migrated, then configured there
  gopve.proxmox.pve_clone:
    vmid: 320
    name: app-2
    template: debian-12-local
    node: pve2
    clone_then_migrate: true       # one change each: clone, migrate (with-local-disks), configure, start
    storage: vmdata                # optional: where the disks end on pve2 (targetstorage)
    cores: 2
    state: started
  delegate_to: localhost

- name: Move VM 201 back to pve1 if it lives elsewhere (online when running; through HA under HA)
  gopve.proxmox.pve_clone:
    vmid: 201
    name: web-1
    node: pve1
    migrate_existing: true         # without it, a warning says where the VM is and nothing moves
  delegate_to: localhost

- name: Remove it (the name must match the VMID's)
  gopve.proxmox.pve_clone:
    vmid: 310
    name: "{{ inventory_hostname }}"
    state: absent
    purge: true
`

const returnDoc = `vmid:
  description: The VM's VMID; with vmid auto the one found by name or claimed (in check mode, the one it would claim now).
  returned: always, except vmid auto with state absent and no VM of that name in the range
  type: int
node:
  description: The node the VM lives on, read back (or will, in check mode). After a failed migration, the node it is on now; without migrate_existing an existing VM's own node, which may differ from the node option (a warning says so).
  returned: when known
  type: str
existed:
  description: Whether the VMID existed before the run.
  returned: always
  type: bool
mac:
  description: The MAC of every NIC by key, whether or not the VM was created by this run (K17). In check mode for a VM not yet cloned, "(assigned at clone)".
  returned: always
  type: dict
  sample: {net0: "BC:24:11:4E:2A:01"}
config:
  description: The VM's configuration after the run as PVE reads it (on a running VM the live one), predicted in check mode; cipassword masked.
  returned: always
  type: dict
pending:
  description: Changes PVE keeps for the next start of a running VM (key, value in force, pending value, delete; error when PVE wrote the key but could not hot-plug it, with PVE's message such as "hotplug problem - ..."); never reported as done. The task's message, a warning and the diff name the keys of this run that wait.
  returned: always
  type: list
  elements: dict
restart_required:
  description: Whether pending is non-empty (the module never restarts a VM).
  returned: always
  type: bool
clone_warnings:
  description: Warning lines of a clone task that ended with WARNINGS (a success).
  returned: when the clone warned
  type: list
  elements: str
task_log:
  description: The tail of a failed task's log.
  returned: when a task failed
  type: list
  elements: str
agent_ready:
  description: Whether the guest agent answered within agent_wait.
  returned: with agent_wait and state=started
  type: bool
pve_version:
  description: Major version of the PVE node answering (8 or 9).
  returned: when the API was reached
  type: int
`
