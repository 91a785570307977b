package accesssim

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/access"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// Groups (API2/Group.pm), roles (API2/Role.pm) and ACL entries
// (API2/ACL.pm).

func (s *backend) getGroups(rc *core.Req) (any, error) {
	db := rc.DB()
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(db.Access.Groups)) {
		if !core.HasPriv(db, rc.Who, "/access/groups/"+id, []string{"User.Modify", "Sys.Audit", "Group.Allocate"}, true) {
			continue
		}
		g := db.Access.Groups[id]
		e := map[string]any{"groupid": id, "users": strings.Join(slices.Sorted(slices.Values(g.Members)), ",")}
		if g.Comment != "" {
			e["comment"] = g.Comment
		}
		out = append(out, e)
	}
	return out, nil
}

func (s *backend) getGroup(rc *core.Req) (any, error) {
	g := rc.DB().Access.Groups[rc.Str("groupid")]
	if g == nil {
		return nil, fmt.Errorf("group '%s' does not exist", rc.Str("groupid"))
	}
	e := map[string]any{"members": append([]string{}, g.Members...)}
	if g.Comment != "" {
		e["comment"] = g.Comment
	}
	return e, nil
}

func (s *backend) postGroup(rc *core.Req) (any, error) {
	id := rc.Str("groupid")
	return nil, s.lockUserCfg(rc.DB(), "create group failed", func(a *access.Config) error {
		if a.Groups[id] != nil {
			return fmt.Errorf("group '%s' already exists", id)
		}
		a.Groups[id] = &access.Group{ID: id, Comment: rc.Str("comment")}
		return nil
	})
}

func (s *backend) putGroup(rc *core.Req) (any, error) {
	id := rc.Str("groupid")
	return nil, s.lockUserCfg(rc.DB(), "update group failed", func(a *access.Config) error {
		g := a.Groups[id]
		if g == nil {
			return fmt.Errorf("group '%s' does not exist", id)
		}
		if rc.Has("comment") {
			g.Comment = rc.Str("comment")
		}
		return nil
	})
}

func (s *backend) deleteGroup(rc *core.Req) (any, error) {
	id := rc.Str("groupid")
	return nil, s.lockUserCfg(rc.DB(), "delete group failed", func(a *access.Config) error {
		if a.Groups[id] == nil {
			return fmt.Errorf("group '%s' does not exist", id)
		}
		delete(a.Groups, id)
		a.ACL = slices.DeleteFunc(a.ACL, func(e access.ACLEntry) bool { return e.UGID == "@"+id })
		return nil
	})
}

// GET /access/roles: the version's special roles and the custom ones.
func (s *backend) getRoles(rc *core.Req) (any, error) {
	a := &rc.DB().Access
	ids := append(slices.Sorted(maps.Keys(access.SpecialRoles(s.Version()))), slices.Sorted(maps.Keys(a.Roles))...)
	sort.Strings(ids)
	out := []map[string]any{}
	for _, id := range slices.Compact(ids) {
		special := access.IsSpecialRole(s.Version(), id)
		out = append(out, map[string]any{"roleid": id, "privs": strings.Join(slices.Sorted(maps.Keys(a.RolePrivs(s.Version(), id))), ","),
			"special": pvecommon.BoolNum(special)})
	}
	return out, nil
}

func (s *backend) getRole(rc *core.Req) (any, error) {
	id := rc.Str("roleid")
	privs := rc.DB().Access.RolePrivs(s.Version(), id)
	if privs == nil {
		return nil, fmt.Errorf("role '%s' does not exist", id)
	}
	out := map[string]any{}
	for p := range privs {
		out[p] = 1
	}
	return out, nil
}

var pveNamespace = regexp.MustCompile(`(?i)^PVE`)

// addRolePrivs is add_role_privs: every privilege must be valid for the
// version.
func (s *backend) addRolePrivs(a *access.Config, role, list string) error {
	for _, p := range pveschema.SplitList(list) {
		if !access.ValidPrivilege(s.Version(), p) {
			return fmt.Errorf("invalid privilege '%s'", p)
		}
		a.Roles[role][p] = true
	}
	return nil
}

func (s *backend) postRole(rc *core.Req) (any, error) {
	id := rc.Str("roleid")
	if pveNamespace.MatchString(id) {
		return nil, core.ErrParams(map[string]string{"roleid": "cannot use role ID starting with the (case-insensitive) 'PVE' namespace"})
	}
	return nil, s.lockUserCfg(rc.DB(), "create role failed", func(a *access.Config) error {
		if a.RolePrivs(s.Version(), id) != nil {
			return fmt.Errorf("role '%s' already exists", id)
		}
		a.Roles[id] = map[string]bool{}
		return s.addRolePrivs(a, id, rc.Str("privs"))
	})
}

func (s *backend) putRole(rc *core.Req) (any, error) {
	id := rc.Str("roleid")
	if access.IsSpecialRole(s.Version(), id) {
		return nil, fmt.Errorf("auto-generated role '%s' cannot be modified", id)
	}
	return nil, s.lockUserCfg(rc.DB(), "update role failed", func(a *access.Config) error {
		if a.Roles[id] == nil {
			return fmt.Errorf("role '%s' does not exist", id)
		}
		if !rc.Bool("append") {
			a.Roles[id] = map[string]bool{}
		}
		return s.addRolePrivs(a, id, rc.Str("privs"))
	})
}

// DELETE: the role goes; ACL entries naming it are dropped, as the next
// parse_user_config does ("ignore invalid acl role").
func (s *backend) deleteRole(rc *core.Req) (any, error) {
	id := rc.Str("roleid")
	if access.IsSpecialRole(s.Version(), id) {
		return nil, fmt.Errorf("auto-generated role '%s' cannot be deleted", id)
	}
	return nil, s.lockUserCfg(rc.DB(), "delete role failed", func(a *access.Config) error {
		if a.Roles[id] == nil {
			return fmt.Errorf("role '%s' does not exist", id)
		}
		delete(a.Roles, id)
		a.ACL = slices.DeleteFunc(a.ACL, func(e access.ACLEntry) bool { return e.Role == id })
		return nil
	})
}

// GET /access/acl: the entries of paths one may modify permissions on
// (or all, with Sys.Audit on /access).
func (s *backend) getACL(rc *core.Req) (any, error) {
	db := rc.DB()
	audit := core.HasPriv(db, rc.Who, "/access", []string{"Sys.Audit"}, false)
	out := []map[string]any{}
	entries := slices.Clone(db.Access.ACL)
	slices.SortStableFunc(entries, func(x, y access.ACLEntry) int { return access.ACLPathCmp(x.Path, y.Path) })
	for _, e := range entries {
		if !audit {
			if ok, _ := core.RPCEnv(db, rc.Who).CheckPermModify(rc.Who.Full(), access.NormalizePath(e.Path)); !ok {
				continue
			}
		}
		typ, ugid := "user", e.UGID
		if g, ok := strings.CutPrefix(e.UGID, "@"); ok {
			typ, ugid = "group", g
		} else if strings.Contains(e.UGID, "!") {
			typ = "token"
		}
		out = append(out, map[string]any{"path": access.NormalizePath(e.Path), "type": typ, "ugid": ugid,
			"roleid": e.Role, "propagate": pvecommon.BoolNum(e.Propagate)})
	}
	return out, nil
}
