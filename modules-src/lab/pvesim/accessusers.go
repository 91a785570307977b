package pvesim

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// /access/users and /access/users/{userid}/token: pve-access-control
// API2/User.pm. Every write is lock_user_config: refused without quorum,
// a die inside it prefixed by its message ("create user failed: …"), and
// nothing written when it dies.

func (s *Sim) accessHandlers() map[string]handlerFunc {
	return map[string]handlerFunc{
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
func (s *Sim) lockUserCfg(db *ConfigDB, errmsg string, change func(a *Access) error) error {
	if aerr := s.cfsWriteLocked(db, "user.cfg", errmsg); aerr != nil {
		return aerr
	}
	a := db.Access.clone()
	if err := change(&a); err != nil {
		var aerr *APIError
		if errors.As(err, &aerr) && aerr.Status == 400 {
			return aerr
		}
		return fmt.Errorf("%s: %w", errmsg, err)
	}
	db.Access = a
	db.Serial++
	s.saveLocked()
	return nil
}

// clone is a deep copy of the access data.
func (a *Access) clone() Access {
	out := Access{Users: map[string]*User{}, Tokens: map[string]*Token{}, Groups: map[string]*Group{},
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

// userGroups lists the groups user is a member of, sorted.
func (a *Access) userGroups(user string) []string {
	var out []string
	for _, g := range sortedKeys(a.Groups) {
		if a.inGroup(g, user) {
			out = append(out, g)
		}
	}
	return out
}

// userData is User.pm $extract_user_data.
func (a *Access) userData(u *User, full bool) map[string]any {
	e := map[string]any{"enable": boolNum(!u.Disabled), "expire": u.Expire}
	for k, v := range map[string]string{"firstname": u.Firstname, "lastname": u.Lastname, "email": u.Email,
		"comment": u.Comment, "keys": u.Keys} {
		if v != "" {
			e[k] = v
		}
	}
	if full {
		e["groups"] = append([]string{}, a.userGroups(u.ID)...)
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

func tokenInfo(t *Token) map[string]any {
	e := map[string]any{"privsep": boolNum(t.Privsep), "expire": t.Expire}
	if t.Comment != "" {
		e["comment"] = t.Comment
	}
	return e
}

// GET /access/users: every user for User.Modify or Sys.Audit on
// /access/groups, else the members of groups one has those on, and always
// oneself.
func (s *Sim) getUsers(rc *reqCtx) (any, error) {
	db := rc.db()
	privs := []string{"User.Modify", "Sys.Audit"}
	all := hasPriv(db, rc.who, "/access/groups", privs, true)
	allowed := map[string]bool{}
	for g, grp := range db.Access.Groups {
		if hasPriv(db, rc.who, "/access/groups/"+g, privs, true) {
			for _, m := range grp.Members {
				allowed[m] = true
			}
		}
	}
	out := []map[string]any{}
	for _, id := range sortedKeys(db.Access.Users) {
		u := db.Access.Users[id]
		if !all && id != rc.who.User && !allowed[id] {
			continue
		}
		if rc.has("enabled") && rc.boolean("enabled") == u.Disabled {
			continue
		}
		e := db.Access.userData(u, rc.boolean("full"))
		if g, ok := e["groups"].([]string); ok {
			e["groups"] = strings.Join(g, ",")
		}
		if toks, ok := e["tokens"].(map[string]any); ok {
			list := []map[string]any{}
			for _, name := range sortedKeys(toks) {
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

func (s *Sim) getUser(rc *reqCtx) (any, error) {
	db := rc.db()
	u := db.Access.Users[rc.str("userid")]
	if u == nil {
		return nil, fmt.Errorf("no such user ('%s')", rc.str("userid"))
	}
	return db.Access.userData(u, true), nil
}

// setUserGroups adds user to each group of list; a missing one dies.
func (a *Access) setUserGroups(user, list string) error {
	for _, g := range pvecommon.SplitList(list) {
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

// storePassword is domain_set_password: the realm must exist (the lab's
// domains.cfg has pam and pve). Reconstruction: a pam realm runs usermod
// on the node in PVE; the lab keeps it, as if the system user existed.
func storePassword(u *User, password string) error {
	_, realm, _ := strings.Cut(u.ID, "@")
	if realm != "pam" && realm != "pve" {
		return fmt.Errorf("auth domain '%s' does not exist", realm)
	}
	u.Password = password
	return nil
}

func (s *Sim) postUser(rc *reqCtx) (any, error) {
	db := rc.db()
	id := rc.str("userid")
	return nil, s.lockUserCfg(db, "create user failed", func(a *Access) error {
		if a.Users[id] != nil {
			return fmt.Errorf("user '%s' already exists", id)
		}
		u := &User{ID: id}
		if rc.has("password") {
			if err := storePassword(u, rc.str("password")); err != nil {
				return err
			}
		}
		u.Disabled = rc.has("enable") && !rc.boolean("enable")
		u.Expire = int64(rc.integer("expire", 0))
		a.Users[id] = u
		if err := a.setUserGroups(id, rc.str("groups")); err != nil {
			return err
		}
		u.Firstname, u.Lastname, u.Email = rc.str("firstname"), rc.str("lastname"), rc.str("email")
		u.Comment, u.Keys = rc.str("comment"), rc.str("keys")
		return nil
	})
}

func (s *Sim) putUser(rc *reqCtx) (any, error) {
	db := rc.db()
	id := rc.str("userid")
	return nil, s.lockUserCfg(db, "update user failed", func(a *Access) error {
		u := a.Users[id]
		if u == nil {
			return fmt.Errorf("no such user ('%s')", id)
		}
		if rc.has("enable") {
			u.Disabled = !rc.boolean("enable")
		}
		if rc.has("expire") {
			u.Expire = int64(rc.integer("expire", 0))
		}
		if rc.has("groups") && !rc.boolean("append") {
			for _, g := range a.Groups {
				g.Members = slices.DeleteFunc(g.Members, func(m string) bool { return m == id })
			}
		}
		if err := a.setUserGroups(id, rc.str("groups")); err != nil {
			return err
		}
		for k, f := range map[string]*string{"firstname": &u.Firstname, "lastname": &u.Lastname, "email": &u.Email,
			"comment": &u.Comment, "keys": &u.Keys} {
			if rc.has(k) {
				*f = rc.str(k)
			}
		}
		return nil
	})
}

// DELETE /access/users/{userid}: the user, its tokens, its group
// memberships and its own ACL entries (its tokens' entries go with the
// tokens, as parse_user_config drops entries of a missing token).
func (s *Sim) deleteUser(rc *reqCtx) (any, error) {
	db := rc.db()
	id := rc.str("userid")
	return nil, s.lockUserCfg(db, "delete user failed", func(a *Access) error {
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
		a.ACL = slices.DeleteFunc(a.ACL, func(e ACLEntry) bool {
			owner, _, _ := strings.Cut(e.UGID, "!")
			return e.UGID == id || owner == id
		})
		return nil
	})
}

// PUT /access/password (API2/AccessControl.pm change_password; tokens are
// refused by the schema's allowtoken 0). Reconstruction: the
// confirmation-password re-authentication of reauth_user_for_user_modification
// is not modelled.
func (s *Sim) putPassword(rc *reqCtx) (any, error) {
	id := rc.str("userid")
	return nil, s.lockUserCfg(rc.db(), "change password failed", func(a *Access) error {
		u := a.Users[id]
		if u == nil {
			return fmt.Errorf("no such user ('%s')", id)
		}
		return storePassword(u, rc.str("password"))
	})
}
