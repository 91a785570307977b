package pvestorage

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
pve_version:
  description: Major version of the PVE node answering (8 or 9).
  returned: when the API was reached
  type: int
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
