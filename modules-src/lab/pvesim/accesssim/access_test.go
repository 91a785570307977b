package accesssim_test

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
)

func readUserCfg(t *testing.T, s *pvesim.Sim) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.EtcPveDir("pve01"), "user.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// user.cfg as write_user_config lays it out: users with their tokens,
// groups, pools, custom roles, ACL lines grouped per path, propagate flag
// and role list; root@pam's own entries never written. token.cfg holds
// the secret.
func TestAccessUserCfgAsPVEWritesIt(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{})
	c := simtest.NewClient(t, s, "pve01").Root()
	c.Call("POST", "/access/groups", url.Values{"groupid": {"ops"}, "comment": {"a:b"}}).Must(t, "group")
	c.Call("POST", "/access/users", url.Values{"userid": {"automation@pve"}, "groups": {"ops"}, "comment": {"robot"},
		"email": {"a@example.com"}, "expire": {"4102444800"}}).Must(t, "user")
	c.Call("POST", "/access/users", url.Values{"userid": {"bob@pam"}, "enable": {"0"}}).Must(t, "user bob")
	tok := c.Call("POST", "/access/users/automation@pve/token/ci", url.Values{"comment": {"gopve"}}).Must(t, "token").Obj()
	c.Call("POST", "/access/roles", url.Values{"roleid": {"Automation"}, "privs": {"VM.Audit Datastore.Audit,Sys.Audit"}}).Must(t, "role")
	for _, acl := range []url.Values{
		{"path": {"/"}, "roles": {"Automation"}, "users": {"automation@pve"}, "groups": {"ops"}},
		{"path": {"/"}, "roles": {"PVEAuditor"}, "users": {"bob@pam"}, "propagate": {"0"}},
		{"path": {"/storage//local/"}, "roles": {"PVEDatastoreUser"}, "tokens": {"automation@pve!ci"}},
		{"path": {"/"}, "roles": {"Administrator"}, "users": {"root@pam"}},
	} {
		c.Call("PUT", "/access/acl", acl).Must(t, "acl "+acl.Encode())
	}
	want := "user:automation@pve:1:4102444800:::a@example.com:robot::\n" +
		"token:automation@pve!ci:0:1:gopve:\n" +
		"user:bob@pam:0:0::::::\n" +
		"user:root@pam:1:0::::::\n" +
		"token:root@pam!lab:0:0::\n" +
		"\n" +
		"group:ops:automation@pve:a%3Ab:\n" +
		"\n\n" +
		"role:Automation:Datastore.Audit,Sys.Audit,VM.Audit:\n" +
		"\n" +
		"acl:0:/:bob@pam:PVEAuditor:\n" +
		"acl:1:/:@ops,automation@pve:Automation:\n" +
		"acl:1:/storage/local:automation@pve!ci:PVEDatastoreUser:\n"
	if got := readUserCfg(t, s); got != want {
		t.Errorf("user.cfg:\n%s\nwant:\n%s", got, want)
	}
	b, err := os.ReadFile(filepath.Join(s.EtcPveDir("pve01"), "priv", "token.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	if line := "automation@pve!ci " + tok["value"].(string) + "\n"; !strings.Contains(string(b), line) {
		t.Errorf("token.cfg %q lacks %q", b, line)
	}
	if tok["full-tokenid"] != "automation@pve!ci" || tok["info"].(map[string]any)["privsep"] != float64(1) {
		t.Errorf("token answer %v: privsep is PVE's default", tok)
	}
}

// A hand edit of user.cfg (what `pveum acl modify` writes on a real node)
// is what the API and the permission checks use next.
func TestAccessHandEditedUserCfgIsRead(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{})
	c := simtest.NewClient(t, s, "pve01").Root()
	c.Call("POST", "/access/users", url.Values{"userid": {"ed@pve"}}).Must(t, "user")
	tok := c.Call("POST", "/access/users/ed@pve/token/tk", url.Values{"privsep": {"0"}}).Must(t, "token").Obj()
	ed := simtest.NewClient(t, s, "pve01").WithToken("ed@pve!tk", tok["value"].(string))
	if n := len(ed.Call("GET", "/storage", nil).Must(t, "storage").List()); n != 0 {
		t.Fatalf("no ACL yet, %d storages visible", n)
	}
	p := filepath.Join(s.EtcPveDir("pve01"), "user.cfg")
	cfg := readUserCfg(t, s) + "acl:1:/storage:ed@pve:PVEDatastoreAdmin:\nacl:1:/:ed@pve:NoSuchRole:\n"
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := len(ed.Call("GET", "/storage", nil).Must(t, "storage").List()); n != 2 {
		t.Errorf("after the hand edit: %d storages, want 2", n)
	}
	acl := c.Call("GET", "/access/acl", nil).Must(t, "acl").List()
	if len(acl) != 1 || acl[0]["roleid"] != "PVEDatastoreAdmin" || acl[0]["path"] != "/storage" {
		t.Errorf("acl %v: the entry naming a missing role is ignored, as parse_user_config does", acl)
	}
}

// roles(): the deepest level with an entry wins; a non-propagating entry
// applies only at its own path; user entries override group entries at
// the same level; NoAccess wins; a pool's roles reach its members.
func TestAccessPermissionEvaluation(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{})
	c := simtest.NewClient(t, s, "pve01").Root()
	c.Call("POST", "/access/groups", url.Values{"groupid": {"g"}}).Must(t, "group")
	c.Call("POST", "/access/users", url.Values{"userid": {"u@pve"}, "groups": {"g"}}).Must(t, "user")
	c.Call("POST", "/pools", url.Values{"poolid": {"tenant"}}).Must(t, "pool")
	c.Call("PUT", "/pools", url.Values{"poolid": {"tenant"}, "storage": {"local"}}).Must(t, "pool member")
	for _, acl := range []url.Values{
		{"path": {"/"}, "roles": {"PVEAuditor"}, "groups": {"g"}},
		{"path": {"/nodes"}, "roles": {"PVESysAdmin"}, "groups": {"g"}, "propagate": {"0"}},
		{"path": {"/vms"}, "roles": {"PVEVMUser"}, "users": {"u@pve"}},
		{"path": {"/vms"}, "roles": {"PVEVMAdmin"}, "groups": {"g"}},
		{"path": {"/vms/105"}, "roles": {"NoAccess"}, "groups": {"g"}},
		{"path": {"/pool/tenant"}, "roles": {"PVEDatastoreAdmin"}, "users": {"u@pve"}},
	} {
		c.Call("PUT", "/access/acl", acl).Must(t, "acl "+acl.Encode())
	}
	perms := func(path string) map[string]any {
		return c.Call("GET", "/access/permissions", url.Values{"userid": {"u@pve"}, "path": {path}}).Must(t, "permissions").Obj()[path].(map[string]any)
	}
	for _, tc := range []struct {
		path     string
		has, not []string
	}{
		{"/nodes", []string{"Sys.Console", "Sys.Audit"}, nil},
		{"/nodes/pve01", []string{"Sys.Audit"}, []string{"Sys.Console"}}, // not propagated: the auditor from "/"
		{"/vms/100", []string{"VM.PowerMgmt"}, []string{"VM.Allocate"}},  // the user's PVEVMUser beats the group's PVEVMAdmin
		{"/storage/local", []string{"Datastore.Allocate", "Datastore.Audit"}, nil},
		{"/storage/local-lvm", []string{"Datastore.Audit"}, []string{"Datastore.Allocate"}},
	} {
		p := perms(tc.path)
		for _, x := range tc.has {
			if _, ok := p[x]; !ok {
				t.Errorf("%s: lacks %s (%v)", tc.path, x, p)
			}
		}
		for _, x := range tc.not {
			if _, ok := p[x]; ok {
				t.Errorf("%s: has %s (%v)", tc.path, x, p)
			}
		}
	}
	// A deeper level replaces what the user's own entry above gave: the
	// group's NoAccess at /vms/105 leaves nothing; a user entry at that
	// same level beats the group's.
	if p := perms("/vms/105"); len(p) != 0 {
		t.Errorf("group NoAccess at /vms/105: %v", p)
	}
	c.Call("PUT", "/access/acl", url.Values{"path": {"/vms/105"}, "roles": {"PVEVMUser"}, "users": {"u@pve"}}).Must(t, "user at 105")
	if p := perms("/vms/105"); p["VM.PowerMgmt"] == nil {
		t.Errorf("user entry at /vms/105 beside the group's NoAccess: %v", p)
	}
}

// A privsep token gets the intersection of its own ACLs and its user's;
// lists it may not see come back empty, not 403 (K19); a token without
// privsep has its user's privileges; a disabled user's token is refused.
func TestAccessPrivsepTokenIntersectionK19(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{})
	c := simtest.NewClient(t, s, "pve01").Root()
	c.Call("POST", "/access/users", url.Values{"userid": {"a@pve"}}).Must(t, "user")
	sep := c.Call("POST", "/access/users/a@pve/token/sep", nil).Must(t, "token").Obj()["value"].(string)
	full := c.Call("POST", "/access/users/a@pve/token/full", url.Values{"privsep": {"0"}}).Must(t, "token").Obj()["value"].(string)
	c.Call("PUT", "/access/acl", url.Values{"path": {"/"}, "roles": {"PVEDatastoreAdmin"}, "users": {"a@pve"}}).Must(t, "user acl")
	c.Call("PUT", "/access/acl", url.Values{"path": {"/storage/local"}, "roles": {"PVEAuditor"}, "tokens": {"a@pve!sep"}}).Must(t, "token acl")
	tsep := simtest.NewClient(t, s, "pve01").WithToken("a@pve!sep", sep)
	tfull := simtest.NewClient(t, s, "pve01").WithToken("a@pve!full", full)
	names := func(l []map[string]any) []string {
		var out []string
		for _, e := range l {
			out = append(out, e["storage"].(string))
		}
		slices.Sort(out)
		return out
	}
	if got := names(tsep.Call("GET", "/storage", nil).Must(t, "storage").List()); !slices.Equal(got, []string{"local"}) {
		t.Errorf("privsep token sees %v, want [local] (Datastore.Audit in both ACLs)", got)
	}
	if got := names(tfull.Call("GET", "/storage", nil).Must(t, "storage").List()); len(got) != 2 {
		t.Errorf("non-privsep token sees %v, want both storages", got)
	}
	r := tsep.Call("PUT", "/storage/local", url.Values{"content": {"iso"}})
	if r.Status != 403 || r.Reason != "Permission check failed (/storage, Datastore.Allocate)" {
		t.Errorf("privsep token writing: %d %q (the token's own ACL lacks Datastore.Allocate)", r.Status, r.Reason)
	}
	if n := len(tsep.Call("GET", "/nodes/pve01/qemu", nil).Must(t, "guests").List()); n != 0 {
		t.Errorf("guest list without VM.Audit: %d entries, want none", n)
	}
	c.Call("PUT", "/access/users/a@pve", url.Values{"enable": {"0"}}).Must(t, "disable")
	if r := tfull.Call("GET", "/version", nil); r.Status != 401 || r.Reason != "user 'a@pve' is disabled" {
		t.Errorf("token of a disabled user: %d %q", r.Status, r.Reason)
	}
	c.Call("PUT", "/access/users/a@pve", url.Values{"enable": {"1"}}).Must(t, "enable")
	c.Call("PUT", "/access/users/a@pve/token/full", url.Values{"expire": {"1000"}}).Must(t, "expire")
	if r := tfull.Call("GET", "/version", nil); r.Status != 401 || r.Reason != "token 'full' access expired" {
		t.Errorf("expired token: %d %q", r.Status, r.Reason)
	}
}

// Refusals with PVE's messages, and nothing written: unknown privilege,
// a role in the PVE namespace, a built-in role changed, a bad token id, an
// ACL on a path check_path rejects, an ACL for a missing user.
func TestAccessRefusalsWriteNothing(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{Version: 8})
	c := simtest.NewClient(t, s, "pve01").Root()
	c.Call("POST", "/access/users", url.Values{"userid": {"a@pve"}}).Must(t, "user")
	before := readUserCfg(t, s)
	for _, tc := range []struct {
		method, path string
		params       url.Values
		status       int
		msg, param   string
	}{
		{"POST", "/access/roles", url.Values{"roleid": {"R"}, "privs": {"VM.Replicate"}}, 500, "create role failed: invalid privilege 'VM.Replicate'", ""},
		{"POST", "/access/roles", url.Values{"roleid": {"pveMine"}}, 400, "", "roleid"},
		{"PUT", "/access/roles/PVEVMAdmin", url.Values{"privs": {"VM.Audit"}}, 500, "auto-generated role 'PVEVMAdmin' cannot be modified", ""},
		{"DELETE", "/access/roles/Administrator", nil, 500, "auto-generated role 'Administrator' cannot be deleted", ""},
		{"POST", "/access/roles", url.Values{"roleid": {"Administrator"}}, 500, "create role failed: role 'Administrator' already exists", ""},
		{"POST", "/access/users/a@pve/token/9bad", nil, 400, "", "tokenid"},
		{"PUT", "/access/acl", url.Values{"path": {"/vms/12"}, "roles": {"PVEAuditor"}, "users": {"a@pve"}}, 400, "", "path"},
		{"PUT", "/access/acl", url.Values{"path": {"/"}, "roles": {"PVEAuditor"}}, 400, "", "users"},
		{"PUT", "/access/acl", url.Values{"path": {"/"}, "roles": {"PVEAuditor"}, "users": {"a@pve,nobody@pve"}}, 500, "ACL update failed: user 'nobody@pve' does not exist", ""},
		{"PUT", "/access/acl", url.Values{"path": {"/"}, "roles": {"Nope"}, "users": {"a@pve"}}, 500, "ACL update failed: role 'Nope' does not exist", ""},
		{"POST", "/access/users", url.Values{"userid": {"a@pve"}}, 500, "create user failed: user 'a@pve' already exists", ""},
		{"POST", "/access/users", url.Values{"userid": {"b@pve"}, "groups": {"nogroup"}}, 500, "create user failed: no such group 'nogroup'", ""},
	} {
		r := c.Call(tc.method, tc.path, tc.params)
		if r.Status != tc.status || (tc.msg != "" && r.Reason != tc.msg) || (tc.param != "" && r.Errs[tc.param] == nil) {
			t.Errorf("%s %s %v: %d %q %v", tc.method, tc.path, tc.params, r.Status, r.Reason, r.Errs)
		}
	}
	if after := readUserCfg(t, s); after != before {
		t.Errorf("a refused request changed user.cfg:\n%s\nwas:\n%s", after, before)
	}
	// PVE 8's privilege list: VM.Monitor exists, the GuestAgent ones not.
	c.Call("POST", "/access/roles", url.Values{"roleid": {"Mon"}, "privs": {"VM.Monitor"}}).Must(t, "VM.Monitor on 8")
}

// user.cfg's text fields as PVE writes and reads them: encode_text escapes
// ':' and non-ASCII but leaves '%', and decode_text decodes every %XX, so a
// comment holding "%25" reads back changed; a Perl-false "0" is never
// written. PVE keeps no model (every request parses user.cfg), so the lab
// answers what its own file reads back as. Pool comments are encoded like
// the others (write_user_config's pool lines): a ':' in one would shift
// the pool's members.
func TestUserCfgTextAsPVEReadsIt(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{})
	c := simtest.NewClient(t, s, "pve01").Root()
	c.Call("POST", "/access/users", url.Values{"userid": {"pct@pve"}, "comment": {"50%25 off: é"}, "firstname": {"0"}}).Must(t, "user")
	if raw := readUserCfg(t, s); !strings.Contains(raw, "user:pct@pve:1:0::::50%25 off%3A %C3%A9::") {
		t.Errorf("user.cfg after the user's creation:\n%s", raw)
	}
	u := c.Call("GET", "/access/users/pct@pve", nil).Must(t, "user").Obj()
	if u["comment"] != "50% off: é" {
		t.Errorf("comment read back %q, want PVE's %q", u["comment"], "50% off: é")
	}
	if _, ok := u["firstname"]; ok {
		t.Errorf("firstname \"0\" read back %q: write_user_config drops a Perl-false value", u["firstname"])
	}
	c.Call("POST", "/pools", url.Values{"poolid": {"tenant"}, "comment": {"team: a:b"}}).Must(t, "pool")
	raw := readUserCfg(t, s)
	// The next write writes what PVE read: the comment as decoded.
	for _, want := range []string{"user:pct@pve:1:0::::50% off%3A %C3%A9::", "pool:tenant:team%3A a%3Ab:"} {
		if !strings.Contains(raw, want) {
			t.Errorf("user.cfg has no %q:\n%s", want, raw)
		}
	}
	var p map[string]any
	for _, e := range c.Call("GET", "/pools", nil).Must(t, "pools").List() {
		if e["poolid"] == "tenant" {
			p = e
		}
	}
	if p == nil || p["comment"] != "team: a:b" {
		t.Errorf("pool read back %v, want comment %q", p, "team: a:b")
	}
}

// change_password as PVE runs it (AccessControl.pm, RPCEnvironment.pm
// reauth_user_for_user_modification): an API token is refused by the
// method's allowtoken 0; a caller other than root@pam must confirm with its
// own password, checked as its realm checks a login; root@pam needs no
// confirmation; only root@pam changes root@pam's password.
func TestChangePasswordReauthAsPVE(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{})
	root := simtest.NewClient(t, s, "pve01").Root()
	for _, u := range []string{"admin@pve", "bob@pve"} {
		root.Call("POST", "/access/users", url.Values{"userid": {u}, "password": {u + "-pass"}}).Must(t, "user "+u)
	}
	root.Call("PUT", "/access/acl", url.Values{"path": {"/"}, "roles": {"Administrator"}, "users": {"admin@pve"}}).Must(t, "acl")
	admin := simtest.NewClient(t, s, "pve01").Login("admin@pve", "admin@pve-pass")
	tok := root.Call("POST", "/access/users/admin@pve/token/ci", url.Values{"privsep": {"0"}}).Must(t, "token").Obj()
	viaToken := simtest.NewClient(t, s, "pve01").WithToken("admin@pve!ci", tok["value"].(string))
	set := func(extra url.Values) url.Values {
		v := url.Values{"userid": {"bob@pve"}, "password": {"bob-new-pass"}}
		for k, l := range extra {
			v[k] = l
		}
		return v
	}
	for _, tc := range []struct {
		name   string
		c      *simtest.Client
		params url.Values
		status int
		reason string
	}{
		{"token", viaToken, set(nil), 403, "Permission check failed (API tokens are not allowed for this method)"},
		{"no confirmation", admin, set(nil), 400, ""},
		{"wrong confirmation", admin, set(url.Values{"confirmation-password": {"not-admins"}}), 500, "invalid credentials"},
		{"root's password", admin, url.Values{"userid": {"root@pam"}, "password": {"root-new-pass"}, "confirmation-password": {"admin@pve-pass"}}, 403, "Permission check failed"},
		{"confirmed", admin, set(url.Values{"confirmation-password": {"admin@pve-pass"}}), 200, ""},
		{"root, unconfirmed", root, set(nil), 200, ""},
	} {
		r := tc.c.Call("PUT", "/access/password", tc.params)
		if r.Status != tc.status || tc.reason != "" && r.Reason != tc.reason {
			t.Errorf("%s: %d %q, want %d %q", tc.name, r.Status, r.Reason, tc.status, tc.reason)
		}
		if tc.name == "no confirmation" && r.Errs["confirmation-password"] != "password is required to modify user" {
			t.Errorf("%s: errors %v", tc.name, r.Errs)
		}
	}
	// The confirmed change took: bob logs in with the new password.
	simtest.NewClient(t, s, "pve01").Login("bob@pve", "bob-new-pass").Call("GET", "/version", nil).Must(t, "bob's login")
}
