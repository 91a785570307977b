// Package access is the simulator's model of PVE's access control, after
// pve-access-control: the users, tokens, groups, pools, custom roles and
// ACL entries of user.cfg and priv/token.cfg (src/PVE/AccessControl.pm
// parse_user_config / write_user_config, TokenConfig.pm), the privileges
// and built-in roles per PVE version ($privgroups, create_roles), token and
// user checks (verify_token, check_user_enabled), and permission
// evaluation as src/PVE/RPCEnvironment.pm does it (permissions,
// $compile_acl_path with the roles pools grant on their members, check,
// check_any, check_perm_modify, exec_api2_perm_check; a
// privilege-separated token keeps only what its user has too, K19), and
// update_acl's rule on the roles a caller without Permissions.Modify may
// hand out (acl.go, src/PVE/API2/ACL.pm). A request's authentication is
// here too (auth.go): a token's Authorization header as pve-http-server's
// PVE/APIServer/AnyEvent.pm and pve-manager's PVE/HTTPServer.pm read it
// and verify_token checks it, the login of PVE/API2/AccessControl.pm
// create_ticket, and RPCEnvironment.pm check_api2_permissions; tickets and
// CSRF tokens are pvesim/ticket's.
//
// It is the first backend out of the one-package simulator (issue 27 §1):
// pvesim's handlers (API2/User.pm, Group.pm, Role.pm, ACL.pm), its locking
// and its persistence call it; it never imports pvesim. user.cfg's pools
// are here too (pools.go: their lines, a path's pools); the checks get a
// path's pools through Env.PoolsOf.
package access

import (
	"crypto/subtle"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
)

// Config is the user.cfg/token.cfg part of a DB.
type Config struct {
	Users  map[string]*User  `json:"users"`
	Tokens map[string]*Token `json:"tokens"` // "user@realm!id"
	ACL    []ACLEntry        `json:"acl"`
	Groups map[string]*Group `json:"groups,omitempty"`
	// Roles are the custom roles of user.cfg (privilege → true); the
	// built-in ones come from the PVE version (privs.go).
	Roles map[string]map[string]bool `json:"roles,omitempty"`
}

// User is a PVE user; root@pam always has every privilege.
type User struct {
	ID string `json:"id"`
	// Password is for realm "pve" users; pam users use the node's password.
	Password string `json:"password,omitempty"`
	// Disabled is user.cfg's enable=0 (enabled is PVE's default).
	Disabled  bool   `json:"disabled,omitempty"`
	Expire    int64  `json:"expire,omitempty"`
	Firstname string `json:"firstname,omitempty"`
	Lastname  string `json:"lastname,omitempty"`
	Email     string `json:"email,omitempty"`
	Comment   string `json:"comment,omitempty"`
	Keys      string `json:"keys,omitempty"`
}

// Token is an API token. With Privsep its privileges are the intersection of
// its own ACL entries and its user's (K19); without, those of its user.
type Token struct {
	ID      string `json:"id"` // user@realm!name
	Secret  string `json:"secret"`
	Privsep bool   `json:"privsep"`
	Expire  int64  `json:"expire,omitempty"`
	Comment string `json:"comment,omitempty"`
}

// ACLEntry grants Role on Path to a user, a group ("@name") or a token
// ("user@realm!id").
type ACLEntry struct {
	Path      string `json:"path"`
	UGID      string `json:"ugid"`
	Role      string `json:"role"`
	Propagate bool   `json:"propagate"`
}

// Group is a user.cfg group; its members are user ids.
type Group struct {
	ID      string   `json:"id"`
	Comment string   `json:"comment,omitempty"`
	Members []string `json:"members,omitempty"`
}

// Auth/Plugin.pm and AccessControl.pm: user@realm, user@realm!token.
var (
	userIDRe  = regexp.MustCompile(`^[^\s:/]+@[A-Za-z][A-Za-z0-9._-]+$`)
	tokenIDRe = regexp.MustCompile(`^([^\s:/]+@[A-Za-z][A-Za-z0-9._-]+)!([A-Za-z][A-Za-z0-9._-]+)$`)
	roleIDRe  = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	groupIDRe = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
)

// ValidUserID tells whether id looks like user@realm.
func ValidUserID(id string) bool { return userIDRe.MatchString(id) }

// SplitTokenID splits user@realm!name into its user and token name; ok is
// false when id is not a valid token id.
func SplitTokenID(id string) (user, name string, ok bool) {
	m := tokenIDRe.FindStringSubmatch(id)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// Clone is a deep copy of the access data.
func (a *Config) Clone() Config {
	out := Config{Users: map[string]*User{}, Tokens: map[string]*Token{}, Groups: map[string]*Group{},
		Roles: map[string]map[string]bool{}, ACL: slices.Clone(a.ACL)}
	for k, u := range a.Users {
		c := *u
		out.Users[k] = &c
	}
	for k, t := range a.Tokens {
		c := *t
		out.Tokens[k] = &c
	}
	for k, g := range a.Groups {
		c := *g
		c.Members = slices.Clone(g.Members)
		out.Groups[k] = &c
	}
	for k, r := range a.Roles {
		c := map[string]bool{}
		for p := range r {
			c[p] = true
		}
		out.Roles[k] = c
	}
	return out
}

// InGroup tells whether user is a member of group g.
func (a *Config) InGroup(g, user string) bool {
	grp := a.Groups[g]
	return grp != nil && slices.Contains(grp.Members, user)
}

// UserGroups lists the groups user is a member of, sorted.
func (a *Config) UserGroups(user string) []string {
	var out []string
	for _, g := range slices.Sorted(maps.Keys(a.Groups)) {
		if a.InGroup(g, user) {
			out = append(out, g)
		}
	}
	return out
}

// SetUserGroups adds user to each group of list; a missing one dies.
func (a *Config) SetUserGroups(user, list string) error {
	for _, g := range pveschema.SplitList(list) {
		grp := a.Groups[g]
		if grp == nil {
			return fmt.Errorf("no such group '%s'", g)
		}
		if !slices.Contains(grp.Members, user) {
			grp.Members = append(grp.Members, user)
		}
	}
	return nil
}

// SetACL adds or replaces the entry of (path, ugid, role): the ACL tree
// keeps one propagate flag per role of a member at a path.
func (a *Config) SetACL(e ACLEntry) {
	for i, x := range a.ACL {
		if NormalizePath(x.Path) == e.Path && x.UGID == e.UGID && x.Role == e.Role {
			a.ACL[i].Propagate = e.Propagate
			return
		}
	}
	a.ACL = append(a.ACL, e)
}

// DeleteACL removes the entry of (path, ugid, role), if any.
func (a *Config) DeleteACL(path, ugid, role string) {
	a.ACL = slices.DeleteFunc(a.ACL, func(x ACLEntry) bool {
		return NormalizePath(x.Path) == path && x.UGID == ugid && x.Role == role
	})
}

// TokenOf is user's token name, with User.pm's messages when the user or
// the token does not exist.
func (a *Config) TokenOf(user, name string) (*Token, error) {
	if a.Users[user] == nil {
		return nil, fmt.Errorf("no such user ('%s')", user)
	}
	t := a.Tokens[user+"!"+name]
	if t == nil {
		return nil, fmt.Errorf("no such token '%s' for user '%s'", name, user)
	}
	return t, nil
}

// StorePassword is domain_set_password: the realm must exist (the lab's
// domains.cfg has pam and pve). Reconstruction: a pam realm runs usermod
// on the node in PVE; the lab keeps it, as if the system user existed.
func StorePassword(u *User, password string) error {
	_, realm, _ := strings.Cut(u.ID, "@")
	if realm != "pam" && realm != "pve" {
		return fmt.Errorf("auth domain '%s' does not exist", realm)
	}
	u.Password = password
	return nil
}

// VerifyToken is AccessControl.pm verify_token: a well-formed token id of
// an enabled, unexpired user, a token that exists and has not expired, and
// its secret; "" when valid, else the 401 reason.
func (a *Config) VerifyToken(id, secret string, now time.Time) string {
	if !tokenIDRe.MatchString(id) {
		return fmt.Sprintf("'%s' is not a valid token ID - not able to split into user and token parts", id)
	}
	user, name, _ := strings.Cut(id, "!")
	if msg := a.CheckUserEnabled(user, now); msg != "" {
		return msg
	}
	tok := a.Tokens[id]
	if tok == nil {
		return fmt.Sprintf("no such token '%s' for user '%s'", name, user)
	}
	if tok.Expire != 0 && tok.Expire < now.Unix() {
		return fmt.Sprintf("token '%s' access expired", name)
	}
	if subtle.ConstantTimeCompare([]byte(tok.Secret), []byte(secret)) != 1 {
		return "invalid token value!"
	}
	return ""
}

// CheckUserEnabled is AccessControl.pm check_user_enabled.
func (a *Config) CheckUserEnabled(user string, now time.Time) string {
	u := a.Users[user]
	switch {
	case u == nil:
		return fmt.Sprintf("no such user ('%s')", user)
	case u.Disabled:
		return fmt.Sprintf("user '%s' is disabled", user)
	case u.Expire != 0 && u.Expire < now.Unix():
		return fmt.Sprintf("user '%s' access expired", user)
	}
	return ""
}
