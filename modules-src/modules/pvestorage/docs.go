package pvestorage

import "github.com/gopve/proxmox/modules-src/ansible"

const examples = `- name: The seed's ZFS pool as cluster storage, declared once (S1, S3)
  gopve.proxmox.pve_storage:
    storage: nvme-vm
    type: zfspool
    pool: nvme-vm
    content: [images, rootdir]
    sparse: true
    nodes: "{{ groups['pve'] }}"
  run_once: true

- name: Snippets on local, for cloud-init vendor data (S4)
  gopve.proxmox.pve_storage:
    storage: local
    type: dir
    content: [iso, vztmpl, backup, import, snippets]
  run_once: true

- name: From the controller, with a token and the node pinned
  gopve.proxmox.pve_storage:
    api_host: pve01.example.com
    api_token_id: root@pam!ansible
    api_token_secret: "{{ vault_pve_token }}"
    api_fingerprint: "{{ pve_api_fingerprint }}"
    storage: backup-nfs
    type: nfs
    server: 192.0.2.10
    export: /srv/backup
    content: [backup]
    prune_backups: {keep-last: 3, keep-weekly: 2}
    node_status: true
  delegate_to: localhost
  run_once: true

- name: Remove a definition (refused while guests have volumes on it)
  gopve.proxmox.pve_storage:
    storage: old-nfs
    state: absent
`

const returnDoc = `storage:
  description: The storage's configuration as PVE holds it after the run (predicted in check mode), without secrets and digest; empty when it does not exist.
  returned: always
  type: dict
  sample: {storage: nvme-vm, type: zfspool, pool: nvme-vm, content: "images,rootdir", sparse: 1, nodes: "pve01,pve02,pve03"}
existed:
  description: Whether the storage existed before the run.
  returned: always
  type: bool
encryption_key:
  description: The encryption key PVE generated for encryption_key=autogen (the JSON of a proxmox-backup key file), exactly as PVE answered it, to a task with no_log true; masked (VALUE_SPECIFIED_IN_NO_LOG_PARAMETER) for any other task, since Ansible prints a module's output at -v and -vvv. Masked in every other part of the result and in logs. Back it up outside the cluster.
  returned: when PVE generated a key in this run
  type: str
node_status:
  description: Per node the storage applies to, its status as that node sees it (active, enabled, shared, total/used/avail bytes), or error.
  returned: with node_status=true
  type: dict
  sample: {pve01: {active: true, enabled: true, shared: false, total: 483656464384, used: 11896808448, avail: 471759656960}}
`

// about is pve_storage's documentation, written by gen-plugins into
// plugins/modules/pve_storage.py with the options of spec.
func about() ansible.Module {
	return ansible.Module{
		Name:             "pve_storage",
		ShortDescription: "A Proxmox VE cluster storage: created, converged with a diff, never silently recreated",
		Description: []string{
			"Creates, updates or removes one storage definition of a Proxmox VE cluster (/etc/pve/storage.cfg) through the API. The definition is cluster-wide: declare it once, from one node or from the controller, not once per node.",
			"Every option is checked against the official API schema of the node's PVE version (8 or 9) and against the options of the storage type before anything is written; a bad value fails naming the option.",
			"On an existing storage, only the options the task gives are compared (lists sorted, PVE's defaults filled in), and differences are written with one PUT guarded by the config digest, shown as a storage.cfg diff. A different value for a key PVE cannot change (type, pool, path, server, export, share, datastore, vgname, thinpool…) fails naming it instead of deleting and recreating the storage.",
			"An empty value (empty list or string) removes that option from the definition.",
			"state=absent refuses to remove a storage on which guests still have volumes, unless force is set; the volumes themselves are never deleted.",
		},
		Notes: []string{
			"Secrets follow PVE's sensitive properties of each type (pbs: password, encryption_key, master_pubkey; cifs: password): PVE keeps them under /etc/pve/priv/storage and shows at most a marker in storage.cfg. On an existing storage the encryption key is compared by its fingerprint, the master public key with /etc/pve/priv/storage/<storage>.master.pem when the module runs on a node of the cluster (otherwise it says it cannot compare it), and a password never can be: such a secret is left as it is with a warning naming it, unless update_secrets is true.",
			"encryption_key: autogen makes PVE generate a key when the storage has none (never a second one on a storage that has a key). PVE answers the key once: a task with no_log: true gets it as encryption_key (register it), masked everywhere else; any other task gets encryption_key masked too, since Ansible prints a module's output at -v and -vvv, and the key stays in /etc/pve/priv/storage/<storage>.enc. A warning says to back it up outside the cluster: without it no encrypted backup can be restored. (Ansible's no_target_syslog setting also tells modules no_log: with it set, use no_log on the task anyway.)",
			"Run it once per cluster (run_once: true in a play on the pve group): /etc/pve/storage.cfg is shared by every member, and a node joining a cluster loses its own definitions.",
			"Without api_host, as root on a PVE node, the module uses the node's API through pvesh (local mode): no credentials, about half a second per API call. pvesh takes parameters only on its command line, which any user of the node can read, so a task that gives password or encryption_key is refused in local mode, before any request: give api_host with api_token_id and api_token_secret (or api_user and api_password) for such storages.",
		},
		Requirements: []string{"Proxmox VE 8 or 9", "an API token or user with Datastore.Allocate on /storage, and Datastore.Audit on the storage to remove it without force (the module first looks for guest volumes on it, which PVE lists only with Datastore.Audit or Datastore.AllocateSpace there) (or root on a node, local mode)"},
		Examples:     examples,
		Return:       returnDoc,
	}
}
