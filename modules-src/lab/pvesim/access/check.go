package access

import (
	"fmt"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// The schema's permission descriptions, evaluated as
// PVE::RPCEnvironment::exec_api2_perm_check does: perm (with any and
// require_param), and, or, userid-param (self, Realm.AllocateUser),
// userid-group (groups_param create/update) and perm-modify.

// PermNoDetail is raise_perm_exc() without an argument: the 403 says only
// "Permission check failed".
const PermNoDetail = "\x00"

// EvalCheck evaluates a schema check for authid with the request's
// params; it returns false and the 403's detail when refused.
func (e Env) EvalCheck(authid string, check []any, params map[string]any) (bool, string) {
	if len(check) == 0 {
		return true, ""
	}
	op, _ := check[0].(string)
	switch op {
	case "perm":
		return e.evalPerm(authid, check, params)
	case "or":
		for _, sub := range check[1:] {
			if l, ok := sub.([]any); ok {
				if ok2, _ := e.EvalCheck(authid, l, params); ok2 {
					return true, ""
				}
			}
		}
		return false, PermNoDetail
	case "and":
		for _, sub := range check[1:] {
			if l, ok := sub.([]any); ok {
				if ok2, d := e.EvalCheck(authid, l, params); !ok2 {
					return false, d
				}
			}
		}
		return true, ""
	case "userid-param":
		return e.evalUseridParam(authid, check, params)
	case "userid-group":
		return e.evalUseridGroup(authid, check, params)
	case "perm-modify":
		tmpl, _ := check[1].(string)
		path := NormalizePath(templateReplace(tmpl, params))
		if path == "" {
			return false, PermNoDetail // API2::ACL refuses the path itself
		}
		return e.CheckPermModify(authid, path)
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

func (e Env) evalPerm(authid string, check []any, params map[string]any) (bool, string) {
	if len(check) < 3 {
		return true, ""
	}
	tmpl, _ := check[1].(string)
	p := NormalizePath(templateReplace(tmpl, params))
	privs := stringList(check[2])
	anyOf := false
	for i := 3; i+1 < len(check); i += 2 {
		switch k, _ := check[i].(string); k {
		case "any":
			anyOf = true
		case "require_param":
			if name, _ := check[i+1].(string); params[name] == nil {
				return false, PermNoDetail
			}
		}
	}
	return e.CheckFull(authid, p, privs, anyOf)
}

// CheckFull is check (every privilege; the detail names the first one
// missing) or check_any (one of them; the detail names all, "|"-joined).
func (e Env) CheckFull(authid, path string, privs []string, anyOf bool) (bool, string) {
	if e.HasPriv(authid, path, privs, anyOf) {
		return true, ""
	}
	if anyOf {
		return false, fmt.Sprintf("%s, %s", path, strings.Join(privs, "|"))
	}
	have := e.Privileges(authid, path)
	for _, priv := range privs {
		if _, set := have[priv]; !set {
			return false, fmt.Sprintf("%s, %s", path, priv)
		}
	}
	return false, path
}

// CheckPermModify is check_perm_modify.
func (e Env) CheckPermModify(authid, path string) (bool, string) {
	privs := []string{"Permissions.Modify"}
	switch {
	case strings.HasPrefix(path, "/storage/"):
		privs = append(privs, "Datastore.Allocate")
	case strings.HasPrefix(path, "/vms/"):
		privs = append(privs, "VM.Allocate")
	case strings.HasPrefix(path, "/pool/"):
		privs = append(privs, "Pool.Allocate")
	}
	return e.CheckFull(authid, path, privs, true)
}

func (e Env) evalUseridParam(authid string, check []any, params map[string]any) (bool, string) {
	userid := pvecommon.ParamString(params["userid"])
	sub, _ := check[1].(string)
	switch sub {
	case "self":
		if e.Access.Users[userid] == nil {
			return false, PermNoDetail
		}
		return authid == userid, PermNoDetail
	case "Realm.AllocateUser":
		_, realm, _ := strings.Cut(userid, "@")
		return e.CheckFull(authid, "/access/realm/"+realm, []string{"Realm.AllocateUser"}, false)
	}
	return true, ""
}

// evalUseridGroup: any of privs on /access/groups (all users), else on
// every group named in groups (create/update) and on a group the existing
// user is a member of.
func (e Env) evalUseridGroup(authid string, check []any, params map[string]any) (bool, string) {
	privs := stringList(check[1])
	groupsParam := ""
	for i := 2; i+1 < len(check); i += 2 {
		if k, _ := check[i].(string); k == "groups_param" {
			groupsParam, _ = check[i+1].(string)
		}
	}
	userid := pvecommon.ParamString(params["userid"])
	checkExisting := groupsParam != "create"
	if checkExisting && e.Access.Users[userid] == nil {
		return false, fmt.Sprintf("no such user ('%s')", userid)
	}
	if e.HasPriv(authid, "/access/groups", privs, true) {
		return true, ""
	}
	allowed := map[string]bool{}
	for g := range e.Access.Groups {
		if e.HasPriv(authid, "/access/groups/"+g, privs, true) {
			allowed[g] = true
		}
	}
	joined := strings.Join(privs, "|")
	if groupsParam != "" {
		named := pveschema.SplitList(pvecommon.ParamString(params["groups"]))
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
			if e.Access.InGroup(g, userid) {
				return true, ""
			}
		}
		return false, PermNoDetail
	}
	return true, ""
}
