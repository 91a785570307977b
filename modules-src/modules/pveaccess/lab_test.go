package pveaccess

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

type world struct {
	t   *testing.T
	sim *pvesim.Sim
	log bytes.Buffer
}

func newWorld(t *testing.T, version int) *world {
	s := pveapitest.Start(t, version, 2)
	pveapitest.Cluster(t, s)
	return &world{t: t, sim: s}
}

func (w *world) conn(id, secret string) map[string]any {
	c := pveapitest.TokenConn(w.t, w.sim, "pve01")
	if id == "" {
		id, secret = c.TokenID, c.TokenSecret
	}
	return map[string]any{"api_host": c.Host, "api_port": c.Port, "api_token_id": id, "api_token_secret": secret,
		"api_fingerprint": c.Fingerprint}
}

// exec runs module m like Ansible would, with diff mode on; every result
// is kept (as JSON) to look for leaked secrets.
func (w *world) exec(m ansible.Module, conn, args map[string]any, check, noLog bool) map[string]any {
	w.t.Helper()
	full := map[string]any{}
	for k, v := range conn {
		full[k] = v
	}
	for k, v := range args {
		full[k] = v
	}
	env := func(string) (string, bool) { return "", false }
	res := ansible.Execute(context.Background(), &m, &ansible.Invocation{Params: full, CheckMode: check, Diff: true, NoLog: noLog, Verbosity: 4}, env, &w.log)
	b, _ := json.Marshal(res)
	w.log.Write(b)
	return res
}

func (w *world) run(args map[string]any, check bool) map[string]any {
	return w.exec(New(pveapi.Options{Retry: &pveapitest.FastRetry}), w.conn("", ""), args, check, false)
}

func (w *world) userCfg() string {
	b, err := os.ReadFile(filepath.Join(w.sim.EtcPveDir("pve01"), "user.cfg"))
	if err != nil {
		w.t.Fatal(err)
	}
	return string(b)
}

func mustOK(t *testing.T, what string, res map[string]any, changed bool) {
	t.Helper()
	if res["failed"] == true || res["changed"] != changed {
		t.Fatalf("%s: want changed=%v: %v", what, changed, res)
	}
}

// Each kind: check mode predicts and writes nothing, the real run changes
// exactly that (user.cfg shows it), the rerun changes nothing and writes
// nothing; then absent removes it the same way.
func TestKindsCheckRealRerun(t *testing.T) {
	for _, v := range []int{9, 8} {
		t.Run(fmt.Sprintf("PVE%d", v), func(t *testing.T) {
			w := newWorld(t, v)
			for _, tc := range []struct {
				name string
				args map[string]any
				line string // in user.cfg after the real run
			}{
				{"group", map[string]any{"type": "group", "groupid": "ops", "comment": "operators"}, "group:ops::operators:"},
				{"user", map[string]any{"type": "user", "userid": "automation@pve", "comment": "robot", "groups": []any{"ops"}, "password": "s3cret-pass"},
					"user:automation@pve:1:0::::robot::"},
				{"role", map[string]any{"type": "role", "roleid": "Automation", "privileges": []any{"VM.Audit", "Datastore.Audit", "Sys.Audit"}},
					"role:Automation:Datastore.Audit,Sys.Audit,VM.Audit:"},
				{"token", map[string]any{"type": "token", "userid": "automation@pve", "tokenid": "gopve", "comment": "ci"},
					"token:automation@pve!gopve:0:1:ci:"},
				{"acl", map[string]any{"type": "acl", "path": "/", "roles": []any{"Automation"}, "users": []any{"automation@pve"}, "tokens": []any{"automation@pve!gopve"}},
					"acl:1:/:automation@pve,automation@pve!gopve:Automation:"},
			} {
				before := len(pveapitest.Mutating(w.sim))
				cfg := w.userCfg()
				mustOK(t, tc.name+" check", w.run(tc.args, true), true)
				if n := len(pveapitest.Mutating(w.sim)); n != before || w.userCfg() != cfg {
					t.Fatalf("%s: check mode wrote (%d writes)", tc.name, n-before)
				}
				mustOK(t, tc.name+" real", w.run(tc.args, false), true)
				if !strings.Contains(w.userCfg(), tc.line+"\n") {
					t.Fatalf("%s: user.cfg lacks %q:\n%s", tc.name, tc.line, w.userCfg())
				}
				after := len(pveapitest.Mutating(w.sim))
				mustOK(t, tc.name+" rerun", w.run(tc.args, false), false)
				mustOK(t, tc.name+" rerun check", w.run(tc.args, true), false)
				if n := len(pveapitest.Mutating(w.sim)); n != after {
					t.Fatalf("%s: the rerun wrote %d times", tc.name, n-after)
				}
			}
			if strings.Contains(w.log.String(), "s3cret-pass") {
				t.Error("the user's password is in a result or log")
			}
			for _, kind := range []map[string]any{
				{"type": "acl", "path": "/", "roles": []any{"Automation"}, "users": []any{"automation@pve"}, "tokens": []any{"automation@pve!gopve"}},
				{"type": "token", "userid": "automation@pve", "tokenid": "gopve"},
				{"type": "role", "roleid": "Automation"},
				{"type": "user", "userid": "automation@pve"},
				{"type": "group", "groupid": "ops"},
			} {
				kind["state"] = "absent"
				mustOK(t, fmt.Sprint(kind["type"], " absent check"), w.run(kind, true), true)
				mustOK(t, fmt.Sprint(kind["type"], " absent"), w.run(kind, false), true)
				mustOK(t, fmt.Sprint(kind["type"], " absent rerun"), w.run(kind, false), false)
			}
			if cfg := w.userCfg(); strings.Contains(cfg, "automation") || strings.Contains(cfg, "ops") {
				t.Errorf("left behind:\n%s", cfg)
			}
		})
	}
}
