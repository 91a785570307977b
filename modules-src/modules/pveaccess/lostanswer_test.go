package pveaccess

import (
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// writesTo counts the writes the lab received on method path, once it is
// idle, failing the test unless the first of them met the lost-answer
// fault (a test whose fault never fired proves nothing).
func (w *world) writesTo(method, path string) int {
	w.t.Helper()
	sent := w.sent(method, path)
	if len(sent) > 0 && sent[0].Fault == "" {
		w.t.Errorf("%s %s: the lost-answer fault did not fire", method, path)
	}
	return len(sent)
}

// sent lists the writes the lab received on method path, once it is idle.
func (w *world) sent(method, path string) []pvesim.Request {
	w.sim.WaitIdle()
	var out []pvesim.Request
	for _, r := range pveapitest.Mutating(w.sim) {
		if r.Method == method && r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// A write of pve_access whose answer is lost (PVE did it, then the
// connection dropped): sent once, settled by reading the object back (its
// id is the proof it is ours: the task names it), reported changed and
// verified with a warning saying what was lost; user.cfg holds the change.
// Without the settle read the run would end changed and unverified, never
// "nothing changed" and never with the write sent twice.
func TestLostAnswerSettledSentOnce(t *testing.T) {
	w := newWorld(t, 9)
	mustOK(t, "role", w.run(map[string]any{"type": "role", "roleid": "Automation", "privileges": []any{"VM.Audit"}}, false), true)
	for _, tc := range []struct {
		name, method, path string
		args               map[string]any
		line               string // in user.cfg after the run
	}{
		{"user create", "POST", "/access/users",
			map[string]any{"type": "user", "userid": "automation@pve", "comment": "robot"}, "user:automation@pve:1:0::::robot::"},
		{"group create", "POST", "/access/groups",
			map[string]any{"type": "group", "groupid": "ops"}, "group:ops:::"},
		{"user update", "PUT", "/access/users/automation@pve",
			map[string]any{"type": "user", "userid": "automation@pve", "comment": "robot 2"}, "user:automation@pve:1:0::::robot 2::"},
		{"acl", "PUT", "/access/acl",
			map[string]any{"type": "acl", "path": "/vms", "roles": []any{"Automation"}, "users": []any{"automation@pve"}}, "acl:1:/vms:automation@pve:Automation:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			w.sim.Faults().Add(pvesim.Fault{Method: tc.method, Path: path, Kind: pvesim.FaultLostAnswer, Count: 1})
			w.sim.ResetRequests()
			res := w.run(tc.args, false)
			if res["failed"] == true || res["changed"] != true {
				t.Fatalf("settled %s: %v", tc.name, res)
			}
			if !strings.Contains(strings.Join(warnings(res), " "), "was lost") {
				t.Errorf("the lost answer is not reported: %v", res["warnings"])
			}
			if n := w.writesTo(tc.method, path); n != 1 {
				t.Errorf("%s %s sent %d times, want 1", tc.method, path, n)
			}
			if cfg := w.userCfg(); !strings.Contains(cfg, tc.line+"\n") {
				t.Errorf("user.cfg lacks %q:\n%s", tc.line, cfg)
			}
			mustOK(t, tc.name+" rerun", w.run(tc.args, false), false)
		})
	}
}

// A token's create whose answer is lost: the token exists (settled by
// reading it back, sent once), but PVE's answer was the only place its
// secret was shown. The task says so and how to get a new one, returns no
// secret, and reports the change it made; a rotation then gives a secret.
func TestLostTokenAnswerSecretGoneSaysRotate(t *testing.T) {
	w := newWorld(t, 9)
	mustOK(t, "user", w.run(map[string]any{"type": "user", "userid": "automation@pve"}, false), true)
	path := "/access/users/automation@pve/token/gopve"
	w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: path, Kind: pvesim.FaultLostAnswer, Count: 1})
	w.sim.ResetRequests()
	tok := map[string]any{"type": "token", "userid": "automation@pve", "tokenid": "gopve"}
	res := w.exec(New(pveapi.Options{Retry: &pveapitest.FastRetry}), w.conn("", ""), tok, false, true)
	if res["failed"] == true || res["changed"] != true || res["token_secret"] != nil {
		t.Fatalf("lost token answer: %v", res)
	}
	if warn := strings.Join(warnings(res), " "); !strings.Contains(warn, "was lost") || !strings.Contains(warn, "state: rotated") {
		t.Errorf("the warnings do not say the secret is gone and how to get one: %v", res["warnings"])
	}
	if n := w.writesTo("POST", path); n != 1 {
		t.Errorf("the token's POST sent %d times, want 1", n)
	}
	if !strings.Contains(w.userCfg(), "token:automation@pve!gopve:") {
		t.Errorf("the token is not in user.cfg:\n%s", w.userCfg())
	}
	rot := w.exec(New(pveapi.Options{Retry: &pveapitest.FastRetry}), w.conn("", ""),
		map[string]any{"type": "token", "userid": "automation@pve", "tokenid": "gopve", "state": "rotated"}, false, true)
	if s, _ := rot["token_secret"].(string); rot["changed"] != true || len(s) != 36 {
		t.Fatalf("rotation after the lost answer: %v", rot)
	}
}

// Rotation is two writes; the DELETE's answer is lost. The read settles
// that the old token is gone, the POST follows once, and the new secret is
// returned: one rotation, not two, and the old token is not left behind.
func TestRotationLostDeleteAnswerSettled(t *testing.T) {
	w := newWorld(t, 9)
	mustOK(t, "user", w.run(map[string]any{"type": "user", "userid": "automation@pve"}, false), true)
	tok := map[string]any{"type": "token", "userid": "automation@pve", "tokenid": "gopve"}
	first := w.exec(New(pveapi.Options{Retry: &pveapitest.FastRetry}), w.conn("", ""), tok, false, true)
	old, _ := first["token_secret"].(string)
	if len(old) != 36 {
		t.Fatalf("create: %v", first)
	}
	path := "/access/users/automation@pve/token/gopve"
	w.sim.Faults().Add(pvesim.Fault{Method: "DELETE", Path: path, Kind: pvesim.FaultLostAnswer, Count: 1})
	w.sim.ResetRequests()
	tok["state"] = "rotated"
	res := w.exec(New(pveapi.Options{Retry: &pveapitest.FastRetry}), w.conn("", ""), tok, false, true)
	secret, _ := res["token_secret"].(string)
	if res["failed"] == true || res["changed"] != true || len(secret) != 36 || secret == old {
		t.Fatalf("rotation with a lost DELETE answer: %v", res)
	}
	if d := w.writesTo("DELETE", path); d != 1 {
		t.Errorf("rotation sent DELETE %d times, want 1", d)
	}
	if p := len(w.sent("POST", path)); p != 1 {
		t.Errorf("rotation sent POST %d times, want 1", p)
	}
}

// An ACL task that replaces a member's role makes two writes, the
// removal of the old entry and the addition of the new one. The answer to
// the first is lost: a read settles it by what that write alone does (the
// old entry gone), not by the task's end state, which only the second
// write brings. Each write is sent once, the run ends changed and
// verified, and the ACL holds exactly the new entry.
func TestACLReplaceLostFirstAnswerSettled(t *testing.T) {
	w := newWorld(t, 9)
	for _, args := range []map[string]any{
		{"type": "user", "userid": "automation@pve"},
		{"type": "acl", "path": "/vms", "roles": []any{"PVEAuditor"}, "users": []any{"automation@pve"}},
	} {
		mustOK(t, "setup", w.run(args, false), true)
	}
	w.sim.Faults().Add(pvesim.Fault{Method: "PUT", Path: "/access/acl", Kind: pvesim.FaultLostAnswer, Count: 1})
	w.sim.ResetRequests()
	res := w.run(map[string]any{"type": "acl", "path": "/vms", "roles": []any{"PVEVMUser"}, "users": []any{"automation@pve"}}, false)
	if res["failed"] == true || res["changed"] != true {
		t.Fatalf("replace with the first answer lost: %v", res)
	}
	if n := w.writesTo("PUT", "/access/acl"); n != 2 {
		t.Errorf("PUT /access/acl sent %d times, want 2 (the removal and the addition, once each)", n)
	}
	cfg := w.userCfg()
	if !strings.Contains(cfg, "acl:1:/vms:automation@pve:PVEVMUser:\n") || strings.Contains(cfg, "PVEAuditor") {
		t.Errorf("user.cfg's ACL:\n%s", cfg)
	}
	mustOK(t, "rerun", w.run(map[string]any{"type": "acl", "path": "/vms", "roles": []any{"PVEVMUser"}, "users": []any{"automation@pve"}}, false), false)
}

// A password change whose answer is lost: PVE shows no password, so no
// read can settle it. The run ends changed and unverified, the PUT sent
// once, never "nothing changed".
func TestLostPasswordAnswerUnverified(t *testing.T) {
	w := newWorld(t, 9)
	mustOK(t, "user", w.run(map[string]any{"type": "user", "userid": "bob@pve", "password": "bob-pass-1"}, false), true)
	conn := w.conn("", "")
	delete(conn, "api_token_id")
	delete(conn, "api_token_secret")
	conn["api_user"], conn["api_password"] = "root@pam", w.sim.RootPassword()
	w.sim.Faults().Add(pvesim.Fault{Method: "PUT", Path: "/access/password", Kind: pvesim.FaultLostAnswer, Count: 1})
	w.sim.ResetRequests()
	res := w.exec(New(pveapi.Options{Retry: &pveapitest.FastRetry}), conn,
		map[string]any{"type": "user", "userid": "bob@pve", "password": "bob-pass-2", "update_password": "always"}, false, false)
	msg := pveapi.String(res["msg"])
	if res["failed"] != true || res["changed"] != true || !strings.Contains(pveapi.String(res["changes_unverified"]), "set the password of user bob@pve") ||
		strings.Contains(msg, "nothing was changed") {
		t.Errorf("lost password answer: changed=%v unverified=%v msg=%s", res["changed"], res["changes_unverified"], msg)
	}
	if n := w.writesTo("PUT", "/access/password"); n != 1 {
		t.Errorf("PUT /access/password sent %d times, want 1", n)
	}
	if strings.Contains(w.log.String(), "bob-pass-2") || strings.Contains(w.log.String(), w.sim.RootPassword()) {
		t.Error("a password is in a result or log")
	}
}

// The ACL replace of the test above, in check mode: the two changes are
// predicted (the removal, then the addition) and nothing is written.
func TestACLReplaceCheckModeWritesNothing(t *testing.T) {
	w := newWorld(t, 9)
	for _, args := range []map[string]any{
		{"type": "user", "userid": "automation@pve"},
		{"type": "acl", "path": "/vms", "roles": []any{"PVEAuditor"}, "users": []any{"automation@pve"}},
	} {
		mustOK(t, "setup", w.run(args, false), true)
	}
	cfg, before := w.userCfg(), len(pveapitest.Mutating(w.sim))
	res := w.run(map[string]any{"type": "acl", "path": "/vms", "roles": []any{"PVEVMUser"}, "users": []any{"automation@pve"}}, true)
	changes := pveapi.String(res["changes"])
	if res["failed"] == true || res["changed"] != true || !strings.Contains(changes, "remove the ACL entries of /vms [automation@pve PVEAuditor propagate=1]") ||
		!strings.Contains(changes, "set the ACL entries of /vms") {
		t.Errorf("check mode: changed=%v changes=%v %v", res["changed"], res["changes"], res["msg"])
	}
	if n := len(pveapitest.Mutating(w.sim)); n != before || w.userCfg() != cfg {
		t.Errorf("check mode wrote %d times", n-before)
	}
}

// A rotation that fails half-way: the DELETE lands, PVE refuses the new
// token's POST. The run fails and is changed, the removal verified (the
// lab's user.cfg no longer holds the token), the creation reported as not
// made, each write sent once, and no secret in the result.
func TestRotationFailsHalfWayChanged(t *testing.T) {
	w := newWorld(t, 9)
	mustOK(t, "user", w.run(map[string]any{"type": "user", "userid": "automation@pve"}, false), true)
	tok := map[string]any{"type": "token", "userid": "automation@pve", "tokenid": "gopve"}
	mustOK(t, "token", w.run(tok, false), true)
	path := "/access/users/automation@pve/token/gopve"
	w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: path, Kind: pvesim.FaultError, Status: 500, Message: "create token failed: injected", Count: 1})
	w.sim.ResetRequests()
	tok["state"] = "rotated"
	res := w.run(tok, false)
	if res["failed"] != true || res["changed"] != true || res["token_secret"] != nil ||
		!strings.Contains(pveapi.String(res["changes_verified"]), "delete token automation@pve!gopve") ||
		strings.Contains(pveapi.String(res["changes_verified"]), "create token") {
		t.Errorf("half-way rotation: changed=%v verified=%v unverified=%v not run=%v %v", res["changed"], res["changes_verified"],
			res["changes_unverified"], res["changes_not_run"], res["msg"])
	}
	if d, p := len(w.sent("DELETE", path)), len(w.sent("POST", path)); d != 1 || p != 1 {
		t.Errorf("DELETE sent %d times, POST %d, want 1 and 1", d, p)
	}
	if strings.Contains(w.userCfg(), "token:automation@pve!gopve:") {
		t.Errorf("the lab still holds the token the run reports removed:\n%s", w.userCfg())
	}
}
