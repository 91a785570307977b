package access

import (
	"encoding/json"
	"strings"
	"time"
)

// A request's authentication and its method's permission description, on
// plain data (core reads the request, the keys and the lock):
//
//   - the Authorization header of a token (pve-http-server's
//     PVE/APIServer/AnyEvent.pm reads it with Formatter.pm
//     extract_auth_value and apitoken_name PVEAPIToken, pve-manager's
//     PVE/HTTPServer.pm auth_handler checks it with AccessControl.pm
//     verify_token: PVEAPIToken=user@realm!name=secret);
//   - the login of POST /access/ticket (pve-access-control's
//     PVE/API2/AccessControl.pm create_ticket: the realm appended to the
//     username, a valid ticket of the same user accepted as its password,
//     else authenticate_user's password check);
//   - RPCEnvironment.pm check_api2_permissions on the method's schema
//     `permissions`.

// VerifyTokenHeader is an Authorization header h checked as a token: msg
// is PVE's 401 reason, or empty when id, user@realm!name, is a valid token.
func (a *Config) VerifyTokenHeader(h string, now time.Time) (id, msg string) {
	v, ok := strings.CutPrefix(h, "PVEAPIToken=")
	if !ok {
		return id, "invalid authorization header"
	}
	// PVEAPIToken=user@realm!name=secret (also accepted with ':' before the secret).
	id, secret, ok := strings.Cut(v, "=")
	if !ok {
		id, secret, ok = strings.Cut(v, ":")
	}
	if !ok {
		return id, "invalid token value!"
	}
	return id, a.VerifyToken(id, secret, now)
}

// LoginName is create_ticket's user: username, with "@" and realm
// appended when a realm is given, whatever the username holds
// (API2/AccessControl.pm: `$username .= "\@$param->{realm}" if
// $param->{realm}`). A username without a realm names no user
// (lookup_username finds none), so its login fails as any unknown user's:
// 401, "authentication failure".
func LoginName(username, realm string) string {
	if realm != "" {
		username += "@" + realm
	}
	return username
}

// Login tells whether pw logs user in: root@pam's pam password is
// rootPassword (the lab's nodes share it), a pve-realm user's the one
// stored; a password that is a ticket (ticketUser verifies it: the user
// it was made for) logs in the user it names, renewing it.
func (a *Config) Login(user, pw, rootPassword string, ticketUser func(string) (string, bool)) bool {
	ok := false
	if u := a.Users[user]; u != nil {
		switch {
		case user == "root@pam":
			ok = pw == rootPassword
		case u.Password != "":
			ok = pw == u.Password
		}
	}
	if !ok && strings.HasPrefix(pw, "PVE:") {
		if tu, valid := ticketUser(pw); valid && tu == user {
			ok = true
		}
	}
	return ok
}

// API2Permissions is check_api2_permissions: it evaluates a method's
// schema `permissions` (raw) for authid, user@realm or a token's
// user@realm!name; rootTicket says authid is root@pam itself, what a
// method without a description (root-only) accepts. It returns "" when allowed, else PVE's parenthesised
// detail for the 403 message. Descriptions the simulator cannot evaluate
// (userid-param, perm-modify…) are allowed and left to the handler.
func (e Env) API2Permissions(authid string, rootTicket bool, raw json.RawMessage, params map[string]any) string {
	if len(raw) == 0 {
		if rootTicket {
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
	if perms.User == "all" || perms.User == "world" || authid == "root@pam" {
		return "" // check_api2_permissions: root@pam passes every check
	}
	if len(perms.Check) == 0 {
		return PermNoDetail
	}
	ok, detail := e.EvalCheck(authid, perms.Check, params)
	if ok {
		return ""
	}
	return detail
}
