package pvesim

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// principal is who a request runs as.
type principal struct {
	User    string // user@realm
	TokenID string // token name, "" for a ticket
	Ticket  bool   // authenticated by PVEAuthCookie (CSRF applies to writes)
	// CLI is a call of a stand-in of a PVE command-line tool (pvesh, pvesm,
	// qm, …; header CLIHeader, with a token of root@pam): real ones run the
	// handlers in-process under RPCEnvironment::setup_default_cli_env,
	// which sets the user root@pam, so their tasks run as root@pam, not as
	// the lab token the stand-in authenticates with.
	CLI bool
}

// CLIHeader marks a request of a lab stand-in of a PVE CLI tool
// (lab/tools/apiclient sends it).
const CLIHeader = "X-Gopve-Lab-Cli"

// taskUser is who a task started by the request runs as, as PVE writes it
// in the UPID: the token id for a token (pve-manager PVE/HTTPServer.pm: the
// token id is the user for token based authentication), the user for a
// ticket, root@pam for a CLI tool.
func (p *principal) taskUser() string {
	if p.CLI {
		return "root@pam"
	}
	return p.full()
}

// full is "user@realm" or "user@realm!token", as PVE writes it in UPIDs.
func (p *principal) full() string {
	if p.TokenID != "" {
		return p.User + "!" + p.TokenID
	}
	return p.User
}

// isRootTicket is what PVE's root-only methods accept: root@pam itself,
// never a token (not even root's).
func (p *principal) isRootTicket() bool { return p != nil && p.User == "root@pam" && p.TokenID == "" }

// authenticate reads the token header or ticket cookie; msg is PVE's 401
// reason when it fails.
func (s *Sim) authenticate(db *ConfigDB, r *http.Request) (*principal, string) {
	if h := r.Header.Get("Authorization"); h != "" {
		v, ok := strings.CutPrefix(h, "PVEAPIToken=")
		if !ok {
			return nil, "invalid authorization header"
		}
		// PVEAPIToken=user@realm!name=secret (also accepted with ':' before the secret).
		id, secret, ok := strings.Cut(v, "=")
		if !ok {
			id, secret, ok = strings.Cut(v, ":")
		}
		if !ok {
			return nil, "invalid token value!"
		}
		tok := db.Access.Tokens[id]
		if tok == nil || subtle.ConstantTimeCompare([]byte(tok.Secret), []byte(secret)) != 1 {
			return nil, "invalid token value!"
		}
		user, name, _ := strings.Cut(id, "!")
		return &principal{User: user, TokenID: name, CLI: user == "root@pam" && r.Header.Get(CLIHeader) != ""}, ""
	}
	c, err := r.Cookie("PVEAuthCookie")
	if err != nil || c.Value == "" {
		return nil, "No ticket"
	}
	user, ok := s.verifyTicketLocked(db, c.Value, time.Now())
	if !ok {
		return nil, "invalid ticket"
	}
	return &principal{User: user, Ticket: true}, ""
}

// allPrivs is every privilege the simulator knows; Administrator has them.
var allPrivs = []string{
	"Datastore.Allocate", "Datastore.AllocateSpace", "Datastore.AllocateTemplate", "Datastore.Audit",
	"Group.Allocate", "Mapping.Audit", "Mapping.Modify", "Mapping.Use", "Permissions.Modify",
	"Pool.Allocate", "Pool.Audit", "Realm.Allocate", "Realm.AllocateUser", "SDN.Allocate", "SDN.Audit", "SDN.Use",
	"Sys.AccessNetwork", "Sys.Audit", "Sys.Console", "Sys.Incoming", "Sys.Modify", "Sys.PowerMgmt", "Sys.Syslog",
	"User.Modify", "VM.Allocate", "VM.Audit", "VM.Backup", "VM.Clone", "VM.Config.CDROM", "VM.Config.CPU",
	"VM.Config.Cloudinit", "VM.Config.Disk", "VM.Config.HWType", "VM.Config.Memory", "VM.Config.Network",
	"VM.Config.Options", "VM.Console", "VM.GuestAgent.Audit", "VM.GuestAgent.Unrestricted", "VM.Migrate",
	"VM.PowerMgmt", "VM.Replicate", "VM.Snapshot", "VM.Snapshot.Rollback",
}

// builtinRoles are the PVE roles tests use; a role may also be written
// "priv:A,B" to grant an ad-hoc set.
var builtinRoles = map[string][]string{
	"Administrator":     allPrivs,
	"NoAccess":          {},
	"PVEAuditor":        {"Datastore.Audit", "Mapping.Audit", "Pool.Audit", "SDN.Audit", "Sys.Audit", "VM.Audit"},
	"PVEDatastoreAdmin": {"Datastore.Allocate", "Datastore.AllocateSpace", "Datastore.AllocateTemplate", "Datastore.Audit"},
	"PVEDatastoreUser":  {"Datastore.AllocateSpace", "Datastore.Audit"},
	"PVEPoolAdmin":      {"Pool.Allocate", "Pool.Audit"},
	"PVEPoolUser":       {"Pool.Audit"},
	"PVESysAdmin":       {"Sys.Audit", "Sys.Console", "Sys.Syslog", "Sys.Modify", "Sys.PowerMgmt", "Sys.Incoming", "Sys.AccessNetwork"},
	"PVEVMAdmin":        {"VM.Allocate", "VM.Audit", "VM.Backup", "VM.Clone", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Cloudinit", "VM.Config.Disk", "VM.Config.HWType", "VM.Config.Memory", "VM.Config.Network", "VM.Config.Options", "VM.Console", "VM.Migrate", "VM.PowerMgmt", "VM.Snapshot", "VM.Snapshot.Rollback", "VM.GuestAgent.Audit", "VM.GuestAgent.Unrestricted"},
	"PVEVMUser":         {"VM.Audit", "VM.Backup", "VM.Config.CDROM", "VM.Config.Cloudinit", "VM.Console", "VM.PowerMgmt"},
	"PVETemplateUser":   {"VM.Audit", "VM.Clone"},
	"PVEMappingAdmin":   {"Mapping.Audit", "Mapping.Modify", "Mapping.Use"},
	"PVESDNAdmin":       {"SDN.Allocate", "SDN.Audit", "SDN.Use"},
	"PVEUserAdmin":      {"Group.Allocate", "Realm.AllocateUser", "User.Modify"},
	"PVEAdmin":          without(allPrivs, "Permissions.Modify", "Realm.Allocate", "Sys.Modify"),
	"PVEDatastoreAudit": {"Datastore.Audit"},
	"PVESDNUser":        {"SDN.Audit", "SDN.Use"},
	"PVEMappingUser":    {"Mapping.Audit", "Mapping.Use"},
}

func without(all []string, drop ...string) []string {
	var out []string
outer:
	for _, p := range all {
		for _, d := range drop {
			if p == d {
				continue outer
			}
		}
		out = append(out, p)
	}
	return out
}

func rolePrivs(role string) ([]string, bool) {
	if list, ok := strings.CutPrefix(role, "priv:"); ok {
		return strings.Split(list, ","), true
	}
	p, ok := builtinRoles[role]
	return p, ok
}

// aclPrivs evaluates the ACL for one ugid at path the way PVE does: walk
// from "/" to the path, the deepest level with entries for ugid wins;
// entries apply below their path only when they propagate.
func aclPrivs(acl []ACLEntry, ugid, path string) map[string]bool {
	levels := []string{"/"}
	cur := ""
	for _, seg := range strings.Split(strings.Trim(path, "/"), "/") {
		if seg == "" {
			continue
		}
		cur += "/" + seg
		levels = append(levels, cur)
	}
	privs := map[string]bool{}
	for _, lvl := range levels {
		found := false
		set := map[string]bool{}
		for _, e := range acl {
			if e.UGID != ugid || normPath(e.Path) != lvl {
				continue
			}
			if !e.Propagate && lvl != normPath(path) {
				continue
			}
			found = true
			ps, _ := rolePrivs(e.Role)
			for _, p := range ps {
				set[p] = true
			}
		}
		if found {
			privs = set
		}
	}
	return privs
}

func normPath(p string) string {
	p = "/" + strings.Trim(p, "/")
	return p
}

// privileges returns the effective privileges of who at path (K19: a
// privilege-separated token only gets what both it and its user have).
func privileges(db *ConfigDB, who *principal, path string) map[string]bool {
	userPrivs := map[string]bool{}
	if who.User == "root@pam" {
		for _, p := range allPrivs {
			userPrivs[p] = true
		}
	} else {
		userPrivs = aclPrivs(db.Access.ACL, who.User, path)
	}
	if who.TokenID == "" {
		return userPrivs
	}
	tok := db.Access.Tokens[who.full()]
	if tok == nil || !tok.Privsep {
		return userPrivs
	}
	tokPrivs := aclPrivs(db.Access.ACL, who.full(), path)
	out := map[string]bool{}
	for p := range tokPrivs {
		if userPrivs[p] {
			out[p] = true
		}
	}
	return out
}

func hasPriv(db *ConfigDB, who *principal, path string, privs []string, any bool) bool {
	have := privileges(db, who, path)
	for _, p := range privs {
		if have[p] && any {
			return true
		}
		if !have[p] && !any {
			return false
		}
	}
	return !any
}

// checkPermissions evaluates a schema `permissions` description. It returns
// "" when allowed, else PVE's parenthesised detail for the 403 message.
// Descriptions the simulator cannot evaluate (userid-param, perm-modify…)
// are allowed and left to the handler.
func checkPermissions(db *ConfigDB, who *principal, raw json.RawMessage, params map[string]any) string {
	if len(raw) == 0 {
		if who.isRootTicket() {
			return ""
		}
		return "user != root@pam"
	}
	var perms struct {
		User  string `json:"user"`
		Check []any  `json:"check"`
	}
	if err := json.Unmarshal(raw, &perms); err != nil {
		return ""
	}
	if perms.User == "all" || perms.User == "world" || len(perms.Check) == 0 {
		return ""
	}
	ok, detail := evalCheck(db, who, perms.Check, params)
	if ok {
		return ""
	}
	return detail
}

func evalCheck(db *ConfigDB, who *principal, check []any, params map[string]any) (bool, string) {
	if len(check) == 0 {
		return true, ""
	}
	op, _ := check[0].(string)
	switch op {
	case "perm":
		if len(check) < 3 {
			return true, ""
		}
		p, _ := check[1].(string)
		for k, v := range params {
			p = strings.ReplaceAll(p, "{"+k+"}", paramString(v))
		}
		var privs []string
		if list, ok := check[2].([]any); ok {
			for _, x := range list {
				if s, ok := x.(string); ok {
					privs = append(privs, s)
				}
			}
		}
		anyOf := false
		for i := 3; i+1 < len(check); i += 2 {
			if k, _ := check[i].(string); k == "any" {
				anyOf = true
			}
		}
		if hasPriv(db, who, p, privs, anyOf) {
			return true, ""
		}
		// RPCEnvironment: check_any names all alternatives joined by "|",
		// check_full the first privilege that is missing.
		if anyOf {
			return false, fmt.Sprintf("%s, %s", p, strings.Join(privs, "|"))
		}
		have := privileges(db, who, p)
		for _, priv := range privs {
			if !have[priv] {
				return false, fmt.Sprintf("%s, %s", p, priv)
			}
		}
		return false, p
	case "or":
		detail := ""
		for _, sub := range check[1:] {
			if l, ok := sub.([]any); ok {
				ok2, d := evalCheck(db, who, l, params)
				if ok2 {
					return true, ""
				}
				if detail == "" {
					detail = d
				}
			}
		}
		return false, detail
	case "and":
		for _, sub := range check[1:] {
			if l, ok := sub.([]any); ok {
				if ok2, d := evalCheck(db, who, l, params); !ok2 {
					return false, d
				}
			}
		}
		return true, ""
	}
	return true, ""
}

// GET /access/permissions: the caller's (or an owned token's) effective
// privileges per path — what a module asks first to fail fast instead of
// reading empty lists (K19).
func (s *Sim) getPermissions(rc *reqCtx) (any, error) {
	db := rc.db()
	who := rc.who
	if uid := rc.str("userid"); uid != "" && uid != who.full() {
		user, tok, isTok := strings.Cut(uid, "!")
		owned := isTok && user == who.User && who.TokenID == ""
		if !owned && !hasPriv(db, who, "/access", []string{"Sys.Audit"}, false) {
			return nil, errPerm("/access, Sys.Audit")
		}
		who = &principal{User: user, TokenID: tok}
	}
	paths := map[string]bool{"/": true}
	if p := rc.str("path"); p != "" {
		paths = map[string]bool{normPath(p): true}
	} else {
		for _, e := range db.Access.ACL {
			if e.UGID == who.User || e.UGID == who.full() {
				paths[normPath(e.Path)] = true
			}
		}
	}
	out := map[string]any{}
	for p := range paths {
		privs := map[string]any{}
		for priv := range privileges(db, who, p) {
			privs[priv] = 1
		}
		if len(privs) > 0 || rc.has("path") {
			out[p] = privs
		}
	}
	return out, nil
}
