package accesssim

import (
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/access"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// GET /access/permissions: the caller's (or an owned token's) privileges
// (API2/AccessControl.pm permissions): at path, or get_effective_permissions
// over the top-level paths, every ACL path and every pool member's path,
// leaving out paths without privileges. Values are the propagate flags.
func (s *backend) getPermissions(rc *core.Req) (any, error) {
	db := rc.DB()
	authid := rc.Who.Full()
	userid := authid
	if uid := rc.Str("userid"); uid != "" {
		userid = uid
	}
	user, _, isTok := strings.Cut(userid, "!")
	if userid != authid && !(isTok && user == authid) {
		if err := core.RPCCheck(db, rc.Who, "/access", "Sys.Audit"); err != nil {
			return nil, err
		}
	}
	out := map[string]any{}
	if p := rc.Str("path"); p != "" {
		out[p] = permFlags(core.RPCEnv(db, rc.Who).Permissions(userid, access.NormalizePath(p)))
		return out, nil
	}
	paths := map[string]bool{"/": true, "/access": true, "/access/groups": true, "/nodes": true, "/pool": true,
		"/sdn": true, "/storage": true, "/vms": true}
	for _, e := range db.Access.ACL {
		paths[access.NormalizePath(e.Path)] = true
	}
	for _, p := range db.Pools {
		for _, m := range p.Members {
			typ, id, _ := strings.Cut(m, "/")
			if typ == "storage" {
				paths["/storage/"+id] = true
			} else {
				paths["/vms/"+id] = true
			}
		}
	}
	for p := range paths {
		if perms := core.RPCEnv(db, rc.Who).Permissions(userid, p); len(perms) > 0 {
			out[p] = permFlags(perms)
		}
	}
	return out, nil
}

func permFlags(perms map[string]bool) map[string]any {
	out := map[string]any{}
	for p, prop := range perms {
		out[p] = pvecommon.BoolNum(prop)
	}
	return out
}
