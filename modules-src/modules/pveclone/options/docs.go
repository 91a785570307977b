package options

import (
	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
)

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
agent_ready:
  description: Whether the guest agent answered within agent_wait.
  returned: with agent_wait and state=started
  type: bool
` + pveansible.TaskLogReturn

// About is pve_clone's documentation, written by gen-plugins into
// plugins/modules/pve_clone.py with the options of spec.
func About() ansible.Module {
	return ansible.Module{
		Name:             "pve_clone",
		ShortDescription: "A Proxmox VE VM by VMID: cloned from a template (or built bare), configured, read back",
		Description: []string{
			"Makes one VM, identified by its VMID, exist and look as asked. A missing VM is cloned from a template found cluster-wide by VMID or exact name (several templates of that name fail, listing them): the clone call goes to the node holding the template, the destination node goes in target. Without a template the VM is built bare (machine, bios, disks, CD-ROM, EFI/TPM disks, NICs) in one create call.",
			"Then it converges what a clone ignores: cores, sockets, memory, balloon, cpu, numa, tags, onboot, startup, description, agent; NICs merged key by key with what is there, the MAC always re-sent so it never changes; disks as minimum sizes, grown and never shrunk; cloud-init (ciuser, cipassword, sshkeys, ipconfigN, nameservers, searchdomain, citype, cicustom).",
			"Every write is checked against the official API schema of the node's PVE version (8 or 9) before it is sent; bad input fails naming the option and changes nothing. Each write is sent once; every change is read back before it is reported.",
			"An existing VMID whose name differs from name fails with what holds it, instead of configuring someone else's VM; a task without name fails the same way unless it says adopt: true. So does one whose origin, as far as PVE keeps it, differs from what the task asks: a template; a linked clone (its disks name the template's base volume, base-<template>-disk-N) of another template than template, or when the task builds the VM bare or asks a full clone. A full clone keeps no trace of its template in PVE, so its origin cannot be checked: only its name is; the module writes no marker of its own into the VM's config.",
			"On a running VM, PVE applies what it can hot-plug and keeps the rest pending until the next restart: those keys are returned in pending with restart_required, never reported as done, and the VM is never restarted by this module.",
			"Check mode predicts the clone as PVE builds it (new MACs shown as assigned at clone, disk names, linked or full) and the configuration that follows, runs PVE's pre-clone checks read-only (template, node, storage, pool, VMID), and sends no write.",
			"With as_template: true the VM ends as a template (converted after it is configured, its disks renamed to base volumes as PVE does); a template already there is left alone and a difference from the task is warned about, never written.",
		},
		Notes: []string{
			"The clone task is waited for at the node named in its task id; OK and WARNINGS are success (the warnings are returned and shown), any other end fails with the task log's tail. Then the config must be present and unlocked on the target node. All waits are bounded by timeout.",
			"A NIC change on a running VM unplugs the NIC from the guest: give the network settings before the first start (state: present, then started).",
			"cipassword is stored hashed by PVE and shown masked, so it cannot be compared: it is set when the VM is created by this run or when none is set, and never reported as drift.",
			"A template on local storage can only be cloned to its own node (PVE refuses a target with local disks); the module refuses before sending anything, with PVE's reason, unless clone_then_migrate asks to clone there and migrate. Migrations need VM.Migrate on /vms/<vmid> (and Datastore.AllocateSpace on the target storage); through HA, Sys.Console on /.",
			"Privileges (from the PVE API schema's permissions of every call the module makes, PVE 8 and 9): VM.Audit on /vms (the cluster's guest list shows only the guests the token may audit, an empty list is not proof of absence, K19; GET pending, the VM's status and the replication jobs need it too); VM.Clone on /vms/<template>; VM.Allocate on /vms/<vmid> or, with pool, on /pool/<pool> (clone, create, absent); Pool.Audit on /pool/<pool> to see the pool, Pool.Allocate on /pool/<pool> with pool_create; Datastore.AllocateSpace on every storage a disk lands on (the clone's target storage, or each template disk's own storage for a clone without storage; without it or Datastore.Audit the storage is not even listed), and Datastore.Audit to read the storage definitions and an ISO's storage content; SDN.Use on the bridges of the NICs, the template's at the clone and each NIC set (/sdn/zones/localnetwork/<bridge>, or /sdn/zones/localnetwork/<bridge>/<tag> for a NIC with a VLAN tag); the VM.Config.* privilege of each setting changed (CPU, Memory, Network, Disk, CDROM, Cloudinit, Options, HWType; the cloud-init settings take VM.Config.Cloudinit or VM.Config.Network) and VM.Config.Disk for growing a disk; VM.PowerMgmt for started/stopped and the stop before absent; Sys.Audit on / to read whether HA manages the VM (power changes, absent), and on /nodes/<node> to read a task another user started (a lost answer is settled from the node's task list); with agent_wait, VM.Monitor (PVE 8) or VM.GuestAgent.Audit (PVE 9).",
		},
		Requirements: []string{"Proxmox VE 8 or 9", "an API token or user with the privileges listed in the notes (or root on a node, local mode)"},
		Examples:     examples,
		Return:       returnDoc,
	}
}
