package pvesim

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// The schema's permission descriptions, evaluated as
// PVE::RPCEnvironment::exec_api2_perm_check does: perm (with any and
// require_param), and, or, userid-param (self, Realm.AllocateUser),
// userid-group (groups_param create/update) and perm-modify.

// permNoDetail is raise_perm_exc() without an argument: the 403 says only
// "Permission check failed".
const permNoDetail = "\x00"

// Auth/Plugin.pm and AccessControl.pm: user@realm, user@realm!token.
var (
	userIDRe  = regexp.MustCompile(`^[^\s:/]+@[A-Za-z][A-Za-z0-9._-]+$`)
	tokenIDRe = regexp.MustCompile(`^([^\s:/]+@[A-Za-z][A-Za-z0-9._-]+)!([A-Za-z][A-Za-z0-9._-]+)$`)
)

func evalCheck(db *ConfigDB, who *principal, check []any, params map[string]any) (bool, string) {
	if len(check) == 0 {
		return true, ""
	}
	op, _ := check[0].(string)
	switch op {
	case "perm":
		return evalPerm(db, who, check, params)
	case "or":
		for _, sub := range check[1:] {
			if l, ok := sub.([]any); ok {
				if ok2, _ := evalCheck(db, who, l, params); ok2 {
					return true, ""
				}
			}
		}
		return false, permNoDetail
	case "and":
		for _, sub := range check[1:] {
			if l, ok := sub.([]any); ok {
				if ok2, d := evalCheck(db, who, l, params); !ok2 {
					return false, d
				}
			}
		}
		return true, ""
	case "userid-param":
		return evalUseridParam(db, who, check, params)
	case "userid-group":
		return evalUseridGroup(db, who, check, params)
	case "perm-modify":
		tmpl, _ := check[1].(string)
		path := normalizeACLPath(templateReplace(tmpl, params))
		if path == "" {
			return false, permNoDetail // API2::ACL refuses the path itself
		}
		return checkPermModify(db, who, path)
	}
	return true, ""
}

func templateReplace(tmpl string, params map[string]any) string {
	for k, v := range params {
		tmpl = strings.ReplaceAll(tmpl, "{"+k+"}", pvecommon.ParamString(v))
	}
	return tmpl
}

func stringList(v any) []string {
	var out []string
	if list, ok := v.([]any); ok {
		for _, x := range list {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func evalPerm(db *ConfigDB, who *principal, check []any, params map[string]any) (bool, string) {
	if len(check) < 3 {
		return true, ""
	}
	tmpl, _ := check[1].(string)
	p := normalizeACLPath(templateReplace(tmpl, params))
	privs := stringList(check[2])
	anyOf := false
	for i := 3; i+1 < len(check); i += 2 {
		switch k, _ := check[i].(string); k {
		case "any":
			anyOf = true
		case "require_param":
			if name, _ := check[i+1].(string); params[name] == nil {
				return false, permNoDetail
			}
		}
	}
	return checkFull(db, who, p, privs, anyOf)
}

// rpcCheck is RPCEnvironment's check($user, $path, [$priv]) without noerr:
// PVE's 403 naming path and privilege, or nil.
func rpcCheck(db *ConfigDB, who *principal, path, priv string) error {
	if ok, d := checkFull(db, who, path, []string{priv}, false); !ok {
		return errPerm(d)
	}
	return nil
}

// checkFull is check (every privilege; the detail names the first one
// missing) or check_any (one of them; the detail names all, "|"-joined).
func checkFull(db *ConfigDB, who *principal, path string, privs []string, anyOf bool) (bool, string) {
	if hasPriv(db, who, path, privs, anyOf) {
		return true, ""
	}
	if anyOf {
		return false, fmt.Sprintf("%s, %s", path, strings.Join(privs, "|"))
	}
	have := privileges(db, who, path)
	for _, priv := range privs {
		if !have[priv] {
			return false, fmt.Sprintf("%s, %s", path, priv)
		}
	}
	return false, path
}

// checkPermModify is check_perm_modify.
func checkPermModify(db *ConfigDB, who *principal, path string) (bool, string) {
	privs := []string{"Permissions.Modify"}
	switch {
	case strings.HasPrefix(path, "/storage/"):
		privs = append(privs, "Datastore.Allocate")
	case strings.HasPrefix(path, "/vms/"):
		privs = append(privs, "VM.Allocate")
	case strings.HasPrefix(path, "/pool/"):
		privs = append(privs, "Pool.Allocate")
	}
	return checkFull(db, who, path, privs, true)
}

func evalUseridParam(db *ConfigDB, who *principal, check []any, params map[string]any) (bool, string) {
	userid := pvecommon.ParamString(params["userid"])
	sub, _ := check[1].(string)
	switch sub {
	case "self":
		if db.Access.Users[userid] == nil {
			return false, permNoDetail
		}
		return who.full() == userid, permNoDetail
	case "Realm.AllocateUser":
		_, realm, _ := strings.Cut(userid, "@")
		return checkFull(db, who, "/access/realm/"+realm, []string{"Realm.AllocateUser"}, false)
	}
	return true, ""
}

// evalUseridGroup: any of privs on /access/groups (all users), else on
// every group named in groups (create/update) and on a group the existing
// user is a member of.
func evalUseridGroup(db *ConfigDB, who *principal, check []any, params map[string]any) (bool, string) {
	privs := stringList(check[1])
	groupsParam := ""
	for i := 2; i+1 < len(check); i += 2 {
		if k, _ := check[i].(string); k == "groups_param" {
			groupsParam, _ = check[i+1].(string)
		}
	}
	userid := pvecommon.ParamString(params["userid"])
	checkExisting := groupsParam != "create"
	if checkExisting && db.Access.Users[userid] == nil {
		return false, fmt.Sprintf("no such user ('%s')", userid)
	}
	if hasPriv(db, who, "/access/groups", privs, true) {
		return true, ""
	}
	allowed := map[string]bool{}
	for g := range db.Access.Groups {
		if hasPriv(db, who, "/access/groups/"+g, privs, true) {
			allowed[g] = true
		}
	}
	joined := strings.Join(privs, "|")
	if groupsParam != "" {
		named := pvecommon.SplitList(pvecommon.ParamString(params["groups"]))
		if len(named) == 0 {
			return false, "/access/groups, " + joined
		}
		for _, g := range named {
			if !allowed[g] {
				return false, fmt.Sprintf("/access/groups/%s, %s", g, joined)
			}
		}
	}
	if checkExisting {
		for g := range allowed {
			if db.Access.inGroup(g, userid) {
				return true, ""
			}
		}
		return false, permNoDetail
	}
	return true, ""
}

// GET /access/permissions: the caller's (or an owned token's) privileges
// (API2/AccessControl.pm permissions): at path, or get_effective_permissions
// over the top-level paths, every ACL path and every pool member's path,
// leaving out paths without privileges. Values are the propagate flags.
func (s *Sim) getPermissions(rc *reqCtx) (any, error) {
	db := rc.db()
	authid := rc.who.full()
	userid := authid
	if uid := rc.str("userid"); uid != "" {
		userid = uid
	}
	user, _, isTok := strings.Cut(userid, "!")
	if userid != authid && !(isTok && user == authid) {
		if err := rpcCheck(db, rc.who, "/access", "Sys.Audit"); err != nil {
			return nil, err
		}
	}
	out := map[string]any{}
	if p := rc.str("path"); p != "" {
		out[p] = permFlags(permissions(db, rc.who.ver, userid, normalizeACLPath(p)))
		return out, nil
	}
	paths := map[string]bool{"/": true, "/access": true, "/access/groups": true, "/nodes": true, "/pool": true,
		"/sdn": true, "/storage": true, "/vms": true}
	for _, e := range db.Access.ACL {
		paths[normalizeACLPath(e.Path)] = true
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
		if perms := permissions(db, rc.who.ver, userid, p); len(perms) > 0 {
			out[p] = permFlags(perms)
		}
	}
	return out, nil
}

func permFlags(perms map[string]bool) map[string]any {
	out := map[string]any{}
	for p, prop := range perms {
		out[p] = boolNum(prop)
	}
	return out
}
