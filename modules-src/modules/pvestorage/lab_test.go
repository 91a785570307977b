package pvestorage

// End to end on the lab, PVE 8 and 9: the real gopve binary on pve01 of a
// two-node cluster, talking to the simulated API the way it talks to PVE:
// local mode through the node's pvesh, and over HTTPS to pve02 with every
// auth and TLS variant. The lab's request log is the witness: a no-op run
// makes at most two GETs, check mode sends no write, faults are survived
// without duplicated writes.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
)

func TestLab(t *testing.T) {
	t.Parallel()
	for _, v := range []int{9, 8} {
		t.Run(fmt.Sprintf("PVE%d", v), func(t *testing.T) { t.Parallel(); testLab(t, v) })
	}
}

type labRun struct {
	t   *testing.T
	lab *labctl.Lab
	bin string
	sim *pvesim.Sim
}

func (l *labRun) invoke(args map[string]any, check bool) map[string]any {
	l.t.Helper()
	return labtest.Invoke(l.t, l.lab, l.bin, "pve_storage", args, check)
}

func (l *labRun) ssh(node, cmd string) string {
	l.t.Helper()
	out, err := l.lab.SSH(node, cmd)
	if err != nil {
		l.t.Fatalf("%s: %s: %v %s", node, cmd, err, out)
	}
	return out
}

func (l *labRun) writes() []pvesim.Request {
	var out []pvesim.Request
	for _, r := range l.sim.Requests() {
		if r.Mutating() && r.Path != "/access/ticket" {
			out = append(out, r)
		}
	}
	return out
}

func with(base map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
		} else {
			out[kv[i].(string)] = kv[i+1]
		}
	}
	return out
}

func testLab(t *testing.T, version int) {
	lab, _ := labtest.Start(t, version, 2)
	bin := labtest.NodeBinary
	l := &labRun{t: t, lab: lab, bin: bin, sim: lab.Sim()}
	nodes := lab.Nodes()
	if _, err := l.sim.CreateCluster("pve01", "lab", nodes[0].Addr); err != nil {
		t.Fatal(err)
	}
	if _, err := l.sim.AddNode("pve01", "pve02", nodes[1].Addr, false); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if info, _ := l.sim.Node("pve02"); info.Serving {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("pve02's API did not come back after the join")
		}
	}
	for _, n := range []string{"pve01", "pve02"} {
		l.ssh(n, "mkdir -p /srv/gopve /srv/gopve2")
	}
	dir := map[string]any{"storage": "gopve-dir", "type": "dir", "path": "/srv/gopve",
		"content": []any{"iso", "backup"}, "nodes": []any{"pve01", "pve02"}}

	// Local mode: root on pve01, no api_host → the node's own API (pvesh).
	l.sim.ResetRequests()
	check := l.invoke(dir, true)
	if failed(check) || check["changed"] != true || len(l.writes()) != 0 {
		t.Fatalf("local check: %v, writes %+v", check["msg"], l.writes())
	}
	res := l.invoke(dir, false)
	if failed(res) || res["changed"] != true || pveapi.String(res["changes"]) != pveapi.String(check["changes"]) {
		t.Fatalf("local create: %v (%v vs %v)", res["msg"], res["changes"], check["changes"])
	}
	t.Logf("local mode create: %v", res["msg"])
	// S1: pve02 sees it in its own pvesm.
	if out := l.ssh("pve02", "pvesm status --storage gopve-dir"); !strings.Contains(out, "gopve-dir") {
		t.Errorf("pve02 does not see gopve-dir: %s", out)
	}
	l.sim.ResetRequests()
	if res := l.invoke(dir, false); failed(res) || res["changed"] != false {
		t.Fatalf("local no-op: %v %v", res["msg"], res["changes"])
	}
	t.Logf("local no-op requests: %d", len(l.sim.Requests()))
	if reqs := l.sim.Requests(); len(reqs) > 2 || len(l.writes()) != 0 {
		t.Errorf("local no-op made %d requests, want at most two GETs: %+v", len(reqs), reqs)
	}

	// Over HTTPS to pve02, every auth and TLS variant.
	creds := lab.Credentials()
	info, _ := l.sim.Node("pve02")
	api := map[string]any{"api_host": info.Addr, "api_fingerprint": info.Fingerprint}
	tokenShort := strings.TrimPrefix(creds.TokenID, "root@pam!")
	l.ssh("pve01", "cat > /root/pve-root-ca.pem <<'EOF'\n"+string(info.CAPEM)+"EOF")
	variants := map[string]map[string]any{
		"token, full id (K7)":  with(api, "api_token_id", creds.TokenID, "api_token_secret", creds.TokenSecret),
		"token, short id (K7)": with(api, "api_user", "root@pam", "api_token_id", tokenShort, "api_token_secret", creds.TokenSecret),
		"password":             with(api, "api_user", "root@pam", "api_password", creds.Password),
		"ca_path (K14)":        with(api, "api_fingerprint", nil, "ca_path", "/root/pve-root-ca.pem", "api_token_id", creds.TokenID, "api_token_secret", creds.TokenSecret),
	}
	for name, conn := range variants {
		l.sim.ResetRequests()
		res := l.invoke(with(dir, flatten(conn)...), false)
		if failed(res) || res["changed"] != false {
			t.Errorf("%s: %v", name, res["msg"])
		}
		gets := 0
		for _, r := range l.sim.Requests() {
			if r.Method == "GET" {
				gets++
			}
		}
		if gets > 2 || len(l.writes()) != 0 {
			t.Errorf("%s: a no-op made %d GETs and writes %+v", name, gets, l.writes())
		}
		if strings.Contains(pveapi.String(res), creds.TokenSecret) || strings.Contains(pveapi.String(res), creds.Password) {
			t.Errorf("%s: a secret in the result", name)
		}
	}
	token := variants["token, full id (K7)"]
	res = l.invoke(with(dir, flatten(with(token, "api_fingerprint", nil))...), false)
	if !failed(res) || !strings.Contains(res["msg"].(string), "api_fingerprint") || !strings.Contains(res["msg"].(string), info.Fingerprint) {
		t.Errorf("unverified certificate (K14): %v", res["msg"])
	}

	// Drift by hand on pve02, corrected with a diff; check mode writes nothing.
	l.ssh("pve02", "pvesm set gopve-dir --content iso")
	l.sim.ResetRequests()
	check = l.invoke(with(dir, flatten(token)...), true)
	if failed(check) || check["changed"] != true || len(l.writes()) != 0 {
		t.Errorf("drift check: %v, writes %+v", check["msg"], l.writes())
	}
	res = l.invoke(with(dir, flatten(token)...), false)
	d, _ := res["diff"].([]any)
	if failed(res) || res["changed"] != true || len(d) != 1 || !strings.Contains(pveapi.String(d[0].(map[string]any)["after"]), "content backup,iso") {
		t.Errorf("drift: %v %v", res["msg"], res["diff"])
	}
	t.Logf("drift diff: %v", pveapi.String(d))
	if out := l.ssh("pve01", "pvesh get /storage/gopve-dir --output-format json"); !strings.Contains(out, `"backup,iso"`) {
		t.Errorf("after the correction: %s", out)
	}

	// Faults.
	l.sim.ResetRequests()
	f := l.sim.Faults()
	f.Add(pvesim.Fault{Method: "GET", Path: "/version", Kind: pvesim.FaultError, Status: 503, Message: "Service Unavailable", Count: 1})
	f.Add(pvesim.Fault{Method: "GET", Path: "/storage/gopve-dir2", Kind: pvesim.FaultReset, Count: 1})
	f.Add(pvesim.Fault{Method: "POST", Path: "/storage", Kind: pvesim.FaultLostAnswer, Count: 1})
	dir2 := with(dir, "storage", "gopve-dir2", "path", "/srv/gopve2")
	res = l.invoke(with(dir2, flatten(token)...), false)
	posts := 0
	for _, r := range l.writes() {
		if r.Method == "POST" && r.Path == "/storage" {
			posts++
		}
	}
	t.Logf("through faults: %v; warnings %v", res["msg"], res["warnings"])
	if failed(res) || res["changed"] != true || posts != 1 || len(f.List()) != 0 {
		t.Errorf("create through a 503, a reset and a lost answer: %v, %d POSTs, faults left %+v", res["msg"], posts, f.List())
	}
	f.Add(pvesim.Fault{Method: "PUT", Path: "/storage/gopve-dir2", Kind: pvesim.FaultLock, Delay: 200 * time.Millisecond,
		LockFile: "/var/lock/pve-manager/pve-storage-gopve-dir2", Count: 2})
	res = l.invoke(with(dir2, flatten(with(token, "disable", true))...), false)
	if failed(res) || res["changed"] != true || len(f.List()) != 0 {
		t.Errorf("update through lock contention: %v", res["msg"])
	}
	// K19: a privilege-separated token without audit rights.
	id, secret, err := l.sim.AddToken("pve01", pvesim.TokenSpec{User: "ci@pve", Name: "blind", Privsep: true})
	if err != nil {
		t.Fatal(err)
	}
	l.sim.ResetRequests()
	res = l.invoke(with(dir, flatten(with(api, "api_token_id", id, "api_token_secret", secret))...), false)
	t.Logf("blind token: %v", res["msg"])
	if !failed(res) || !strings.Contains(res["msg"].(string), "Permission check failed") || len(l.writes()) != 0 {
		t.Errorf("blind token: %v, writes %+v", res["msg"], l.writes())
	}

	// Bad input: named, nothing written.
	l.sim.ResetRequests()
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{with(dir, "type", "zfs"), "type"},
		{with(dir, "pool", "tank"), "pool: not an option of storage type dir"},
		{with(dir, "path", "/srv/other"), "path: fixed for a dir storage"},
		{with(dir, "storage", "gopve dir!"), "storage:"},
	} {
		res := l.invoke(c.args, false)
		if !failed(res) || !strings.Contains(res["msg"].(string), c.want) || res["changed"] != false {
			t.Errorf("%v: %v (want a failure naming %q)", c.args, res["msg"], c.want)
		}
	}
	if w := l.writes(); len(w) != 0 {
		t.Errorf("bad input wrote %+v", w)
	}

	// Issue 15 item 9, end to end: the real binary on pve01, over HTTPS to
	// pve02, creates a pbs storage with a master public key and a key PVE
	// generates; the rerun reads the key file through pve01's /etc/pve
	// (pmxcfs) and finds nothing to change, with no write at all.
	if err := l.sim.AddRemoteStore(pvesim.RemoteStore{Type: "pbs", Server: "192.0.2.50", User: "backup@pbs", Password: "pbs-lab-pass", Stores: []string{"store1"}}); err != nil {
		t.Fatal(err)
	}
	pbs := with(token, "storage", "pbs1", "type", "pbs", "server", "192.0.2.50", "datastore", "store1", "username", "backup@pbs",
		"password", "pbs-lab-pass", "encryption_key", "autogen", "master_pubkey", masterA)
	pbs["_ansible_no_log"] = true // the task's no_log: the generated key is returned
	res = l.invoke(pbs, false)
	key, _ := res["encryption_key"].(string)
	if failed(res) || res["changed"] != true || key == "" || l.ssh("pve01", "cat /etc/pve/priv/storage/pbs1.enc") != key {
		t.Fatalf("pbs create: %v (key returned: %v)", res["msg"], key != "")
	}
	if pem := l.ssh("pve02", "cat /etc/pve/priv/storage/pbs1.master.pem"); strings.TrimSpace(pem) != masterA {
		t.Errorf("master.pem on pve02: %q", pem)
	}
	if cfg := l.ssh("pve02", "cat /etc/pve/storage.cfg"); strings.Contains(cfg, "pbs-lab-pass") || !strings.Contains(cfg, "\tmaster-pubkey 1\n") {
		t.Errorf("storage.cfg:\n%s", cfg)
	}
	l.sim.ResetRequests()
	res = l.invoke(pbs, false)
	if failed(res) || res["changed"] != false || len(l.writes()) != 0 || res["encryption_key"] != nil {
		t.Errorf("pbs rerun: changed=%v %v, writes %+v", res["changed"], res["msg"], l.writes())
	}
	if w := pveapi.String(res["warnings"]); strings.Contains(w, "master_pubkey") || !strings.Contains(w, "password: given but not compared") {
		t.Errorf("pbs rerun warnings: %s", w)
	}

	// S4: snippets on local, in local mode.
	local := map[string]any{"storage": "local", "type": "dir", "content": []any{"iso", "vztmpl", "backup", "import", "snippets"}}
	if res := l.invoke(local, false); failed(res) || res["changed"] != true {
		t.Errorf("S4: %v", res["msg"])
	}
	if out := l.ssh("pve02", "pvesh get /storage/local --output-format json"); !strings.Contains(out, "snippets") {
		t.Errorf("S4: local on pve02: %s", out)
	}
}

func flatten(m map[string]any) []any {
	var out []any
	for k, v := range m {
		out = append(out, k, v)
	}
	return out
}
