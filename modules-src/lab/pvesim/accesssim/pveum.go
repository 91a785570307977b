package accesssim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/access"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
)

// Pveum is the lab's stand-in for pveum's user add, user token add and acl
// modify on a node, with no API call and no permission check (the lab's
// own set-up of users, tokens and ACLs in user.cfg and priv/token.cfg):
// the Go API pvesim.Sim exposes and the control API routes the lab CLI
// calls.
type Pveum struct{ s *core.Sim }

// NewPveum is s's pveum stand-in.
func NewPveum(s *core.Sim) Pveum { return Pveum{s} }

// registerPveum adds the pveum stand-in's control API routes to s.
func registerPveum(s *core.Sim) {
	u := NewPveum(s)
	s.HandleControl("POST /v1/access/users", u.ctlAddUser)
	s.HandleControl("POST /v1/access/tokens", u.ctlAddToken)
	s.HandleControl("POST /v1/access/acl", u.ctlGrant)
}

// TokenSpec describes an API token to create for a test or the lab CLI.
type TokenSpec struct {
	User    string // user@realm; created (realm pve, no password) if missing
	Name    string // token name
	Privsep bool   // privilege separation: only ACLs granted to the token count
}

// AddToken creates a token in node's /etc/pve (shared by its cluster) and
// returns its full id and secret.
func (u Pveum) AddToken(node string, spec TokenSpec) (id, secret string, err error) {
	u.s.Mu.Lock()
	defer u.s.Mu.Unlock()
	db, err := u.s.DBFreshLocked(node)
	if err != nil {
		return "", "", err
	}
	if !strings.Contains(spec.User, "@") || spec.Name == "" {
		return "", "", &core.BadRequestError{Msg: fmt.Sprintf("token needs user@realm and a name (got %q, %q)", spec.User, spec.Name)}
	}
	if db.Access.Users[spec.User] == nil {
		db.Access.Users[spec.User] = &access.User{ID: spec.User}
	}
	id = spec.User + "!" + spec.Name
	secret = core.NewUUID()
	db.Access.Tokens[id] = &access.Token{ID: id, Secret: secret, Privsep: spec.Privsep}
	u.s.SaveLocked()
	return id, secret, nil
}

// AddUser creates a pve-realm user with a password (for ticket tests).
func (u Pveum) AddUser(node, user, password string) error {
	if !strings.Contains(user, "@") {
		return &core.BadRequestError{Msg: fmt.Sprintf("user %q needs a realm (user@pve)", user)}
	}
	u.s.Mu.Lock()
	defer u.s.Mu.Unlock()
	db, err := u.s.DBFreshLocked(node)
	if err != nil {
		return err
	}
	db.Access.Users[user] = &access.User{ID: user, Password: password}
	u.s.SaveLocked()
	return nil
}

// Grant adds an ACL entry on node's /etc/pve: role is a role of the PVE
// version (PVEAuditor, PVEDatastoreAdmin, Administrator…), a custom role, or
// "priv:A,B", which creates the custom role "Lab-A_B" (user.cfg names roles
// only) with those privileges.
func (u Pveum) Grant(node, path, ugid, role string, propagate bool) error {
	u.s.Mu.Lock()
	defer u.s.Mu.Unlock()
	db, err := u.s.DBFreshLocked(node)
	if err != nil {
		return err
	}
	if list, ok := strings.CutPrefix(role, "priv:"); ok {
		privs := pveschema.SplitList(list)
		set := map[string]bool{}
		for _, p := range privs {
			if !access.ValidPrivilege(u.s.Cfg.Version, p) {
				return &core.BadRequestError{Msg: fmt.Sprintf("invalid privilege '%s' (PVE %d)", p, u.s.Cfg.Version)}
			}
			set[p] = true
		}
		role = access.LabRoleName(slices.Sorted(maps.Keys(set)))
		if db.Access.Roles == nil {
			db.Access.Roles = map[string]map[string]bool{}
		}
		db.Access.Roles[role] = set
	}
	if db.Access.RolePrivs(u.s.Cfg.Version, role) == nil {
		return &core.BadRequestError{Msg: fmt.Sprintf("unknown role %q (use a PVE role such as PVEAuditor, or \"priv:A,B\")", role)}
	}
	p := access.NormalizePath(path)
	if p == "" {
		return &core.BadRequestError{Msg: fmt.Sprintf("invalid ACL path '%s'", path)}
	}
	db.Access.SetACL(access.ACLEntry{Path: p, UGID: ugid, Role: role, Propagate: propagate})
	u.s.SaveLocked()
	return nil
}

// ctlAddUser serves POST /v1/access/users.
func (u Pveum) ctlAddUser(w http.ResponseWriter, r *http.Request) {
	var body struct{ Node, User, Password string }
	if !core.ControlDecode(w, r, &body) {
		return
	}
	core.ControlResult(w, map[string]any{}, u.AddUser(body.Node, body.User, body.Password))
}

// ctlAddToken serves POST /v1/access/tokens.
func (u Pveum) ctlAddToken(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Node    string `json:"node"`
		User    string `json:"user"`
		Name    string `json:"name"`
		Privsep bool   `json:"privsep"`
	}
	if !core.ControlDecode(w, r, &body) {
		return
	}
	id, secret, err := u.AddToken(body.Node, TokenSpec{User: body.User, Name: body.Name, Privsep: body.Privsep})
	// Like `pveum user token add`, the secret is shown once, to the caller.
	core.ControlResult(w, map[string]string{"full-tokenid": id, "value": secret}, err)
}

// ctlGrant serves POST /v1/access/acl.
func (u Pveum) ctlGrant(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Node      string `json:"node"`
		Path      string `json:"path"`
		UGID      string `json:"ugid"`
		Role      string `json:"role"`
		Propagate bool   `json:"propagate"`
	}
	if !core.ControlDecode(w, r, &body) {
		return
	}
	core.ControlResult(w, map[string]any{}, u.Grant(body.Node, body.Path, body.UGID, body.Role, body.Propagate))
}
