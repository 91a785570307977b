package accesssim

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/access"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// /access/users and /access/users/{userid}/token: pve-access-control
// API2/User.pm. Every write is lock_user_config: refused without quorum,
// a die inside it prefixed by its message ("create user failed: …"), and
// nothing written when it dies.

// routes are the user, token, group, role and ACL endpoints.
func (s *backend) routes() map[string]core.Handler {
	return map[string]core.Handler{
		"GET /access/permissions":                       s.getPermissions,
		"GET /access/users":                             s.getUsers,
		"POST /access/users":                            s.postUser,
		"GET /access/users/{userid}":                    s.getUser,
		"PUT /access/users/{userid}":                    s.putUser,
		"DELETE /access/users/{userid}":                 s.deleteUser,
		"GET /access/users/{userid}/token":              s.getTokens,
		"GET /access/users/{userid}/token/{tokenid}":    s.getToken,
		"POST /access/users/{userid}/token/{tokenid}":   s.postToken,
		"PUT /access/users/{userid}/token/{tokenid}":    s.putToken,
		"DELETE /access/users/{userid}/token/{tokenid}": s.deleteToken,
		"GET /access/groups":                            s.getGroups,
		"POST /access/groups":                           s.postGroup,
		"GET /access/groups/{groupid}":                  s.getGroup,
		"PUT /access/groups/{groupid}":                  s.putGroup,
		"DELETE /access/groups/{groupid}":               s.deleteGroup,
		"GET /access/roles":                             s.getRoles,
		"POST /access/roles":                            s.postRole,
		"GET /access/roles/{roleid}":                    s.getRole,
		"PUT /access/roles/{roleid}":                    s.putRole,
		"DELETE /access/roles/{roleid}":                 s.deleteRole,
		"GET /access/acl":                               s.getACL,
		"PUT /access/acl":                               s.putACL,
		"PUT /access/password":                          s.putPassword,
	}
}

// lockUserCfg runs change on a copy of db's access data and commits it
// only when change succeeds (a die leaves user.cfg as it was); errors
// carry errmsg as lock_user_config prefixes them.
func (s *backend) lockUserCfg(db *core.ConfigDB, errmsg string, change func(a *access.Config) error) error {
	if aerr := s.CfsWriteLocked(db, "user.cfg", errmsg); aerr != nil {
		return aerr
	}
	a := db.Access.Clone()
	if err := change(&a); err != nil {
		var aerr *core.APIError
		if errors.As(err, &aerr) && aerr.Status == 400 {
			return aerr
		}
		return fmt.Errorf("%s: %w", errmsg, err)
	}
	db.Access = a
	db.Serial++
	s.SaveLocked()
	return nil
}

// userData is User.pm $extract_user_data.
func userData(a *access.Config, u *access.User, full bool) map[string]any {
	e := map[string]any{"enable": pvecommon.BoolNum(!u.Disabled), "expire": u.Expire}
	for k, v := range map[string]string{"firstname": u.Firstname, "lastname": u.Lastname, "email": u.Email,
		"comment": u.Comment, "keys": u.Keys} {
		if v != "" {
			e[k] = v
		}
	}
	if full {
		e["groups"] = append([]string{}, a.UserGroups(u.ID)...)
		tokens := map[string]any{}
		for id, t := range a.Tokens {
			if owner, name, _ := strings.Cut(id, "!"); owner == u.ID {
				tokens[name] = tokenInfo(t)
			}
		}
		e["tokens"] = tokens
	}
	return e
}

func tokenInfo(t *access.Token) map[string]any {
	e := map[string]any{"privsep": pvecommon.BoolNum(t.Privsep), "expire": t.Expire}
	if t.Comment != "" {
		e["comment"] = t.Comment
	}
	return e
}

// GET /access/users: every user for User.Modify or Sys.Audit on
// /access/groups, else the members of groups one has those on, and always
// oneself.
func (s *backend) getUsers(rc *core.Req) (any, error) {
	db := rc.DB()
	privs := []string{"User.Modify", "Sys.Audit"}
	all := core.HasPriv(db, rc.Who, "/access/groups", privs, true)
	allowed := map[string]bool{}
	for g, grp := range db.Access.Groups {
		if core.HasPriv(db, rc.Who, "/access/groups/"+g, privs, true) {
			for _, m := range grp.Members {
				allowed[m] = true
			}
		}
	}
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(db.Access.Users)) {
		u := db.Access.Users[id]
		if !all && id != rc.Who.User && !allowed[id] {
			continue
		}
		if rc.Has("enabled") && rc.Bool("enabled") == u.Disabled {
			continue
		}
		e := userData(&db.Access, u, rc.Bool("full"))
		if g, ok := e["groups"].([]string); ok {
			e["groups"] = strings.Join(g, ",")
		}
		if toks, ok := e["tokens"].(map[string]any); ok {
			list := []map[string]any{}
			for _, name := range slices.Sorted(maps.Keys(toks)) {
				t := toks[name].(map[string]any)
				t["tokenid"] = name
				list = append(list, t)
			}
			e["tokens"] = list
		}
		e["userid"] = id
		if _, realm, _ := strings.Cut(id, "@"); realm == "pam" || realm == "pve" {
			e["realm-type"] = realm
		}
		out = append(out, e)
	}
	return out, nil
}

func (s *backend) getUser(rc *core.Req) (any, error) {
	db := rc.DB()
	u := db.Access.Users[rc.Str("userid")]
	if u == nil {
		return nil, fmt.Errorf("no such user ('%s')", rc.Str("userid"))
	}
	return userData(&db.Access, u, true), nil
}

func (s *backend) postUser(rc *core.Req) (any, error) {
	db := rc.DB()
	id := rc.Str("userid")
	return nil, s.lockUserCfg(db, "create user failed", func(a *access.Config) error {
		if a.Users[id] != nil {
			return fmt.Errorf("user '%s' already exists", id)
		}
		u := &access.User{ID: id}
		if rc.Has("password") {
			if err := access.StorePassword(u, rc.Str("password")); err != nil {
				return err
			}
		}
		u.Disabled = rc.Has("enable") && !rc.Bool("enable")
		u.Expire = int64(rc.Int("expire", 0))
		a.Users[id] = u
		if err := a.SetUserGroups(id, rc.Str("groups")); err != nil {
			return err
		}
		u.Firstname, u.Lastname, u.Email = rc.Str("firstname"), rc.Str("lastname"), rc.Str("email")
		u.Comment, u.Keys = rc.Str("comment"), rc.Str("keys")
		return nil
	})
}

func (s *backend) putUser(rc *core.Req) (any, error) {
	db := rc.DB()
	id := rc.Str("userid")
	return nil, s.lockUserCfg(db, "update user failed", func(a *access.Config) error {
		u := a.Users[id]
		if u == nil {
			return fmt.Errorf("no such user ('%s')", id)
		}
		if rc.Has("enable") {
			u.Disabled = !rc.Bool("enable")
		}
		if rc.Has("expire") {
			u.Expire = int64(rc.Int("expire", 0))
		}
		if rc.Has("groups") && !rc.Bool("append") {
			for _, g := range a.Groups {
				g.Members = slices.DeleteFunc(g.Members, func(m string) bool { return m == id })
			}
		}
		if err := a.SetUserGroups(id, rc.Str("groups")); err != nil {
			return err
		}
		for k, f := range map[string]*string{"firstname": &u.Firstname, "lastname": &u.Lastname, "email": &u.Email,
			"comment": &u.Comment, "keys": &u.Keys} {
			if rc.Has(k) {
				*f = rc.Str(k)
			}
		}
		return nil
	})
}

// DELETE /access/users/{userid}: the user, its tokens, its group
// memberships and its own ACL entries (its tokens' entries go with the
// tokens, as parse_user_config drops entries of a missing token).
func (s *backend) deleteUser(rc *core.Req) (any, error) {
	db := rc.DB()
	id := rc.Str("userid")
	return nil, s.lockUserCfg(db, "delete user failed", func(a *access.Config) error {
		if a.Users[id] == nil {
			// Reconstruction: delete_user does not check; the realm
			// plugin's delete_user of a missing pve user dies like this.
			return fmt.Errorf("no such user ('%s')", id)
		}
		delete(a.Users, id)
		for tid := range a.Tokens {
			if owner, _, _ := strings.Cut(tid, "!"); owner == id {
				delete(a.Tokens, tid)
			}
		}
		for _, g := range a.Groups {
			g.Members = slices.DeleteFunc(g.Members, func(m string) bool { return m == id })
		}
		a.ACL = slices.DeleteFunc(a.ACL, func(e access.ACLEntry) bool {
			owner, _, _ := strings.Cut(e.UGID, "!")
			return e.UGID == id || owner == id
		})
		return nil
	})
}

// PUT /access/password (API2/AccessControl.pm change_password; tokens are
// refused by the schema's allowtoken 0). First
// reauth_user_for_user_modification (RPCEnvironment.pm): the user must
// exist, only root@pam changes root@pam's password, and any other caller
// confirms with its own password (confirmation-password, checked as its
// realm's authenticate_user: Auth/PVE.pm's messages; a pam caller other
// than root, whom the lab keeps no password for, fails as a wrong one).
// Then a caller other than root@pam may not change a pam user's password
// (system users), its own aside. Reconstruction of the 500s: a die of
// authenticate_user reaches the client as its message.
func (s *backend) putPassword(rc *core.Req) (any, error) {
	id, authuser := rc.Str("userid"), rc.Who.User
	db := rc.DB()
	if db.Access.Users[id] == nil {
		return nil, fmt.Errorf("no such user ('%s')", id)
	}
	if authuser != "root@pam" {
		if id == "root@pam" {
			return nil, core.ErrStatus(403, "Permission check failed")
		}
		if !rc.Has("confirmation-password") {
			return nil, core.ErrParams(map[string]string{"confirmation-password": "password is required to modify user"})
		}
		confirm := rc.Str("confirmation-password")
		switch u := db.Access.Users[authuser]; {
		case confirm == "":
			return nil, errors.New("no password")
		case !strings.HasSuffix(authuser, "@pve"):
			return nil, errors.New("invalid credentials") // reconstruction for pam: no shadow here
		case u == nil || u.Password == "":
			return nil, errors.New("no password set")
		case u.Password != confirm:
			return nil, errors.New("invalid credentials")
		}
		if authuser != id && strings.HasSuffix(id, "@pam") {
			return nil, core.ErrStatus(403, "Permission check failed")
		}
	}
	return nil, s.lockUserCfg(db, "change password failed", func(a *access.Config) error {
		u := a.Users[id]
		if u == nil {
			return fmt.Errorf("no such user ('%s')", id)
		}
		return access.StorePassword(u, rc.Str("password"))
	})
}
