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
	// ver is the lab's PVE major version: the built-in roles and valid
	// privileges differ between 8 and 9 (accessprivs.go).
	ver int
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
		user, name, _ := strings.Cut(id, "!")
		if msg := verifyToken(db, id, secret, time.Now()); msg != "" {
			return nil, msg
		}
		return &principal{User: user, TokenID: name, CLI: user == "root@pam" && r.Header.Get(CLIHeader) != "", ver: s.cfg.Version}, ""
	}
	c, err := r.Cookie("PVEAuthCookie")
	if err != nil || c.Value == "" {
		return nil, "No ticket"
	}
	user, ok := s.verifyTicketLocked(db, c.Value, time.Now())
	if !ok {
		return nil, "invalid ticket"
	}
	if msg := checkUserEnabled(db, user, time.Now()); msg != "" {
		return nil, msg
	}
	return &principal{User: user, Ticket: true, ver: s.cfg.Version}, ""
}

// verifyToken is AccessControl.pm verify_token: a well-formed token id of
// an enabled, unexpired user, a token that exists and has not expired, and
// its secret; "" when valid, else the 401 reason.
func verifyToken(db *ConfigDB, id, secret string, now time.Time) string {
	if !tokenIDRe.MatchString(id) {
		return fmt.Sprintf("'%s' is not a valid token ID - not able to split into user and token parts", id)
	}
	user, name, _ := strings.Cut(id, "!")
	if msg := checkUserEnabled(db, user, now); msg != "" {
		return msg
	}
	tok := db.Access.Tokens[id]
	if tok == nil {
		return fmt.Sprintf("no such token '%s' for user '%s'", name, user)
	}
	if tok.Expire != 0 && tok.Expire < now.Unix() {
		return fmt.Sprintf("token '%s' access expired", name)
	}
	if subtle.ConstantTimeCompare([]byte(tok.Secret), []byte(secret)) != 1 {
		return "invalid token value!"
	}
	return ""
}

// checkUserEnabled is AccessControl.pm check_user_enabled.
func checkUserEnabled(db *ConfigDB, user string, now time.Time) string {
	u := db.Access.Users[user]
	switch {
	case u == nil:
		return fmt.Sprintf("no such user ('%s')", user)
	case u.Disabled:
		return fmt.Sprintf("user '%s' is disabled", user)
	case u.Expire != 0 && u.Expire < now.Unix():
		return fmt.Sprintf("user '%s' access expired", user)
	}
	return ""
}

// privileges returns the privileges who has on path (a set), as
// RPCEnvironment::permissions computes them (accessperm.go; K19: a
// privilege-separated token only gets what both it and its user have).
func privileges(db *ConfigDB, who *principal, path string) map[string]bool {
	return permissions(db, who.ver, who.full(), normalizeACLPath(path))
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
	if perms.User == "all" || perms.User == "world" || who.full() == "root@pam" {
		return "" // check_api2_permissions: root@pam passes every check
	}
	if len(perms.Check) == 0 {
		return permNoDetail
	}
	ok, detail := evalCheck(db, who, perms.Check, params)
	if ok {
		return ""
	}
	return detail
}
