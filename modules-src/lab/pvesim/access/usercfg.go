package access

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// user.cfg's access lines as pve-access-control writes and reads them
// (AccessControl.pm write_user_config / parse_user_config), and
// priv/token.cfg (TokenConfig.pm): the simulator writes them from its model
// and reads them back when a program on a node changed them (a hand edit,
// `pveum acl modify` on a real node), so drift is what the API shows next.
// The pool lines between groups and roles, and the whole file's
// rendering, are pools.go's.

// RenderUsers is write_user_config's user and token lines.
func (a *Config) RenderUsers(b *strings.Builder) {
	for _, id := range slices.Sorted(maps.Keys(a.Users)) {
		u := a.Users[id]
		fmt.Fprintf(b, "user:%s:%d:%d:%s:%s:%s:%s:%s:\n", id, pvecommon.BoolNum(!u.Disabled), u.Expire,
			pvecommon.EncodeField(u.Firstname), pvecommon.EncodeField(u.Lastname), u.Email, pvecommon.EncodeField(u.Comment), u.Keys)
		for _, tid := range slices.Sorted(maps.Keys(a.Tokens)) {
			if owner, _, _ := strings.Cut(tid, "!"); owner != id {
				continue
			}
			t := a.Tokens[tid]
			fmt.Fprintf(b, "token:%s:%d:%d:%s:\n", tid, t.Expire, pvecommon.BoolNum(t.Privsep), pvecommon.EncodeField(t.Comment))
		}
	}
}

// RenderGroups is write_user_config's group lines.
func (a *Config) RenderGroups(b *strings.Builder) {
	for _, id := range slices.Sorted(maps.Keys(a.Groups)) {
		g := a.Groups[id]
		members := slices.Sorted(slices.Values(g.Members))
		fmt.Fprintf(b, "group:%s:%s:%s:\n", id, strings.Join(members, ","), pvecommon.EncodeField(g.Comment))
	}
}

// RenderRoles writes the custom roles (special ones never).
func (a *Config) RenderRoles(b *strings.Builder, version int) {
	for _, id := range slices.Sorted(maps.Keys(a.Roles)) {
		if IsSpecialRole(version, id) {
			continue
		}
		fmt.Fprintf(b, "role:%s:%s:\n", id, strings.Join(slices.Sorted(maps.Keys(a.Roles[id])), ","))
	}
}

// ACLPathCmp orders paths as iterate_acl_tree visits them: depth first,
// children sorted by name.
func ACLPathCmp(x, y string) int {
	return slices.Compare(strings.Split(strings.Trim(x, "/"), "/"), strings.Split(strings.Trim(y, "/"), "/"))
}

// RenderACL is write_user_config's acl lines: per path, members
// with the same role list and propagate flag share one line; root@pam's
// own entries are never written (it is always Administrator).
func (a *Config) RenderACL(b *strings.Builder) {
	byPath := map[string][]ACLEntry{}
	for _, e := range a.ACL {
		p := NormalizePath(e.Path)
		byPath[p] = append(byPath[p], e)
	}
	paths := slices.SortedFunc(maps.Keys(byPath), ACLPathCmp)
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
			for _, rl := range slices.Sorted(maps.Keys(lines)) {
				slices.Sort(lines[rl])
				fmt.Fprintf(b, "acl:%d:%s:%s:%s:\n", pvecommon.BoolNum(prop), p, strings.Join(lines[rl], ","), rl)
			}
		}
	}
}

// RenderTokenCfg is priv/token.cfg: one "<tokenid> <secret>" per token.
func (a *Config) RenderTokenCfg() string {
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(a.Tokens)) {
		fmt.Fprintf(&b, "%s %s\n", id, a.Tokens[id].Secret)
	}
	return b.String()
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

// Parse reads the access lines of user.cfg and the secrets of
// token.cfg as parse_user_config does, ignoring (as PVE warns and ignores)
// invalid users, groups, roles, privileges, tokens of missing users and
// ACL entries naming a missing role or token. Passwords stay from old:
// they live in priv/shadow.cfg (pve) or the system (pam), not user.cfg.
func Parse(text, tokenCfg string, version int, old *Config) Config {
	a := Config{Users: map[string]*User{}, Tokens: map[string]*Token{}, Groups: map[string]*Group{}, Roles: map[string]map[string]bool{}}
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
			u := &User{ID: f[1], Disabled: f[2] == "" || f[2] == "0", Expire: exp, Firstname: pvecommon.DecodeField(f[4]),
				Lastname: pvecommon.DecodeField(f[5]), Email: f[6], Comment: pvecommon.DecodeField(f[7]), Keys: f[8]}
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
			for _, p := range pveschema.SplitList(f[2]) {
				if ValidPrivilege(version, p) {
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
		g.Comment = pvecommon.DecodeField(f[3])
		for _, m := range pveschema.SplitList(f[2]) {
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
		a.Tokens[f[1]] = &Token{ID: f[1], Secret: secrets[f[1]], Expire: exp, Privsep: f[3] != "" && f[3] != "0", Comment: pvecommon.DecodeField(f[4])}
	}
	for _, f := range aclLines {
		path := NormalizePath(f[2])
		if path == "" {
			continue
		}
		for _, role := range pveschema.SplitList(f[4]) {
			if a.RolePrivs(version, role) == nil {
				continue
			}
			for _, ug := range pveschema.SplitList(f[3]) {
				if strings.HasPrefix(ug, "!") || (strings.Contains(ug, "!") && a.Tokens[ug] == nil) {
					continue
				}
				a.SetACL(ACLEntry{Path: path, UGID: ug, Role: role, Propagate: f[1] != "" && f[1] != "0"})
			}
		}
	}
	return a
}
