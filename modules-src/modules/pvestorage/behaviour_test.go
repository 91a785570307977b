package pvestorage

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

func (w *world) client() *pveapi.Client {
	c, err := pveapi.Connect(context.Background(), pveapitest.TokenConn(w.t, w.sim, "pve02"), pveapi.Options{})
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

func (w *world) config(id string) map[string]any {
	var cfg map[string]any
	if err := w.client().Get(context.Background(), "/storage/"+id, nil, &cfg); err != nil {
		w.t.Fatalf("reading %s: %v", id, err)
	}
	return cfg
}

// Drift made by hand on another node is corrected with one digest-guarded
// PUT and shown as a storage.cfg diff; S4: snippets added to local.
func TestDriftCorrectedWithDiff(t *testing.T) {
	w := newWorld(t, 9)
	if res := w.run(zfsArgs(), false); failed(res) {
		t.Fatal(res["msg"])
	}
	// By hand, as `pvesm set nvme-vm --content images --sparse 0` on pve02 would.
	pveapitest.Write(t, w.client(), "PUT", "/storage/nvme-vm", url.Values{"content": {"images"}, "sparse": {"0"}})
	w.sim.ResetRequests()
	check := w.run(zfsArgs(), true)
	if failed(check) || check["changed"] != true || len(pveapitest.Mutating(w.sim)) != 0 {
		t.Fatalf("check over drift: %v, writes %v", check["msg"], pveapitest.Mutating(w.sim))
	}
	res := w.run(zfsArgs(), false)
	if failed(res) || res["changed"] != true {
		t.Fatalf("drift: %v", res["msg"])
	}
	d := res["diff"].([]any)[0].(map[string]any)
	if !strings.Contains(d["before"].(string), "\tcontent images\n") || !strings.Contains(d["after"].(string), "\tcontent images,rootdir\n") ||
		!strings.Contains(d["before"].(string), "\tsparse 0\n") || !strings.Contains(d["after"].(string), "\tsparse 1\n") {
		t.Errorf("diff: %#v", d)
	}
	var put *pvesim.Request
	for _, r := range pveapitest.Mutating(w.sim) {
		if r.Method == "PUT" {
			r := r
			put = &r
		}
	}
	if put == nil || put.Params["digest"] == "" || put.Params["content"] != "images,rootdir" || put.Params["pool"] != "" {
		t.Errorf("PUT %+v: want digest, the changed keys only, never the fixed pool", put)
	}
	if cfg := w.config("nvme-vm"); cfg["content"] != "images,rootdir" || pveapi.String(cfg["sparse"]) != "1" {
		t.Errorf("after correction: %v", cfg)
	}

	local := map[string]any{"storage": "local", "type": "dir", "content": []any{"iso", "vztmpl", "backup", "import", "snippets"}}
	if res := w.run(local, false); failed(res) || res["changed"] != true || !strings.Contains(w.config("local")["content"].(string), "snippets") {
		t.Errorf("S4 snippets on local: %v", res["msg"])
	}
	if res := w.run(local, false); failed(res) || res["changed"] != false {
		t.Errorf("S4 rerun: %v %v", res["msg"], res["changes"])
	}
}

// Bad input fails naming the option, before anything is written.
func TestBadInputNamed(t *testing.T) {
	w := newWorld(t, 9)
	if res := w.run(zfsArgs(), false); failed(res) {
		t.Fatal(res["msg"])
	}
	w.sim.ResetRequests()
	cases := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"type": "zfs-over-iscsi"}, "type"},
		{map[string]any{"path": "/srv"}, "path: not an option of storage type zfspool"},
		{map[string]any{"pool": "tank"}, "pool: fixed for a zfspool storage"},
		{map[string]any{"type": "dir", "path": "/srv", "pool": nil, "sparse": nil}, "type: storage nvme-vm is a zfspool storage, not dir"},
		{map[string]any{"storage": "Bad_ID!"}, "storage: \"Bad_ID!\" contains illegal characters"},
		{map[string]any{"content": []any{"iso"}}, "content: a zfspool storage cannot hold \"iso\""},
		{map[string]any{"nodes": []any{"pve_01"}}, "nodes: \"pve_01\" does not look like a valid node name"},
		{map[string]any{"bwlimit": map[string]any{"fast": 1}}, "bwlimit:"},
	}
	for _, c := range cases {
		args := zfsArgs()
		for k, v := range c.args {
			if v == nil {
				delete(args, k)
			} else {
				args[k] = v
			}
		}
		res := w.run(args, false)
		if !failed(res) || !strings.Contains(res["msg"].(string), c.want) {
			t.Errorf("%v: %v, want a failure mentioning %q", c.args, res["msg"], c.want)
		}
		if res["changed"] != false {
			t.Errorf("%v: changed", c.args)
		}
	}
	if m := pveapitest.Mutating(w.sim); len(m) != 0 {
		t.Errorf("bad input wrote: %+v", m)
	}
	// PVE-8-only option on PVE 9, refused after GET /version.
	res := w.run(map[string]any{"storage": "bk", "type": "dir", "path": "/srv/b", "maxfiles": 3}, false)
	if !failed(res) || !strings.Contains(res["msg"].(string), "maxfiles: not an option of storage type dir on PVE 9") {
		t.Errorf("maxfiles on PVE 9: %v", res["msg"])
	}
	res = w.run(map[string]any{"storage": "cc", "type": "dir"}, false)
	if !failed(res) || !strings.Contains(res["msg"].(string), "path: required to create a dir storage") {
		t.Errorf("dir without path: %v", res["msg"])
	}
}

// Faults: reads retried through 5xx and resets; a create whose answer is
// lost is not sent again; lock contention is retried; a token without
// audit rights gets a clear error, not a create.
func TestFaults(t *testing.T) {
	w := newWorld(t, 9)
	f := w.sim.Faults()
	f.Add(pvesim.Fault{Method: "GET", Path: "/storage/nvme-vm", Kind: pvesim.FaultError, Status: 500, Message: "proxy loop detected", Count: 1})
	f.Add(pvesim.Fault{Method: "GET", Path: "/version", Kind: pvesim.FaultReset, Count: 1})
	f.Add(pvesim.Fault{Method: "POST", Path: "/storage", Kind: pvesim.FaultLostAnswer, Count: 1})
	res := w.run(zfsArgs(), false)
	if failed(res) || res["changed"] != true {
		t.Fatalf("create through faults: %v", res["msg"])
	}
	if left := f.List(); len(left) != 0 {
		t.Errorf("faults that never fired: %+v", left)
	}
	posts := 0
	for _, r := range pveapitest.Mutating(w.sim) {
		if r.Method == "POST" && r.Path == "/storage" {
			posts++
		}
	}
	if posts != 1 || !strings.Contains(pveapi.String(res["warnings"]), `the answer to "create storage nvme-vm" was lost`) {
		t.Errorf("lost create: %d POSTs, warnings %v", posts, res["warnings"])
	}

	f.Add(pvesim.Fault{Method: "PUT", Path: "/storage/nvme-vm", Kind: pvesim.FaultLock, Delay: time.Millisecond,
		LockFile: "/var/lock/pve-manager/pve-storage-nvme-vm", Count: 2})
	args := zfsArgs()
	args["disable"] = true
	w.sim.ResetRequests()
	if res := w.run(args, false); failed(res) || res["changed"] != true {
		t.Errorf("update through lock contention: %v", res["msg"])
	}
	if m := pveapitest.Mutating(w.sim); len(m) != 3 {
		t.Errorf("want two locked PUTs and one that went through, got %+v", m)
	}

	// K19: a privilege-separated token with no rights at all.
	id, secret, err := w.sim.AddToken("pve01", pvesim.TokenSpec{User: "ci@pve", Name: "blind", Privsep: true})
	if err != nil {
		t.Fatal(err)
	}
	w.conn["api_token_id"], w.conn["api_token_secret"] = id, secret
	w.sim.ResetRequests()
	args = zfsArgs()
	args["storage"] = "other"
	res = w.run(args, false)
	if !failed(res) || !strings.Contains(res["msg"].(string), "Permission check failed") || !strings.Contains(res["msg"].(string), "does not guess") {
		t.Errorf("blind token: %v", res["msg"])
	}
	if m := pveapitest.Mutating(w.sim); len(m) != 0 {
		t.Errorf("blind token wrote: %+v", m)
	}
	if strings.Contains(pveapi.String(res), secret) {
		t.Errorf("token secret in the result")
	}
}

// Password auth, node status, and removal.
func TestPasswordStatusAbsent(t *testing.T) {
	w := newWorld(t, 8)
	delete(w.conn, "api_token_id")
	delete(w.conn, "api_token_secret")
	w.conn["api_user"], w.conn["api_password"] = "root@pam", w.sim.RootPassword()
	args := map[string]any{"storage": "scratch", "type": "dir", "path": "/srv/scratch", "content": []any{"images"}, "nodes": []any{"pve01", "pve02"}, "node_status": true}
	res := w.run(args, false)
	if failed(res) || res["changed"] != true {
		t.Fatalf("create with a password: %v", res["msg"])
	}
	st, _ := res["node_status"].(map[string]any)
	if len(st) != 2 || st["pve01"].(map[string]any)["active"] != true || st["pve03"] != nil {
		t.Errorf("node_status %v", res["node_status"])
	}
	if strings.Contains(pveapi.String(res), w.sim.RootPassword()) {
		t.Errorf("password in the result")
	}
	w.sim.ResetRequests()
	gone := map[string]any{"storage": "scratch", "state": "absent"}
	if res := w.run(gone, true); failed(res) || res["changed"] != true {
		t.Errorf("absent check: %v", res["msg"])
	}
	for _, r := range pveapitest.Mutating(w.sim) {
		if r.Path != "/access/ticket" {
			t.Errorf("check mode sent %s %s", r.Method, r.Path)
		}
	}
	if res := w.run(gone, false); failed(res) || res["changed"] != true {
		t.Errorf("absent: %v", res["msg"])
	}
	if res := w.run(gone, false); failed(res) || res["changed"] != false {
		t.Errorf("absent again: %v", res["msg"])
	}
}

// `changed` after a failed write tells the truth: a PUT PVE refused for a
// lock it never got changed nothing; a PUT whose outcome is unknown counts
// as made but unverified.
func TestChangedAfterFailedWrite(t *testing.T) {
	w := newWorld(t, 9)
	if res := w.run(zfsArgs(), false); failed(res) {
		t.Fatal(res["msg"])
	}
	args := zfsArgs()
	args["disable"] = true
	w.sim.Faults().Add(pvesim.Fault{Method: "PUT", Path: "/storage/nvme-vm", Kind: pvesim.FaultLock, Delay: time.Millisecond})
	res := w.run(args, false)
	if !failed(res) || res["changed"] != false || !strings.Contains(pveapi.String(res["changes_not_run"]), "update storage nvme-vm") {
		t.Errorf("lock never obtained: changed=%v not_run=%v msg=%v", res["changed"], res["changes_not_run"], res["msg"])
	}
	w.sim.Faults().Clear()
	w.sim.Faults().Add(pvesim.Fault{Method: "PUT", Path: "/storage/nvme-vm", Kind: pvesim.FaultError, Status: 500, Message: "unexpected failure", Count: 1})
	res = w.run(args, false)
	if !failed(res) || res["changed"] != true || !strings.Contains(pveapi.String(res["changes_unverified"]), "update storage nvme-vm") {
		t.Errorf("unknown outcome: changed=%v unverified=%v msg=%v", res["changed"], res["changes_unverified"], res["msg"])
	}
}

// -vvv logs each request (method, path, outcome) and never a credential;
// validate_certs: false is warned about.
func TestLogAndInsecureWarning(t *testing.T) {
	w := newWorld(t, 9)
	full := map[string]any{}
	for k, v := range w.conn {
		full[k] = v
	}
	for k, v := range zfsArgs() {
		full[k] = v
	}
	delete(full, "api_fingerprint")
	full["validate_certs"] = false
	var stderr strings.Builder
	m := New(pveapi.Options{Retry: &pveapitest.FastRetry})
	res := ansible.Execute(context.Background(), &m, &ansible.Invocation{Params: full, Verbosity: 3}, func(string) (string, bool) { return "", false }, &stderr)
	if failed(res) {
		t.Fatal(res["msg"])
	}
	log := stderr.String()
	if !strings.Contains(log, "GET /storage/nvme-vm") || !strings.Contains(log, "POST /storage -> ok") {
		t.Errorf("-vvv log: %s", log)
	}
	secret := w.conn["api_token_secret"].(string)
	if strings.Contains(log, secret) || strings.Contains(pveapi.String(res), secret) {
		t.Errorf("the token secret leaked")
	}
	if !strings.Contains(pveapi.String(res["warnings"]), "validate_certs is false") {
		t.Errorf("no warning for validate_certs: false: %v", res["warnings"])
	}
}
