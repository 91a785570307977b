package pvesim

import (
	"regexp"
	"slices"
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

// Group is a user.cfg group; its members are user ids.
type Group struct {
	ID      string   `json:"id"`
	Comment string   `json:"comment,omitempty"`
	Members []string `json:"members,omitempty"`
}

// normalizeACLPath is AccessControl.pm normalize_path: "" when invalid.
func normalizeACLPath(p string) string {
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

// validACLPath is AccessControl.pm check_path (master; the PVE 8 list
// lacks /sdn/fabrics, prefix-lists and route-maps, which no test uses).
var validACLPath = regexp.MustCompile(`^(?:/|/access|/access/groups|/access/groups/[[:alnum:]._-]+|/access/realm|/access/realm/[[:alnum:]._-]+` +
	`|/nodes|/nodes/[[:alnum:]._-]+|/pool|/pool/[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+){0,2}` +
	`|/sdn|/sdn/controllers|/sdn/controllers/[[:alnum:]_-]+|/sdn/dns|/sdn/dns/[[:alnum:]]+|/sdn/fabrics|/sdn/fabrics/[[:alnum:]]+` +
	`|/sdn/ipams|/sdn/ipams/[[:alnum:]]+|/sdn/prefix-lists|/sdn/prefix-lists/[[:alnum:]]+|/sdn/route-maps|/sdn/route-maps/[[:alnum:]]+` +
	`|/sdn/zones|/sdn/zones/[[:alnum:]._-]+|/sdn/zones/[[:alnum:]._-]+/[[:alnum:]._-]+|/sdn/zones/[[:alnum:]._-]+/[[:alnum:]._-]+/[1-9][0-9]{0,3}` +
	`|/storage|/storage/[[:alnum:]._-]+|/vms|/vms/[1-9][0-9]{2,}|/mapping|/mapping/[[:alnum:]._-]+|/mapping/[[:alnum:]._-]+/[[:alnum:]._-]+)$`)

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

// inGroup tells whether user is a member of group g.
func (a *Access) inGroup(g, user string) bool {
	grp := a.Groups[g]
	return grp != nil && slices.Contains(grp.Members, user)
}

// aclRoles is AccessControl.pm roles for a user or token id (not
// root@pam, not a non-privsep token): role → propagate.
func (a *Access) aclRoles(ugid, path string) map[string]bool {
	roles := map[string]bool{}
	levels := aclLevels(path)
	isToken := strings.Contains(ugid, "!")
	for i, lvl := range levels {
		final := i == len(levels)-1
		collect := func(match func(e ACLEntry) bool) map[string]bool {
			var set map[string]bool
			for _, e := range a.ACL {
				if normalizeACLPath(e.Path) != lvl || !match(e) || !(final || e.Propagate) {
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
			return ok && a.inGroup(g, ugid)
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
func (db *ConfigDB) poolRoles(ugid, path string) map[string]bool {
	out := map[string]bool{}
	for _, id := range sortedKeys(db.Pools) {
		member := false
		for _, m := range db.Pools[id].Members {
			typ, mid, _ := strings.Cut(m, "/")
			if (typ == "storage" && path == "/storage/"+mid) || (typ != "storage" && path == "/vms/"+mid) {
				member = true
			}
		}
		if !member {
			continue
		}
		for r := range db.Access.aclRoles(ugid, "/pool/"+id) {
			out[r] = true
		}
	}
	return out
}

// permissions is RPCEnvironment::permissions: every privilege set for
// authid (user or token id) on path → its propagate flag.
func permissions(db *ConfigDB, version int, authid, path string) map[string]bool {
	if authid == "root@pam" {
		out := map[string]bool{}
		for p := range privsOf(version).valid {
			out[p] = true
		}
		return out
	}
	user, _, isToken := strings.Cut(authid, "!")
	var userPrivs map[string]bool
	if isToken {
		tok := db.Access.Tokens[authid]
		if tok == nil || db.Access.Users[user] == nil {
			return map[string]bool{}
		}
		userPrivs = permissions(db, version, user, path)
		if !tok.Privsep {
			return userPrivs
		}
	}
	roles := db.Access.aclRoles(authid, path)
	if _, noAccess := roles["NoAccess"]; !noAccess {
		pool := db.poolRoles(authid, path)
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
		for p := range roleDef(version, &db.Access, r) {
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
