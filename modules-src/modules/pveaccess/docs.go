package pveaccess

const examples = `- name: The automation account, its role, ACL entries and a privsep token (once per cluster)
  run_once: true
  block:
    - name: User automation@pve
      gopve.proxmox.pve_access:
        type: user
        userid: automation@pve
        comment: gopve automation
    - name: Its role, exactly these privileges (checked against the node's PVE version)
      gopve.proxmox.pve_access:
        type: role
        roleid: Automation
        privileges: [Datastore.Allocate, Datastore.Audit, Sys.Audit, VM.Allocate, VM.Audit, VM.Clone,
                     VM.Config.Disk, VM.Config.CPU, VM.Config.Memory, VM.Config.Network, VM.Config.Options,
                     VM.Config.Cloudinit, VM.PowerMgmt]
    - name: The role on / for the user and its token
      gopve.proxmox.pve_access:
        type: acl
        path: /
        roles: [Automation]
        users: [automation@pve]
        tokens: [automation@pve!gopve]
    - name: The token (its secret is returned once, to this no_log task)
      gopve.proxmox.pve_access:
        type: token
        userid: automation@pve
        tokenid: gopve
        comment: controller runs
      no_log: true
      register: automation_token

- name: Later plays from the controller use it
  hosts: pve
  module_defaults:
    group/gopve.proxmox.api:
      api_host: "{{ ansible_host }}"
      api_token_id: "{{ hostvars[groups['pve'][0]].automation_token.full_tokenid }}"
      api_token_secret: "{{ hostvars[groups['pve'][0]].automation_token.token_secret }}"
  tasks: []

- name: A new secret (one DELETE, one POST); set the token's ACL entries again after it
  gopve.proxmox.pve_access:
    type: token
    userid: automation@pve
    tokenid: gopve
    state: rotated
  no_log: true
  register: automation_token
`

const returnDoc = `existed:
  description: Whether the object (for acl, any of the named entries) existed before the task.
  returned: always
  type: bool
pve_version:
  description: The node's PVE major version.
  returned: when the node was reached
  type: int
user:
  description: type user, the user as read back (or predicted in check mode); empty when absent.
  returned: type user
  type: dict
group:
  description: type group, the group as read back (or predicted).
  returned: type group
  type: dict
role:
  description: type role, the role's privileges as read back (or predicted).
  returned: type role
  type: dict
acl:
  description: type acl, the path and its entries for the named members ("member role propagate=0|1"), read back (or predicted).
  returned: type acl
  type: dict
token:
  description: type token, privsep, expire, comment and full_tokenid, read back (or predicted).
  returned: type token
  type: dict
full_tokenid:
  description: type token, user@realm!tokenid, as api_token_id takes it.
  returned: type token, when the token exists or is created
  type: str
token_secret:
  description: The secret of a token this task created (or rotated). Only to a task with no_log true; any other task gets the no_log placeholder. PVE shows it only once.
  returned: when a token was created
  type: str
`
