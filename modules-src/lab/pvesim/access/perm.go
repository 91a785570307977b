package access

import (
	"maps"
	"regexp"
	"strings"
)

// Permission evaluation as pve-access-control does it:
// PVE::AccessControl::roles (the ACL tree walked from "/" to the path; at
// each level a token's own entries, else the user's, else those of the
// user's groups replace what the levels above gave; entries apply below
// their path only when they propagate; NoAccess wins) and
// PVE::RPCEnvironment's $compile_acl_path (roles a pool grants on its
// member guests and storages, never propagated, never over NoAccess; a
// privilege-separated token keeps only the privileges its user has too) and
// permissions (root@pam has every privilege; a token without privsep has
// its user's).

// Env is what RPCEnvironment's checks read: the access data, the lab's PVE
// version (its built-in roles and valid privileges) and pool membership.
type Env struct {
	Access  *Config
	Version int
	// PoolsOf lists the pools whose members include path (a guest
	// "/vms/N" or a storage "/storage/ID"); nil when there are no pools.
	PoolsOf func(path string) []string
}

// NormalizePath is AccessControl.pm normalize_path: "" when invalid.
func NormalizePath(p string) string {
	if p == "" {
		return ""
	}
	p = regexp.MustCompile(`/+`).ReplaceAllString(p, "/")
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		p = "/"
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if !aclPathChars.MatchString(p) {
		return ""
	}
	return p
}

var aclPathChars = regexp.MustCompile(`^[[:alnum:]._/-]+$`)

// validPath is AccessControl.pm check_path (master; the PVE 8 list
// lacks /sdn/fabrics, prefix-lists and route-maps, which no test uses).
var validPath = regexp.MustCompile(`^(?:/|/access|/access/groups|/access/groups/[[:alnum:]._-]+|/access/realm|/access/realm/[[:alnum:]._-]+` +
	`|/nodes|/nodes/[[:alnum:]._-]+|/pool|/pool/[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+){0,2}` +
	`|/sdn|/sdn/controllers|/sdn/controllers/[[:alnum:]_-]+|/sdn/dns|/sdn/dns/[[:alnum:]]+|/sdn/fabrics|/sdn/fabrics/[[:alnum:]]+` +
	`|/sdn/ipams|/sdn/ipams/[[:alnum:]]+|/sdn/prefix-lists|/sdn/prefix-lists/[[:alnum:]]+|/sdn/route-maps|/sdn/route-maps/[[:alnum:]]+` +
	`|/sdn/zones|/sdn/zones/[[:alnum:]._-]+|/sdn/zones/[[:alnum:]._-]+/[[:alnum:]._-]+|/sdn/zones/[[:alnum:]._-]+/[[:alnum:]._-]+/[1-9][0-9]{0,3}` +
	`|/storage|/storage/[[:alnum:]._-]+|/vms|/vms/[1-9][0-9]{2,}|/mapping|/mapping/[[:alnum:]._-]+|/mapping/[[:alnum:]._-]+/[[:alnum:]._-]+)$`)

// ValidPath is check_path: whether an ACL may be set on the (normalized) path.
func ValidPath(path string) bool { return validPath.MatchString(path) }

// aclLevels are the paths roles() visits for path: "/", "/a", "/a/b".
func aclLevels(path string) []string {
	levels := []string{"/"}
	cur := ""
	for _, seg := range strings.Split(strings.Trim(path, "/"), "/") {
		if seg == "" {
			continue
		}
		cur += "/" + seg
		levels = append(levels, cur)
	}
	return levels
}

// aclRoles is AccessControl.pm roles for a user or token id (not
// root@pam, not a non-privsep token): role → propagate.
func (a *Config) aclRoles(ugid, path string) map[string]bool {
	roles := map[string]bool{}
	levels := aclLevels(path)
	isToken := strings.Contains(ugid, "!")
	for i, lvl := range levels {
		final := i == len(levels)-1
		collect := func(match func(e ACLEntry) bool) map[string]bool {
			var set map[string]bool
			for _, e := range a.ACL {
				if NormalizePath(e.Path) != lvl || !match(e) || !(final || e.Propagate) {
					continue
				}
				if set == nil {
					set = map[string]bool{}
				}
				set[e.Role] = set[e.Role] || e.Propagate
			}
			return set
		}
		if isToken {
			if set := collect(func(e ACLEntry) bool { return e.UGID == ugid }); set != nil {
				roles = set
			}
			continue
		}
		if set := collect(func(e ACLEntry) bool { return e.UGID == ugid }); set != nil {
			roles = set // user entries always override group entries
			continue
		}
		set := collect(func(e ACLEntry) bool {
			g, ok := strings.CutPrefix(e.UGID, "@")
			return ok && a.InGroup(g, ugid)
		})
		if set != nil {
			roles = set
		}
	}
	if p, ok := roles["NoAccess"]; ok {
		return map[string]bool{"NoAccess": p}
	}
	return roles
}

// poolRoles are the roles ugid's pool ACLs give on path (a member guest
// "/vms/N" or storage "/storage/ID"), as $compile_acl_path collects them.
func (e Env) poolRoles(ugid, path string) map[string]bool {
	out := map[string]bool{}
	if e.PoolsOf == nil {
		return out
	}
	for _, id := range e.PoolsOf(path) {
		for r := range e.Access.aclRoles(ugid, "/pool/"+id) {
			out[r] = true
		}
	}
	return out
}

// Permissions is RPCEnvironment::permissions: every privilege set for
// authid (user or token id) on path (normalized) → its propagate flag.
func (e Env) Permissions(authid, path string) map[string]bool {
	if authid == "root@pam" {
		return maps.Clone(privsOf(e.Version).valid)
	}
	user, _, isToken := strings.Cut(authid, "!")
	var userPrivs map[string]bool
	if isToken {
		tok := e.Access.Tokens[authid]
		if tok == nil || e.Access.Users[user] == nil {
			return map[string]bool{}
		}
		userPrivs = e.Permissions(user, path)
		if !tok.Privsep {
			return userPrivs
		}
	}
	roles := e.Access.aclRoles(authid, path)
	if _, noAccess := roles["NoAccess"]; !noAccess {
		pool := e.poolRoles(authid, path)
		if _, ok := pool["NoAccess"]; ok {
			roles = map[string]bool{"NoAccess": false}
		} else {
			for r := range pool {
				if _, set := roles[r]; !set {
					roles[r] = false
				}
			}
		}
	}
	privs := map[string]bool{}
	for r, prop := range roles {
		for p := range e.Access.RolePrivs(e.Version, r) {
			privs[p] = privs[p] || prop
		}
	}
	if isToken && user != "root@pam" {
		for p, prop := range privs {
			up, ok := userPrivs[p]
			if !ok {
				delete(privs, p)
				continue
			}
			privs[p] = prop && up
		}
	}
	return privs
}

// Privileges returns the privileges authid has on path (a set), as
// RPCEnvironment::permissions computes them (K19: a privilege-separated
// token only gets what both it and its user have).
func (e Env) Privileges(authid, path string) map[string]bool {
	return e.Permissions(authid, NormalizePath(path))
}

// HasPriv tells whether authid has every privilege of privs on path, or,
// with any, one of them. A privilege counts when it is set at all, as
// RPCEnvironment's check and check_any test it (defined, not true): the
// flag Permissions maps it to is whether it propagates, which is
// informational there — an ACL entry on the path itself with propagate=0,
// or a role a pool hands its members, grants the privilege on that path.
func (e Env) HasPriv(authid, path string, privs []string, any bool) bool {
	have := e.Privileges(authid, path)
	for _, p := range privs {
		_, set := have[p]
		if set && any {
			return true
		}
		if !set && !any {
			return false
		}
	}
	return !any
}
