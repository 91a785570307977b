// Package pveaccess is the pve_access module: one object of Proxmox VE's
// access control (/etc/pve/user.cfg) per task — a user, a group, a custom
// role, the ACL entries of one path, or an API token — through the API.
//
// One module with `type`, not five: every kind shares the connection, the
// observe → plan → verify flow and the object's id options, and a playbook
// that sets up an automation account reads as one list of pve_access tasks
// (user, role, acl, token) in the order PVE needs them.
//
//   - observe: GET /version and GET /access/roles (the version's valid
//     privileges are the Administrator role's, the built-in roles are the
//     ones PVE marks special), then the object itself.
//   - plan: absent → create; present → the options the task gives,
//     compared with what PVE holds, updated once; a diff per change.
//   - verify: every change is read back.
package pveaccess

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
)

// Module builds pve_access as the binary registers it; New builds it with
// client options (tests point it at a simulator with short retries).
//
// Every API module's check run assumes what created_earlier names: here a
// run of the role (user, then its token, then ACL entries granting a new
// role) meets a user or role an earlier task of the same play creates.
var Module, New = pveansible.Declare(about, spec, params{}, 2*time.Minute, run)

func spec() ansible.Spec {
	opts := map[string]ansible.Option{
		"type": {Type: ansible.TypeStr, Required: true, Choices: []any{"user", "group", "role", "acl", "token"},
			Description: []string{"The kind of object this task manages."}},
		"state": {Type: ansible.TypeStr, Default: "present", Choices: []any{"present", "absent", "rotated"},
			Description: []string{"present creates or converges the object; absent removes it (for acl: the entries named). rotated (token only) deletes and recreates the token, for a new secret."}},
		"userid":    ansible.StrOption("user: the user, token: its owner, as user@realm (realm pam or pve), e.g. automation@pve."),
		"groupid":   ansible.StrOption("group: the group's name."),
		"roleid":    ansible.StrOption("role: the custom role's name (not one PVE ships, not starting with PVE)."),
		"tokenid":   ansible.StrOption("token: the token's name (letters, digits, '.', '-', '_', starting with a letter), e.g. gopve. The full id is userid!tokenid."),
		"comment":   ansible.StrOption("user, group, token: the comment. An empty string removes it."),
		"email":     ansible.StrOption("user: the e-mail address."),
		"firstname": ansible.StrOption("user: the first name."),
		"lastname":  ansible.StrOption("user: the last name."),
		"password": {Type: ansible.TypeStr, NoLog: true,
			Description: []string{"user (realm pve): the password (8 to 64 characters), set at creation, and on an existing user only with update_password: always."}},
		"update_password": {Type: ansible.TypeStr, Default: "on_create", Choices: []any{"on_create", "always"},
			Description: []string{"user: on_create sets password only when the user is created; always sends it on every run (PVE cannot show it to compare)."}},
		"enable":     {Type: ansible.TypeBool, Description: []string{"user: whether the account may log in (PVE's default: true)."}},
		"expire":     {Type: ansible.TypeInt, Description: []string{"user, token: expiry as seconds since the epoch; 0 never expires."}},
		"groups":     ansible.ListOption("user: the groups the user is a member of, exactly (the groups must exist). acl: the groups the entries are for."),
		"privileges": ansible.ListOption("role: the role's privileges, exactly, checked against the node's PVE version."),
		"path":       ansible.StrOption("acl: the ACL path, e.g. /, /storage/nvme-vm, /vms/201, /pool/tenant."),
		"roles":      ansible.ListOption("acl: the roles the entries grant."),
		"users":      ansible.ListOption("acl: the users (user@realm) the entries are for."),
		"tokens":     ansible.ListOption("acl: the tokens (user@realm!tokenid) the entries are for."),
		"propagate": {Type: ansible.TypeBool, Default: true,
			Description: []string{"acl: whether the entries also apply below path."}},
		"privsep": {Type: ansible.TypeBool, Default: true,
			Description: []string{"token: privilege separation: the token has only what ACL entries grant the token itself (and its user has too). false gives it all its user's privileges."}},
	}
	return ansible.Spec{Options: opts, Constraints: ansible.Constraints{
		RequiredIf: []ansible.RequiredIf{
			{Key: "type", Value: "user", Requirements: []string{"userid"}},
			{Key: "type", Value: "token", Requirements: []string{"userid", "tokenid"}},
			{Key: "type", Value: "group", Requirements: []string{"groupid"}},
			{Key: "type", Value: "role", Requirements: []string{"roleid"}},
			{Key: "type", Value: "acl", Requirements: []string{"path", "roles"}},
		},
	}}
}

// params are the task's options.
type params struct {
	pveansible.Connection `ansible:",squash"`
	Type                  string   `ansible:"type"`
	State                 string   `ansible:"state"`
	UserID                string   `ansible:"userid"`
	GroupID               string   `ansible:"groupid"`
	RoleID                string   `ansible:"roleid"`
	TokenID               string   `ansible:"tokenid"`
	Comment               *string  `ansible:"comment"`
	Email                 *string  `ansible:"email"`
	Firstname             *string  `ansible:"firstname"`
	Lastname              *string  `ansible:"lastname"`
	Password              string   `ansible:"password"`
	UpdatePassword        string   `ansible:"update_password"`
	Enable                *bool    `ansible:"enable"`
	Expire                *int     `ansible:"expire"`
	Groups                []string `ansible:"groups"`
	Privileges            []string `ansible:"privileges"`
	Path                  string   `ansible:"path"`
	Roles                 []string `ansible:"roles"`
	Users                 []string `ansible:"users"`
	Tokens                []string `ansible:"tokens"`
	Propagate             bool     `ansible:"propagate"`
	Privsep               bool     `ansible:"privsep"`
}

// AccessControl.pm / Auth/Plugin.pm: user@realm, the token's sub id, group
// and role names.
var (
	userIDRe  = regexp.MustCompile(`^[^\s:/]+@[A-Za-z][A-Za-z0-9._-]+$`)
	tokenIDRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._-]+$`)
	nameRe    = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
)

// validate refuses, before any request and naming the option, what PVE
// would refuse.
func validate(p params) error {
	if p.State == "rotated" && p.Type != "token" {
		return fmt.Errorf("state: rotated is for type token only")
	}
	if p.UserID != "" && !userIDRe.MatchString(p.UserID) {
		return fmt.Errorf("userid: %q does not look like a valid user name (user@realm)", p.UserID)
	}
	if p.TokenID != "" && !tokenIDRe.MatchString(p.TokenID) {
		return fmt.Errorf("tokenid: %q is not a valid token id (a letter, then at least one letter, digit, '.', '-' or '_')", p.TokenID)
	}
	if p.GroupID != "" && !nameRe.MatchString(p.GroupID) {
		return fmt.Errorf("groupid: group name %q contains invalid characters", p.GroupID)
	}
	if p.RoleID != "" && !nameRe.MatchString(p.RoleID) {
		return fmt.Errorf("roleid: role name %q contains invalid characters", p.RoleID)
	}
	if p.Type == "user" && p.Password != "" {
		if _, realm := splitUser(p.UserID); realm == "pam" {
			return fmt.Errorf("password: %s is a pam user, whose password is the node's Linux password; set it with the system's tools", p.UserID)
		}
		if n := len(p.Password); n < 8 || n > 64 {
			return fmt.Errorf("password: must be 8 to 64 characters long (PVE's limits)")
		}
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"comment", p.Comment}, {"firstname", p.Firstname}, {"lastname", p.Lastname}} {
		if f.v == nil {
			continue
		}
		if err := pveformat.CheckStoredText(f.name, *f.v); err != nil {
			return err // user.cfg's encode_text/decode_text
		}
	}
	if p.Email != nil {
		// User.pm stores the email only when Perl calls it true, and
		// write_user_config writes it unencoded: "0" would be sent on
		// every run, a line break (which pve_verify_email lets through at
		// the end) would split the user's line in user.cfg.
		switch e := *p.Email; {
		case e == "0":
			return fmt.Errorf("email: PVE never stores the value \"0\", so it would be set again on every run; use an address, or an empty string to remove it")
		case strings.Contains(e, "\n"):
			return fmt.Errorf("email: %q holds a line break, which PVE would write into user.cfg as it is, breaking the user's line", e)
		}
	}
	if p.Type == "acl" {
		if len(p.Users)+len(p.Groups)+len(p.Tokens) == 0 {
			return fmt.Errorf("users: acl needs users, groups or tokens")
		}
		for _, u := range p.Users {
			if !userIDRe.MatchString(u) {
				return fmt.Errorf("users: %q does not look like a valid user name", u)
			}
		}
		for _, t := range p.Tokens {
			u, name, ok := cutToken(t)
			if !ok || !userIDRe.MatchString(u) || !tokenIDRe.MatchString(name) {
				return fmt.Errorf("tokens: %q is not a valid token id (user@realm!tokenid)", t)
			}
		}
		if err := checkACLPath(p.Path); err != nil {
			return err
		}
	}
	return nil
}

func run(r *ansible.Run, o pveapi.Options) error {
	var p params
	if err := r.Decode(&p); err != nil {
		return err
	}
	if err := validate(p); err != nil {
		return err
	}
	c, err := pveansible.ForRunSecret(r, p.Connection.API(), o, "password", p.Password != "")
	if err != nil {
		return err
	}
	a := &access{r: r, c: c, p: p}
	err = r.Stage(p.Type, a.plan)
	a.report()
	return err
}
