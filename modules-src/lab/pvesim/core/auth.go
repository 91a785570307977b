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

// authenticate reads the token header or ticket cookie; msg is PVE's 401
// reason when it fails.
func (s *Sim) authenticate(db *ConfigDB, r *http.Request) (*Principal, string) {
	if h := r.Header.Get("Authorization"); h != "" {
		id, msg := db.Access.VerifyTokenHeader(h, time.Now())
		if msg != "" {
			return nil, msg
		}
		user, name, _ := strings.Cut(id, "!")
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

// isRootTicket is what PVE's root-only methods accept: root@pam itself,
// never a token (not even root's).
func (p *Principal) isRootTicket() bool { return p != nil && p.User == "root@pam" && p.TokenID == "" }

// checkPermissions is check_api2_permissions (package access) of a schema
// `permissions` description for who: "" when allowed, else the 403's
// detail.
func checkPermissions(db *ConfigDB, who *Principal, raw json.RawMessage, params map[string]any) string {
	return RPCEnv(db, who).API2Permissions(who.Full(), who.isRootTicket(), raw, params)
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
