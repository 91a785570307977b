package pvesim

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// user.cfg's access lines as pve-access-control writes and reads them
// (AccessControl.pm write_user_config / parse_user_config), and
// priv/token.cfg (TokenConfig.pm): the simulator writes them from its model
// and reads them back when a program on a node changed them (a hand edit,
// `pveum acl modify` on a real node), so drift is what the API shows next.

// renderAccessUsers is write_user_config's user and token lines.
func renderAccessUsers(b *strings.Builder, a *Access) {
	for _, id := range sortedKeys(a.Users) {
		u := a.Users[id]
		fmt.Fprintf(b, "user:%s:%d:%d:%s:%s:%s:%s:%s:\n", id, boolNum(!u.Disabled), u.Expire,
			pvecommon.EncodeText(u.Firstname), pvecommon.EncodeText(u.Lastname), u.Email, pvecommon.EncodeText(u.Comment), u.Keys)
		for _, tid := range sortedKeys(a.Tokens) {
			if owner, _, _ := strings.Cut(tid, "!"); owner != id {
				continue
			}
			t := a.Tokens[tid]
			fmt.Fprintf(b, "token:%s:%d:%d:%s:\n", tid, t.Expire, boolNum(t.Privsep), pvecommon.EncodeText(t.Comment))
		}
	}
}

func renderAccessGroups(b *strings.Builder, a *Access) {
	for _, id := range sortedKeys(a.Groups) {
		g := a.Groups[id]
		members := slices.Sorted(slices.Values(g.Members))
		fmt.Fprintf(b, "group:%s:%s:%s:\n", id, strings.Join(members, ","), pvecommon.EncodeText(g.Comment))
	}
}

// renderAccessRoles writes the custom roles (special ones never).
func renderAccessRoles(b *strings.Builder, a *Access, version int) {
	for _, id := range sortedKeys(a.Roles) {
		if _, special := privsOf(version).special[id]; special {
			continue
		}
		fmt.Fprintf(b, "role:%s:%s:\n", id, strings.Join(sortedKeys(a.Roles[id]), ","))
	}
}

// aclPathLess orders paths as iterate_acl_tree visits them: depth first,
// children sorted by name.
func aclPathCmp(x, y string) int {
	return slices.Compare(strings.Split(strings.Trim(x, "/"), "/"), strings.Split(strings.Trim(y, "/"), "/"))
}

// renderAccessACL is write_user_config's acl lines: per path, members
// with the same role list and propagate flag share one line; root@pam's
// own entries are never written (it is always Administrator).
func renderAccessACL(b *strings.Builder, a *Access) {
	byPath := map[string][]ACLEntry{}
	for _, e := range a.ACL {
		p := normalizeACLPath(e.Path)
		byPath[p] = append(byPath[p], e)
	}
	paths := slices.SortedFunc(func(yield func(string) bool) {
		for p := range byPath {
			if !yield(p) {
				return
			}
		}
	}, aclPathCmp)
	for _, p := range paths {
		// member → propagate → roles
		roles := map[string]map[bool][]string{}
		for _, e := range byPath[p] {
			if e.UGID == "root@pam" {
				continue
			}
			if roles[e.UGID] == nil {
				roles[e.UGID] = map[bool][]string{}
			}
			roles[e.UGID][e.Propagate] = append(roles[e.UGID][e.Propagate], e.Role)
		}
		for _, prop := range []bool{false, true} {
			lines := map[string][]string{} // role list → members
			for m, byProp := range roles {
				if rs := byProp[prop]; len(rs) > 0 {
					slices.Sort(rs)
					key := strings.Join(slices.Compact(rs), ",")
					lines[key] = append(lines[key], m)
				}
			}
			for _, rl := range sortedKeys(lines) {
				slices.Sort(lines[rl])
				fmt.Fprintf(b, "acl:%d:%s:%s:%s:\n", boolNum(prop), p, strings.Join(lines[rl], ","), rl)
			}
		}
	}
}

// cfgFields splits a user.cfg line as parse_user_config does (":"
// separated, each field trimmed).
func cfgFields(line string, n int) []string {
	f := strings.Split(line, ":")
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	for len(f) < n {
		f = append(f, "")
	}
	return f
}

// parseAccess reads the access lines of user.cfg and the secrets of
// token.cfg as parse_user_config does, ignoring (as PVE warns and ignores)
// invalid users, groups, roles, privileges, tokens of missing users and
// ACL entries naming a missing role or token. Passwords stay from old:
// they live in priv/shadow.cfg (pve) or the system (pam), not user.cfg.
func parseAccess(text, tokenCfg string, version int, old *Access) Access {
	a := Access{Users: map[string]*User{}, Tokens: map[string]*Token{}, Groups: map[string]*Group{}, Roles: map[string]map[string]bool{}}
	secrets := map[string]string{}
	for _, line := range strings.Split(tokenCfg, "\n") {
		if id, sec, ok := strings.Cut(strings.TrimSpace(line), " "); ok && tokenIDRe.MatchString(id) {
			secrets[id] = sec
		}
	}
	var aclLines, groupLines, tokenLines [][]string
	for _, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		kind, _, _ := strings.Cut(line, ":")
		switch kind {
		case "user":
			f := cfgFields(line, 9)
			exp, err := strconv.ParseInt(cmp.Or(f[3], "0"), 10, 64)
			if !userIDRe.MatchString(f[1]) || err != nil {
				continue
			}
			u := &User{ID: f[1], Disabled: f[2] == "" || f[2] == "0", Expire: exp, Firstname: pvecommon.DecodeText(f[4]),
				Lastname: pvecommon.DecodeText(f[5]), Email: f[6], Comment: pvecommon.DecodeText(f[7]), Keys: f[8]}
			if o := old.Users[u.ID]; o != nil {
				u.Password = o.Password
			}
			a.Users[u.ID] = u
		case "group":
			groupLines = append(groupLines, cfgFields(line, 4))
		case "role":
			f := cfgFields(line, 3)
			if !roleIDRe.MatchString(f[1]) {
				continue
			}
			privs := map[string]bool{}
			for _, p := range pvecommon.SplitList(f[2]) {
				if privsOf(version).valid[p] {
					privs[p] = true
				}
			}
			a.Roles[f[1]] = privs
		case "token":
			tokenLines = append(tokenLines, cfgFields(line, 5))
		case "acl":
			aclLines = append(aclLines, cfgFields(line, 5))
		}
	}
	for _, f := range groupLines {
		if !groupIDRe.MatchString(f[1]) {
			continue
		}
		g := a.Groups[f[1]]
		if g == nil {
			g = &Group{ID: f[1]}
			a.Groups[f[1]] = g
		}
		g.Comment = pvecommon.DecodeText(f[3])
		for _, m := range pvecommon.SplitList(f[2]) {
			if userIDRe.MatchString(m) && !slices.Contains(g.Members, m) {
				g.Members = append(g.Members, m)
			}
		}
	}
	for _, f := range tokenLines {
		m := tokenIDRe.FindStringSubmatch(f[1])
		exp, err := strconv.ParseInt(cmp.Or(f[2], "0"), 10, 64)
		if m == nil || err != nil || a.Users[m[1]] == nil {
			continue
		}
		a.Tokens[f[1]] = &Token{ID: f[1], Secret: secrets[f[1]], Expire: exp, Privsep: f[3] != "" && f[3] != "0", Comment: pvecommon.DecodeText(f[4])}
	}
	for _, f := range aclLines {
		path := normalizeACLPath(f[2])
		if path == "" {
			continue
		}
		for _, role := range pvecommon.SplitList(f[4]) {
			if roleDef(version, &a, role) == nil {
				continue
			}
			for _, ug := range pvecommon.SplitList(f[3]) {
				if strings.HasPrefix(ug, "!") || (strings.Contains(ug, "!") && a.Tokens[ug] == nil) {
					continue
				}
				a.setACL(ACLEntry{Path: path, UGID: ug, Role: role, Propagate: f[1] != "" && f[1] != "0"})
			}
		}
	}
	return a
}

// setACL adds or replaces the entry of (path, ugid, role): the ACL tree
// keeps one propagate flag per role of a member at a path.
func (a *Access) setACL(e ACLEntry) {
	for i, x := range a.ACL {
		if normalizeACLPath(x.Path) == e.Path && x.UGID == e.UGID && x.Role == e.Role {
			a.ACL[i].Propagate = e.Propagate
			return
		}
	}
	a.ACL = append(a.ACL, e)
}

// deleteACL removes the entry of (path, ugid, role), if any.
func (a *Access) deleteACL(path, ugid, role string) {
	a.ACL = slices.DeleteFunc(a.ACL, func(x ACLEntry) bool {
		return normalizeACLPath(x.Path) == path && x.UGID == ugid && x.Role == role
	})
}

var (
	roleIDRe  = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	groupIDRe = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
)

// readUserCfgLocked takes user.cfg (pools and access) and priv/token.cfg
// from db's directory when either differs from what the simulator last
// wrote.
func (s *Sim) readUserCfgLocked(db *ConfigDB, dir string) {
	ub, uerr := os.ReadFile(filepath.Join(dir, "user.cfg"))
	tb, _ := os.ReadFile(filepath.Join(dir, "priv", "token.cfg"))
	uk, tk := fileKey(db.ID, "user.cfg"), fileKey(db.ID, "priv/token.cfg")
	uw, uok := s.written[uk]
	tw, tok := s.written[tk]
	if uerr != nil || (uok && bytes.Equal(uw, ub) && tok && bytes.Equal(tw, tb)) {
		return
	}
	db.Pools = parsePools(string(ub), db.Pools)
	db.Access = parseAccess(string(ub), string(tb), s.cfg.Version, &db.Access)
	s.written[uk], s.written[tk] = ub, tb
	db.Serial++
}
