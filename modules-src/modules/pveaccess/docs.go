package pveaccess

import "github.com/gopve/proxmox/modules-src/ansible"

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

// about is pve_access's documentation, written by gen-plugins into
// plugins/modules/pve_access.py with the options of spec.
func about() ansible.Module {
	return ansible.Module{
		Name:             "pve_access",
		ShortDescription: "Proxmox VE users, groups, roles, ACL entries and API tokens, read back before ok or changed",
		Description: []string{
			"Manages one access-control object of a Proxmox VE cluster per task (type: user, group, role, acl or token), through the API. Access control lives in /etc/pve/user.cfg, shared by every member: run it once per cluster.",
			"Every write is checked against the official API schema of the node's PVE version (8 or 9) when the task plans it, before its first write: bad input fails naming the option and changes nothing, in a task of several writes too (a rotation, an update with a password, an ACL's removal and addition). Each write is sent once; a lost answer is settled by reading back the object the task names.",
			"A custom role's privileges are checked against the node's own PVE version (8 and 9 differ: VM.Monitor exists only in 8, VM.Replicate and VM.GuestAgent.* only in 9); a role PVE ships is refused, never modified.",
			"ACL entries are converged exactly: type acl names one path and the roles, users, groups and tokens it must (state present) or must not (state absent) grant; --diff shows the path's entries before and after. An entry changed by hand (pveum acl modify) is reported and set back.",
			"A token's secret exists once, in PVE's answer to its creation: it is returned only to a task with no_log: true (as token_secret), masked everywhere else; a rerun finds the token and says the secret cannot be shown again. state: rotated deletes and recreates the token (one DELETE, one POST) and returns the new secret the same way; its ACL entries go with the old token and must be set again (run the acl task after it).",
		},
		Notes: []string{
			"Run it once per cluster (run_once: true), or in local mode on one node (no credentials: the module uses the node's API as root@pam).",
			"A user's password (realm pve) is set when the user is created, and on an existing user only with update_password: always (PVE cannot show a password, so it cannot be compared): such a task reports a change every run. PVE refuses API tokens on that call, so such a task with api_token_id fails before any write: use api_user and api_password, or local mode. A caller other than root@pam must confirm with its own password, which the module sends from api_password. A pam user's password is the node's Linux password and is refused here.",
			"Privileges each kind needs (PVE's checks): user: Realm.AllocateUser on /access/realm/<realm> and User.Modify on /access/groups (or the groups given); group: Group.Allocate on /access/groups; role: Sys.Modify on /access; acl: Permissions.Modify on the path (or the object's Allocate privilege plus every privilege handed out); token: User.Modify on /access/groups, or being the token's own user. Reads need Sys.Audit on /access for ACLs and roles of others.",
		},
		Requirements: []string{"Proxmox VE 8 or 9", "root@pam, or a user or token with the privileges listed in the notes (or root on a node, local mode)"},
		Examples:     examples,
		Return:       returnDoc,
	}
}
