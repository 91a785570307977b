package accesssim

import (
	"fmt"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/access"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
)

// PUT /access/acl: API2/ACL.pm update_acl. One or more roles for users,
// groups and tokens on one path, added (propagate default 1) or removed
// (delete=1, also on a path check_path refuses). Without
// Permissions.Modify on the path, only a role whose every privilege one
// holds there (propagated, when the entry propagates) may be handed out,
// and never NoAccess.
func (s *backend) putACL(rc *core.Req) (any, error) {
	if !rc.Has("users") && !rc.Has("groups") && !rc.Has("tokens") {
		msg := "either 'users', 'groups' or 'tokens' is required."
		return nil, core.ErrParams(map[string]string{"users": msg, "groups": msg, "tokens": msg})
	}
	raw := rc.Str("path")
	path := access.NormalizePath(raw)
	del := rc.Bool("delete")
	if path == "" || (!del && !access.ValidPath(path)) {
		return nil, core.ErrParams(map[string]string{"path": fmt.Sprintf("invalid ACL path '%s'", raw)})
	}
	db := rc.DB()
	propagate := !rc.Has("propagate") || rc.Bool("propagate")
	mine := access.Env{Access: &db.Access, Version: s.Version(), PoolsOf: db.PoolsOf}.Permissions(rc.Who.Full(), path)
	return nil, s.lockUserCfg(db, "ACL update failed", func(a *access.Config) error {
		for _, role := range pveschema.SplitList(rc.Str("roles")) {
			privs := a.RolePrivs(s.Version(), role)
			if privs == nil {
				return fmt.Errorf("role '%s' does not exist", role)
			}
			if err := access.CheckHandOut(mine, role, privs, propagate, del); err != nil {
				return err
			}
			members, err := aclMembers(a, rc)
			if err != nil {
				return err
			}
			for _, m := range members {
				if del {
					a.DeleteACL(path, m, role)
				} else {
					a.SetACL(access.ACLEntry{Path: path, UGID: m, Role: role, Propagate: propagate})
				}
			}
		}
		return nil
	})
}

// aclMembers are the ugids of the request's groups ("@g"), users and
// tokens, each checked as update_acl checks them.
func aclMembers(a *access.Config, rc *core.Req) ([]string, error) {
	var out []string
	for _, g := range pveschema.SplitList(rc.Str("groups")) {
		if a.Groups[g] == nil {
			return nil, fmt.Errorf("group '%s' does not exist", g)
		}
		out = append(out, "@"+g)
	}
	for _, u := range pveschema.SplitList(rc.Str("users")) {
		if !access.ValidUserID(u) {
			return nil, fmt.Errorf("value '%s' does not look like a valid user name", u)
		}
		if a.Users[u] == nil {
			return nil, fmt.Errorf("user '%s' does not exist", u)
		}
		out = append(out, u)
	}
	for _, t := range pveschema.SplitList(rc.Str("tokens")) {
		user, name, ok := access.SplitTokenID(t)
		if !ok {
			return nil, fmt.Errorf("'%s' is not a valid token ID - not able to split into user and token parts", t)
		}
		if a.Users[user] == nil {
			return nil, fmt.Errorf("no such user ('%s')", user)
		}
		if a.Tokens[t] == nil {
			return nil, fmt.Errorf("no such token '%s' for user '%s'", name, user)
		}
		out = append(out, t)
	}
	return out, nil
}
