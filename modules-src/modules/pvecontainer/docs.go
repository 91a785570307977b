package pvecontainer

import (
	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
)

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
` + pveansible.TaskLogReturn

// about is pve_container's documentation, written by gen-plugins into
// plugins/modules/pve_container.py with the options of spec.
func about() ansible.Module {
	return ansible.Module{
		Name:             "pve_container",
		ShortDescription: "A Proxmox VE LXC container by VMID: created from a CT template or restored from a backup, configured, read back",
		Description: []string{
			"Makes one LXC container, identified by its VMID, exist and look as asked. A missing container is created on node from a CT template volume (local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst), as pct create does (POST /nodes/{node}/lxc, a vzcreate task), with everything the task gives in that one call; or restored from a vzdump backup (restore_from, see the notes).",
			"Then it converges an existing one: cores, memory, swap, NICs merged key by key with what is there (the MAC is kept, K16), features (nesting, keyctl, fuse, mknod, mount, force_rw_sys) merged key by key, mount points, onboot, startup, tags, description; the rootfs and every mount point are grown to their size, never shrunk (a smaller size is refused naming the option). unprivileged, password and ssh_public_keys are creation-time settings: a different unprivileged on an existing container is refused before any write (PVE keeps it read-only), password and keys are never compared.",
			"The container's hostname is its name: an existing VMID whose hostname differs fails with what holds it, before any write; a task without hostname fails the same way unless it says adopt: true (then a given hostname is set rather than checked).",
			"Every write is checked against the official API schema of the node's PVE version (8 or 9) before it is sent; bad input fails naming the option and changes nothing. Each write is sent once; a lost answer to the create is settled only by a read proving the new VMID is this task's (its hostname); every change is read back before it is reported.",
			"On a running container PVE applies what it can hot-plug (memory, swap, cores, NICs, a new mount point, the options) and keeps the rest pending until the next start: those keys are returned in pending with restart_required, never reported as done; the container is never restarted by this module.",
			"Check mode predicts the container as pct create builds it (volume names per storage type: subvol-<vmid>-disk-N on zfspool, vm-<vmid>-disk-N on lvm, lvmthin and rbd, <vmid>/vm-<vmid>-disk-N.raw on a file storage; new MACs as assigned at creation; unprivileged as the version defaults it), runs create_vm's checks read-only, and sends no write.",
		},
		Notes: []string{
			"state started/stopped of a container HA manages goes through HA (PVE turns the call into an HA request, H4) and is polled until PVE reports the state; absent refuses, before any write and in check mode alike, what pve-container's destroy_vm refuses: protection, HA or replication jobs without purge, a lock.",
			"restore_from restores a missing container from a vzdump backup as pct restore does (POST /nodes/{node}/lxc with restore=1, a vzrestore task): the backup's rootfs and mount points are re-created with their sizes on rootfs.storage (default local), its config becomes the container's (hostname and unprivileged from the task when given), then the task's other settings are converged on it as on an existing container. It never overwrites: a VMID that exists is never restored over (force is never sent), it is converged (or refused) as any existing container. Check mode reads the backup's config (GET /nodes/{node}/vzdump/extractconfig) and predicts the restored container from it, without a write. A restore sets no password or SSH keys (the backup's root filesystem keeps its own): those options are refused with restore_from. Privileges for it: VM.Backup on /vms/<backup's vmid> and Datastore.AllocateSpace on the backup's storage (to read it), besides those of a creation.",
			"Privileges (proven against pve-container's own checks, PVE 8 and 9): VM.Audit on /vms/<vmid> (the guest list shows only what the token may audit, K19; the config, the pending view); VM.Allocate on /vms/<vmid> (create, absent, and the nesting feature) or, with pool, on /pool/<pool>, and Pool.Audit there to see the pool; Datastore.AllocateSpace on each storage a volume lands on or grows on, and on the template's storage (or Datastore.Audit there); SDN.Use on each NIC's bridge (/sdn/zones/localnetwork/<bridge>, or …/<bridge>/<tag> with a VLAN tag); VM.Config.CPU (cores), VM.Config.Memory (memory, swap), VM.Config.Network (hostname and the NICs), VM.Config.Disk (rootfs, mount points, growing them), VM.Config.Options (onboot, startup, tags, description, and every resize: PVE checks it on resize's disk parameter); VM.PowerMgmt for started/stopped; Sys.Audit on / to read the HA resource and the replication jobs; Sys.Modify on / to create a privileged container on PVE 9. Only root@pam may set features other than nesting, any feature of a privileged container, bind or device mount points, or a rootfs given as a bare size.",
		},
		Requirements: []string{"Proxmox VE 8 or 9", "an API token or user with the privileges listed in the notes (or root on a node, local mode)"},
		Examples:     examples,
		Return:       returnDoc,
	}
}
