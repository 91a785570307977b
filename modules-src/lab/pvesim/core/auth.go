package core

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/access"
)

// Principal is who a request runs as.
type Principal struct {
	User    string // user@realm
	TokenID string // token name, "" for a ticket
	Ticket  bool   // authenticated by PVEAuthCookie (CSRF applies to writes)
	// CLI is a call of a stand-in of a PVE command-line tool (pvesh, pvesm,
	// qm, …; header CLIHeader, with a token of root@pam): real ones run the
	// handlers in-process under RPCEnvironment::setup_default_cli_env,
	// which sets the user root@pam, so their tasks run as root@pam, not as
	// the lab token the stand-in authenticates with.
	CLI bool
	// ver is the lab's PVE major version: the built-in roles and valid
	// privileges differ between 8 and 9 (access/privs.go).
	ver int
}

// CLIHeader marks a request of a lab stand-in of a PVE CLI tool
// (lab/tools/apiclient sends it).
const CLIHeader = "X-Gopve-Lab-Cli"

// taskUser is who a task started by the request runs as, as PVE writes it
// in the UPID: the token id for a token (pve-manager PVE/HTTPServer.pm: the
// token id is the user for token based authentication), the user for a
// ticket, root@pam for a CLI tool.
func (p *Principal) taskUser() string {
	if p.CLI {
		return "root@pam"
	}
	return p.Full()
}

// Full is "user@realm" or "user@realm!token", as PVE writes it in UPIDs.
func (p *Principal) Full() string {
	if p.TokenID != "" {
		return p.User + "!" + p.TokenID
	}
	return p.User
}

// isRootTicket is what PVE's root-only methods accept: root@pam itself,
// never a token (not even root's).
func (p *Principal) isRootTicket() bool { return p != nil && p.User == "root@pam" && p.TokenID == "" }

// authenticate reads the token header or ticket cookie; msg is PVE's 401
// reason when it fails.
func (s *Sim) authenticate(db *ConfigDB, r *http.Request) (*Principal, string) {
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
		user, name, _ := strings.Cut(id, "!")
		if msg := db.Access.VerifyToken(id, secret, time.Now()); msg != "" {
			return nil, msg
		}
		return &Principal{User: user, TokenID: name, CLI: user == "root@pam" && r.Header.Get(CLIHeader) != "", ver: s.Cfg.Version}, ""
	}
	c, err := r.Cookie("PVEAuthCookie")
	if err != nil || c.Value == "" {
		return nil, "No ticket"
	}
	user, ok := s.verifyTicketLocked(db, c.Value, time.Now())
	if !ok {
		return nil, "invalid ticket"
	}
	if msg := db.Access.CheckUserEnabled(user, time.Now()); msg != "" {
		return nil, msg
	}
	return &Principal{User: user, Ticket: true, ver: s.Cfg.Version}, ""
}

// RPCEnv is the RPCEnvironment who's checks run in: db's access data and
// pools, the lab's PVE version (package access evaluates them).
func RPCEnv(db *ConfigDB, who *Principal) access.Env {
	return access.Env{Access: &db.Access, Version: who.ver, PoolsOf: db.PoolsOf}
}

// HasPriv tells whether who has every privilege of privs on path, or, with
// any, one of them, as RPCEnvironment::permissions computes them (K19: a
// privilege-separated token only gets what both it and its user have).
func HasPriv(db *ConfigDB, who *Principal, path string, privs []string, any bool) bool {
	return RPCEnv(db, who).HasPriv(who.Full(), path, privs, any)
}

// CheckFull is check (every privilege; the detail names the first one
// missing) or check_any (one of them; the detail names all, "|"-joined).
func CheckFull(db *ConfigDB, who *Principal, path string, privs []string, anyOf bool) (bool, string) {
	return RPCEnv(db, who).CheckFull(who.Full(), path, privs, anyOf)
}

// checkPermissions evaluates a schema `permissions` description. It returns
// "" when allowed, else PVE's parenthesised detail for the 403 message.
// Descriptions the simulator cannot evaluate (userid-param, perm-modify…)
// are allowed and left to the handler.
func checkPermissions(db *ConfigDB, who *Principal, raw json.RawMessage, params map[string]any) string {
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
	if perms.User == "all" || perms.User == "world" || who.Full() == "root@pam" {
		return "" // check_api2_permissions: root@pam passes every check
	}
	if len(perms.Check) == 0 {
		return access.PermNoDetail
	}
	ok, detail := RPCEnv(db, who).EvalCheck(who.Full(), perms.Check, params)
	if ok {
		return ""
	}
	return detail
}

// authRoutes are login and the caller's permissions.
func (s *Sim) authRoutes() map[string]Handler {
	return map[string]Handler{
		"POST /access/ticket": s.postTicket,
		"GET /access/ticket":  func(*Req) (any, error) { return nil, nil },
	}
}

// RPCCheck is RPCEnvironment's check($user, $path, [$priv]) without noerr:
// PVE's 403 naming path and privilege, or nil.
func RPCCheck(db *ConfigDB, who *Principal, path, priv string) error {
	if ok, d := CheckFull(db, who, path, []string{priv}, false); !ok {
		return ErrPerm(d)
	}
	return nil
}
