package pveaccess

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/modules/pvestorage"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// The token's secret: to a no_log task once, as token_secret; a task
// without no_log gets the placeholder and the secret appears nowhere; a
// rerun says it cannot be shown again; rotation is one DELETE and one POST
// and gives a new secret. The secret then proves pve_storage's documented
// privilege (Datastore.Allocate on /storage) and fails clearly without it.
func TestTokenSecretOnceAndStoragePrivileges(t *testing.T) {
	w := newWorld(t, 9)
	for _, args := range []map[string]any{
		{"type": "user", "userid": "automation@pve"},
		{"type": "role", "roleid": "StorageOnly", "privileges": []any{"Datastore.Allocate", "Datastore.Audit"}},
	} {
		mustOK(t, "setup", w.run(args, false), true)
	}
	tok := map[string]any{"type": "token", "userid": "automation@pve", "tokenid": "gopve"}
	res := w.exec(New(pveapi.Options{Retry: &pveapitest.FastRetry}), w.conn("", ""), tok, false, true)
	secret, _ := res["token_secret"].(string)
	if res["changed"] != true || len(secret) != 36 || res["full_tokenid"] != "automation@pve!gopve" {
		t.Fatalf("no_log create: %v", res)
	}
	again := w.run(tok, false)
	if again["changed"] != false || !strings.Contains(strings.Join(warnings(again), " "), "cannot be returned again") || again["token_secret"] != nil {
		t.Fatalf("rerun: %v", again)
	}
	before := len(pveapitest.Mutating(w.sim))
	rot := w.run(map[string]any{"type": "token", "userid": "automation@pve", "tokenid": "gopve", "state": "rotated"}, false)
	writes := pveapitest.Mutating(w.sim)[before:]
	if rot["changed"] != true || rot["token_secret"] != "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" || len(writes) != 2 ||
		writes[0].Method != "DELETE" || writes[1].Method != "POST" {
		t.Fatalf("rotation without no_log: %v, writes %v", rot, writes)
	}
	for _, r := range pveapitest.Mutating(w.sim) {
		for _, v := range r.Params {
			if secret != "" && strings.Contains(v, secret) {
				t.Error("the secret is in the request log")
			}
		}
	}
	if strings.Contains(w.log.String(), secret) {
		// only the no_log task's own result may hold it: the log of every
		// other run must not
		if strings.Count(w.log.String(), secret) > 1 {
			t.Error("the first secret leaked beyond its no_log result")
		}
	}
	res = w.exec(New(pveapi.Options{Retry: &pveapitest.FastRetry}), w.conn("", ""),
		map[string]any{"type": "token", "userid": "automation@pve", "tokenid": "gopve", "state": "rotated"}, false, true)
	secret = res["token_secret"].(string)
	// Exactly the documented privilege, for the user and the token.
	acl := map[string]any{"type": "acl", "path": "/storage", "roles": []any{"StorageOnly"}, "users": []any{"automation@pve"}, "tokens": []any{"automation@pve!gopve"}}
	mustOK(t, "acl", w.run(acl, false), true)
	storage := map[string]any{"storage": "d1", "type": "dir", "path": "/srv/d1", "content": []any{"iso"}}
	conn := w.conn("automation@pve!gopve", secret)
	st := pvestorage.New(pveapi.Options{Retry: &pveapitest.FastRetry})
	if r := w.exec(st, conn, storage, false, false); r["changed"] != true || r["failed"] == true {
		t.Fatalf("pve_storage with Datastore.Allocate on /storage: %v", r)
	}
	// One fewer: the role without Datastore.Allocate.
	mustOK(t, "role", w.run(map[string]any{"type": "role", "roleid": "StorageOnly", "privileges": []any{"Datastore.Audit"}}, false), true)
	r := w.exec(st, conn, map[string]any{"storage": "d2", "type": "dir", "path": "/srv/d2"}, false, false)
	if r["failed"] != true || !strings.Contains(r["msg"].(string), "Datastore.Allocate") {
		t.Fatalf("pve_storage without Datastore.Allocate: %v", r)
	}
}

func warnings(res map[string]any) []string {
	var out []string
	if l, ok := res["warnings"].([]any); ok {
		for _, w := range l {
			out = append(out, w.(string))
		}
	}
	if l, ok := res["warnings"].([]string); ok {
		out = append(out, l...)
	}
	return out
}

// Bad input fails naming the option, nothing written.
func TestBadInputNamedNothingWritten(t *testing.T) {
	w := newWorld(t, 8)
	before := len(pveapitest.Mutating(w.sim))
	for _, tc := range []struct {
		args  map[string]any
		param string
	}{
		{map[string]any{"type": "role", "roleid": "R", "privileges": []any{"VM.Replicate"}}, "privileges"}, // PVE 9 only
		{map[string]any{"type": "role", "roleid": "PVEVMAdmin", "privileges": []any{"VM.Audit"}}, "roleid"},
		{map[string]any{"type": "token", "userid": "root@pam", "tokenid": "bad!id"}, "tokenid"},
		{map[string]any{"type": "acl", "path": "/vms/12", "roles": []any{"PVEAuditor"}, "users": []any{"root@pam"}}, "path"},
		{map[string]any{"type": "acl", "path": "/", "roles": []any{"Nope"}, "users": []any{"root@pam"}}, "roles"},
		{map[string]any{"type": "user", "userid": "bob@pam", "password": "long-enough"}, "password"},
		// user.cfg's encode_text/decode_text and Perl's truth (the lab's
		// TestUserCfgTextAsPVEReadsIt): these would never read back.
		{map[string]any{"type": "user", "userid": "carol@pve", "comment": "50%25 off"}, "comment"},
		{map[string]any{"type": "group", "groupid": "ops", "comment": "0"}, "comment"},
		{map[string]any{"type": "user", "userid": "carol@pve", "firstname": "%C3%A9"}, "firstname"},
		{map[string]any{"type": "token", "userid": "root@pam", "tokenid": "ci", "comment": "x %4a"}, "comment"},
		// The API schema, checked when the write is planned (email-opt,
		// minimums): refused before any write, as PVE's 400 would be.
		{map[string]any{"type": "user", "userid": "dave@pve", "email": "not an email"}, "email"},
		{map[string]any{"type": "user", "userid": "dave@pve", "expire": -1}, "expire"},
		{map[string]any{"type": "token", "userid": "root@pam", "tokenid": "ci", "expire": -1}, "expire"},
		// What pve_verify_email lets through but user.cfg cannot keep.
		{map[string]any{"type": "user", "userid": "dave@pve", "email": "0"}, "email"},
		{map[string]any{"type": "user", "userid": "dave@pve", "email": "dave@example.com\n"}, "email"},
	} {
		r := w.run(tc.args, false)
		if r["failed"] != true || !strings.HasPrefix(r["msg"].(string), tc.param+":") {
			t.Errorf("%v: %v", tc.args, r["msg"])
		}
	}
	if n := len(pveapitest.Mutating(w.sim)); n != before {
		t.Errorf("bad input wrote %d times", n-before)
	}
}

// A task of several writes whose later write PVE would refuse: the
// schema check runs when the writes are planned, so the first is never
// sent. A rotation with a bad expire used to delete the token, then have
// its new one refused: the user was left without a token.
func TestMultiWriteRefusedBeforeFirstWrite(t *testing.T) {
	w := newWorld(t, 9)
	for _, args := range []map[string]any{
		{"type": "user", "userid": "automation@pve", "password": "first-pass-1"},
		{"type": "token", "userid": "automation@pve", "tokenid": "gopve"},
	} {
		mustOK(t, "setup", w.run(args, false), true)
	}
	cfg, before := w.userCfg(), len(pveapitest.Mutating(w.sim))
	for _, tc := range []struct {
		args  map[string]any
		param string
	}{
		{map[string]any{"type": "token", "userid": "automation@pve", "tokenid": "gopve", "state": "rotated", "expire": -1}, "expire"},
		{map[string]any{"type": "user", "userid": "automation@pve", "email": "no address", "password": "second-pass-2"}, "email"},
		// An update and a password: PVE refuses a token the password's
		// PUT (allowtoken 0), after the update would have landed.
		{map[string]any{"type": "user", "userid": "automation@pve", "comment": "x", "password": "second-pass-2", "update_password": "always"}, "update_password"},
	} {
		for _, check := range []bool{true, false} {
			r := w.run(tc.args, check)
			if r["failed"] != true || r["changed"] != false || !strings.HasPrefix(pveapi.String(r["msg"]), tc.param+":") {
				t.Errorf("%v (check=%v): changed=%v %v", tc.args, check, r["changed"], r["msg"])
			}
		}
	}
	if n := len(pveapitest.Mutating(w.sim)); n != before || w.userCfg() != cfg {
		t.Errorf("refused tasks wrote %d times; user.cfg before:\n%s\nafter:\n%s", n-before, cfg, w.userCfg())
	}
}

// update_password: always from a user logged in with its password: PVE
// asks every caller but root@pam to confirm with its own password
// (reauth_user_for_user_modification), which the module sends from
// api_password; the user's new password then logs in, and neither
// password is in any result.
func TestPasswordChangeConfirmedByCaller(t *testing.T) {
	w := newWorld(t, 9)
	for _, args := range []map[string]any{
		{"type": "user", "userid": "admin@pve", "password": "admin-pass-1"},
		{"type": "acl", "path": "/", "roles": []any{"Administrator"}, "users": []any{"admin@pve"}},
		{"type": "user", "userid": "bob@pve", "password": "bob-pass-1"},
	} {
		mustOK(t, "setup", w.run(args, false), true)
	}
	conn := w.conn("", "")
	delete(conn, "api_token_id")
	delete(conn, "api_token_secret")
	conn["api_user"], conn["api_password"] = "admin@pve", "admin-pass-1"
	args := map[string]any{"type": "user", "userid": "bob@pve", "password": "bob-pass-2", "update_password": "always"}
	res := w.exec(New(pveapi.Options{Retry: &pveapitest.FastRetry}), conn, args, false, false)
	if res["failed"] == true || res["changed"] != true {
		t.Fatalf("password change by admin@pve: %v", res["msg"])
	}
	login := func(pw string) error {
		c := pveapitest.TokenConn(t, w.sim, "pve01")
		c.TokenID, c.TokenSecret, c.User, c.Password = "", "", "bob@pve", pw
		_, err := pveapi.Connect(context.Background(), c, pveapi.Options{Retry: &pveapitest.FastRetry})
		return err
	}
	if err := login("bob-pass-2"); err != nil {
		t.Errorf("bob cannot log in with the new password: %v", err)
	}
	if err := login("bob-pass-1"); err == nil {
		t.Errorf("bob still logs in with the old password")
	}
	for _, secret := range []string{"admin-pass-1", "bob-pass-2"} {
		if strings.Contains(w.log.String(), secret) {
			t.Errorf("a password is in a result or log")
		}
	}
}

// Drift by hand (what pveum acl modify writes): another flag and an extra
// role for a named member are reported in the diff and set back exactly.
func TestACLDriftFixedExactly(t *testing.T) {
	w := newWorld(t, 9)
	mustOK(t, "user", w.run(map[string]any{"type": "user", "userid": "a@pve"}, false), true)
	acl := map[string]any{"type": "acl", "path": "/storage", "roles": []any{"PVEDatastoreUser"}, "users": []any{"a@pve"}}
	mustOK(t, "acl", w.run(acl, false), true)
	want := w.userCfg()
	c := pveapitest.TokenConn(t, w.sim, "pve01")
	client, err := pveapi.Connect(context.Background(), c, pveapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pveapitest.Write(t, client, "PUT", "/access/acl", url.Values{"path": {"/storage"}, "roles": {"PVEDatastoreUser,PVEAuditor"}, "users": {"a@pve"}, "propagate": {"0"}})
	check := w.run(acl, true)
	diff := fmt.Sprint(check["diff"])
	if check["changed"] != true || !strings.Contains(diff, "a@pve PVEAuditor propagate=0") || !strings.Contains(diff, "a@pve PVEDatastoreUser propagate=1") {
		t.Fatalf("drift not reported: %v", check)
	}
	mustOK(t, "fix", w.run(acl, false), true)
	if got := w.userCfg(); got != want {
		t.Errorf("user.cfg after the fix:\n%s\nwant:\n%s", got, want)
	}
	mustOK(t, "rerun", w.run(acl, false), false)
}
