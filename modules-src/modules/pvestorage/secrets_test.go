package pvestorage

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

const (
	masterA = "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAmasterA\n-----END PUBLIC KEY-----"
	masterB = "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAmasterB\n-----END PUBLIC KEY-----"
)

// pbsWorld is a world with a reachable PBS server, and the module reading
// the simulator's /etc/pve/priv/storage as it reads the node's.
func pbsWorld(t *testing.T) *world {
	w := newWorld(t, 9)
	if err := w.sim.AddRemoteStore(pvesim.RemoteStore{Type: "pbs", Server: "192.0.2.50", User: "backup@pbs", Password: "pbs-pass-1", Stores: []string{"store1"}}); err != nil {
		t.Fatal(err)
	}
	old := privStorageDir
	privStorageDir = filepath.Join(w.sim.EtcPveDir("pve01"), "priv", "storage")
	t.Cleanup(func() { privStorageDir = old })
	return w
}

func pbsArgs() map[string]any {
	return map[string]any{"storage": "pbs1", "type": "pbs", "server": "192.0.2.50", "datastore": "store1",
		"username": "backup@pbs", "password": "pbs-pass-1", "encryption_key": "autogen", "master_pubkey": masterA}
}

func (w *world) runLogged(args map[string]any, check bool) (map[string]any, string) {
	w.t.Helper()
	return w.runWith(args, check, true)
}

func (w *world) runWith(args map[string]any, check, noLog bool) (map[string]any, string) {
	w.t.Helper()
	full := map[string]any{}
	for k, v := range w.conn {
		full[k] = v
	}
	for k, v := range args {
		full[k] = v
	}
	var stderr strings.Builder
	m := New(pveapi.Options{Retry: &pveapitest.FastRetry})
	env := func(string) (string, bool) { return "", false }
	res := ansible.Execute(context.Background(), &m, &ansible.Invocation{Params: full, CheckMode: check, Diff: true, Verbosity: 4, NoLog: noLog}, env, &stderr)
	return res, stderr.String()
}

// runNoLog is run for a task with no_log: true (the generated key is
// returned to it only).
func (w *world) runNoLog(args map[string]any, check bool) map[string]any {
	w.t.Helper()
	res, _ := w.runWith(args, check, true)
	return res
}

// Issue 15 item 9: a pbs storage with a master public key converges (PVE
// stores "master-pubkey 1"; the key is compared with its .master.pem); the
// key PVE generates for encryption_key: autogen is returned in the result
// only, masked everywhere else, with a warning to back it up; the rerun
// writes nothing and does not generate another key.
func TestPBSMasterPubkeyAndAutogenKey(t *testing.T) {
	w := pbsWorld(t)
	check := w.run(pbsArgs(), true)
	if failed(check) || check["changed"] != true || len(pveapitest.Mutating(w.sim)) != 0 {
		t.Fatalf("check: %v, writes %v", check["msg"], pveapitest.Mutating(w.sim))
	}
	res, log := w.runLogged(pbsArgs(), false)
	if failed(res) || res["changed"] != true {
		t.Fatalf("create: %v", res["msg"])
	}
	key, _ := res["encryption_key"].(string)
	enc, err := os.ReadFile(filepath.Join(privStorageDir, "pbs1.enc"))
	if err != nil || key == "" || key != string(enc) {
		t.Fatalf("encryption_key in the result %q, pbs1.enc %q (%v): want the generated key", key, enc, err)
	}
	if !strings.Contains(pveapi.String(res["warnings"]), "Back it up outside the cluster") {
		t.Errorf("no back-up warning: %v", res["warnings"])
	}
	// Masked everywhere but encryption_key: msg, warnings, diff, config, the -vvvv log.
	data := keyData(t, key)
	rest := map[string]any{}
	for k, v := range res {
		if k != "encryption_key" {
			rest[k] = v
		}
	}
	if strings.Contains(pveapi.String(rest), data) || strings.Contains(log, data) || strings.Contains(pveapi.String(res), "pbs-pass-1") {
		t.Errorf("the key or the password leaked outside encryption_key:\n%v\n%s", rest, log)
	}
	if pem, _ := os.ReadFile(filepath.Join(privStorageDir, "pbs1.master.pem")); strings.TrimSpace(string(pem)) != masterA {
		t.Errorf("master.pem %q", pem)
	}
	st := res["storage"].(map[string]any)
	if pveapi.String(st["master-pubkey"]) != "1" || st["encryption-key"] == nil || st["password"] != nil {
		t.Errorf("final config %v: want the markers, no password", st)
	}

	w.sim.ResetRequests()
	again := w.run(pbsArgs(), false)
	if failed(again) || again["changed"] != false || len(pveapitest.Mutating(w.sim)) != 0 || again["encryption_key"] != nil {
		t.Fatalf("rerun: changed=%v %v, writes %v, key %v", again["changed"], again["msg"], pveapitest.Mutating(w.sim), again["encryption_key"])
	}
	// The password cannot be compared: said, not silently dropped.
	if !strings.Contains(pveapi.String(again["warnings"]), "password: given but not compared") {
		t.Errorf("rerun warnings %v", again["warnings"])
	}
	// PVE's form (base64 of the PEM) is the same key.
	b64 := with(pbsArgs(), "master_pubkey", base64.StdEncoding.EncodeToString([]byte(masterA+"\n")))
	if res := w.run(b64, false); failed(res) || res["changed"] != false {
		t.Errorf("base64 form of the same key: changed=%v %v", res["changed"], res["msg"])
	}

	// Another master key: compared, found different, converged.
	other := with(pbsArgs(), "master_pubkey", masterB)
	check = w.run(other, true)
	res = w.run(other, false)
	if failed(res) || res["changed"] != true || pveapi.String(res["changes"]) != pveapi.String(check["changes"]) || !strings.Contains(pveapi.String(res["changes"]), "master_pubkey") {
		t.Fatalf("new master key: %v %v (predicted %v)", res["msg"], res["changes"], check["changes"])
	}
	if pem, _ := os.ReadFile(filepath.Join(privStorageDir, "pbs1.master.pem")); strings.TrimSpace(string(pem)) != masterB {
		t.Errorf("master.pem after the change %q", pem)
	}
	if again, _ := os.ReadFile(filepath.Join(privStorageDir, "pbs1.enc")); string(again) != key {
		t.Errorf("the encryption key changed under autogen on an existing storage")
	}

	// Where the key file cannot be read, the module says so instead of
	// guessing.
	privStorageDir = filepath.Join(t.TempDir(), "elsewhere")
	w.sim.ResetRequests()
	res = w.run(with(pbsArgs(), "master_pubkey", masterA), false)
	if failed(res) || res["changed"] != false || len(pveapitest.Mutating(w.sim)) != 0 || !strings.Contains(pveapi.String(res["warnings"]), "master_pubkey: given but not compared") {
		t.Errorf("unreadable master.pem: changed=%v warnings %v", res["changed"], res["warnings"])
	}
}

// Issue 15 item 9: a changed secret on an existing storage is never
// silently ignored: by default a warning names it and nothing is written;
// with update_secrets it is sent (PUT) and PVE's file changes.
func TestChangedSecretWarnedOrUpdated(t *testing.T) {
	w := pbsWorld(t)
	args := with(pbsArgs(), "encryption_key", nil, "master_pubkey", nil)
	if res := w.run(args, false); failed(res) || res["changed"] != true {
		t.Fatalf("create: %v", res["msg"])
	}
	rotated := with(args, "password", "pbs-pass-2")
	w.sim.ResetRequests()
	res := w.run(rotated, false)
	if failed(res) || res["changed"] != false || len(pveapitest.Mutating(w.sim)) != 0 ||
		!strings.Contains(pveapi.String(res["warnings"]), "password: given but not compared on storage pbs1") ||
		!strings.Contains(pveapi.String(res["warnings"]), "update_secrets: true") {
		t.Fatalf("default: changed=%v writes %v warnings %v", res["changed"], pveapitest.Mutating(w.sim), res["warnings"])
	}
	if pw, _ := os.ReadFile(filepath.Join(privStorageDir, "pbs1.pw")); string(pw) != "pbs-pass-1\n" {
		t.Errorf("password file changed without update_secrets: %q", pw)
	}
	rotated["update_secrets"] = true
	check := w.run(rotated, true)
	w.sim.ResetRequests()
	res = w.run(rotated, false)
	puts := 0
	for _, r := range pveapitest.Mutating(w.sim) {
		if r.Method == "PUT" && r.Path == "/storage/pbs1" && r.Params["password"] != "" {
			puts++
		}
	}
	if failed(res) || res["changed"] != true || puts != 1 || pveapi.String(res["changes"]) != pveapi.String(check["changes"]) {
		t.Fatalf("update_secrets: changed=%v %v, %d PUTs, predicted %v got %v", res["changed"], res["msg"], puts, check["changes"], res["changes"])
	}
	if pw, _ := os.ReadFile(filepath.Join(privStorageDir, "pbs1.pw")); string(pw) != "pbs-pass-2\n" {
		t.Errorf("password file after update_secrets: %q", pw)
	}
	if strings.Contains(pveapi.String(res), "pbs-pass-2") {
		t.Errorf("the password in the result")
	}
}

// Refused before any request: a master key without an encryption key on a
// new storage (PVE refuses it only after writing the password file), a key
// that is not a proxmox-backup key. A wrong password: PVE's error, nothing
// created, no priv file left.
func TestPBSRefusals(t *testing.T) {
	w := pbsWorld(t)
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{with(pbsArgs(), "encryption_key", nil), "master_pubkey: needs encryption_key"},
		{with(pbsArgs(), "encryption_key", "not a key"), "encryption_key: not a proxmox-backup key"},
		{with(pbsArgs(), "master_pubkey", "bm90IGEga2V5"), "master_pubkey: neither a PEM public key"},
	} {
		w.sim.ResetRequests()
		res := w.run(c.args, false)
		if !failed(res) || !strings.Contains(res["msg"].(string), c.want) || res["changed"] != false || len(pveapitest.Mutating(w.sim)) != 0 {
			t.Errorf("%v: %v, writes %v; want %q", c.args, res["msg"], pveapitest.Mutating(w.sim), c.want)
		}
		if strings.Contains(pveapi.String(res), "not a key") {
			t.Errorf("the rejected key is echoed: %v", res["msg"])
		}
	}
	res := w.run(with(pbsArgs(), "password", "wrong", "encryption_key", nil, "master_pubkey", nil), false)
	if !failed(res) || res["changed"] != false || !strings.Contains(res["msg"].(string), "error fetching datastores - 401") {
		t.Errorf("wrong password: changed=%v %v", res["changed"], res["msg"])
	}
	if _, err := os.Stat(filepath.Join(privStorageDir, "pbs1.pw")); !os.IsNotExist(err) {
		t.Errorf("a password file left after the refused create: %v", err)
	}
}

func keyData(t *testing.T, key string) string {
	t.Helper()
	i := strings.Index(key, `"data": "`)
	if i < 0 {
		t.Fatalf("no data in %q", key)
	}
	rest := key[i+len(`"data": "`):]
	return rest[:strings.Index(rest, `"`)]
}

// cifs (CIFSPlugin.pm): a refused login fails the create with PVE's error
// and leaves nothing; the password lands in <id>.pw, never in the result,
// and a rerun says it cannot compare it.
func TestCIFSPassword(t *testing.T) {
	w := pbsWorld(t)
	if err := w.sim.AddRemoteStore(pvesim.RemoteStore{Type: "cifs", Server: "192.0.2.60", User: "smbuser", Password: "smb-pass", Stores: []string{"backup"}}); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"storage": "smb", "type": "cifs", "server": "192.0.2.60", "share": "backup", "username": "smbuser", "password": "nope", "content": []any{"backup"}}
	res := w.run(args, false)
	if !failed(res) || res["changed"] != false || !strings.Contains(res["msg"].(string), "NT_STATUS_LOGON_FAILURE") {
		t.Errorf("wrong password: changed=%v %v", res["changed"], res["msg"])
	}
	if _, err := os.Stat(filepath.Join(privStorageDir, "smb.pw")); !os.IsNotExist(err) {
		t.Errorf("credentials left after the refused create: %v", err)
	}
	args["password"] = "smb-pass"
	if res := w.run(args, false); failed(res) || res["changed"] != true || strings.Contains(pveapi.String(res), "smb-pass") {
		t.Fatalf("create: %v", res["msg"])
	}
	if pw, _ := os.ReadFile(filepath.Join(privStorageDir, "smb.pw")); string(pw) != "password=smb-pass\n" {
		t.Errorf("smb.pw %q", pw)
	}
	w.sim.ResetRequests()
	res = w.run(args, false)
	if failed(res) || res["changed"] != false || len(pveapitest.Mutating(w.sim)) != 0 || !strings.Contains(pveapi.String(res["warnings"]), "password: given but not compared on storage smb") {
		t.Errorf("rerun: changed=%v warnings %v", res["changed"], res["warnings"])
	}
}

// The create's answer, which carries the generated key, is lost: the
// storage is not created twice, and the key is taken from <id>.enc (the
// task has no_log, so the key is returned).
func TestAutogenKeyAnswerLost(t *testing.T) {
	w := pbsWorld(t)
	w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: "/storage", Kind: pvesim.FaultLostAnswer, Count: 1})
	res := w.runNoLog(pbsArgs(), false)
	posts := 0
	for _, r := range pveapitest.Mutating(w.sim) {
		if r.Method == "POST" && r.Path == "/storage" {
			posts++
		}
	}
	enc, _ := os.ReadFile(filepath.Join(privStorageDir, "pbs1.enc"))
	if failed(res) || res["changed"] != true || posts != 1 || len(enc) == 0 || res["encryption_key"] != string(enc) {
		t.Errorf("lost answer: %v, %d POSTs, key returned %v", res["msg"], posts, res["encryption_key"] != nil)
	}
	privStorageDir = t.TempDir()
	w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: "/storage", Kind: pvesim.FaultLostAnswer, Count: 1})
	res = w.runNoLog(with(pbsArgs(), "storage", "pbs2"), false)
	if failed(res) || res["encryption_key"] != nil || !strings.Contains(pveapi.String(res["warnings"]), "the answer carrying it was lost") {
		t.Errorf("lost answer, key file out of reach: %v %v", res["msg"], res["warnings"])
	}
}

// A key file read with lookup('file') reaches the module as a dict
// (Ansible templates JSON text into one): it is sent as the key's JSON,
// not as Python's repr of a dict, which PVE refuses.
func TestPBSKeyGivenAsDict(t *testing.T) {
	w := pbsWorld(t)
	key := map[string]any{"kdf": nil, "created": "2025-01-01T00:00:00+00:00", "modified": "2025-01-01T00:00:00+00:00",
		"data": "a2V5LWRhdGEtZm9yLWEtdGVzdA==", "fingerprint": "0f:3c:6e:1d:aa:01:02:03:04:05:06:07:08:09:0a:0b:0c:0d:0e:0f:10:11:12:13:14:15:16:17:18:19:1a:1b"}
	args := with(pbsArgs(), "encryption_key", key, "master_pubkey", nil)
	res := w.run(args, false)
	if failed(res) || res["changed"] != true {
		t.Fatalf("create with a dict key: %v", res["msg"])
	}
	enc, _ := os.ReadFile(filepath.Join(privStorageDir, "pbs1.enc"))
	if !strings.Contains(string(enc), `"data":"a2V5LWRhdGEtZm9yLWEtdGVzdA=="`) {
		t.Errorf("pbs1.enc %q: want the key's JSON", enc)
	}
	if strings.Contains(pveapi.String(res), "a2V5LWRhdGEtZm9yLWEtdGVzdA==") {
		t.Errorf("the key's data in the result")
	}
	w.sim.ResetRequests()
	if again := w.run(args, false); failed(again) || again["changed"] != false || len(pveapitest.Mutating(w.sim)) != 0 {
		t.Errorf("rerun with the dict key: changed=%v %v, writes %v", again["changed"], again["msg"], pveapitest.Mutating(w.sim))
	}
}

// Without no_log on the task, Ansible prints the module's output at -v and
// -vvv: the generated key is not returned (encryption_key holds the no_log
// placeholder), the warning says where it is, and it is in <id>.enc.
func TestAutogenKeyMaskedWithoutNoLog(t *testing.T) {
	w := pbsWorld(t)
	res, log := w.runWith(with(pbsArgs(), "master_pubkey", nil), false, false)
	enc, err := os.ReadFile(filepath.Join(privStorageDir, "pbs1.enc"))
	if failed(res) || res["changed"] != true || err != nil {
		t.Fatalf("create: %v (%v)", res["msg"], err)
	}
	data := keyData(t, string(enc))
	if res["encryption_key"] != "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" || strings.Contains(pveapi.String(res), data) || strings.Contains(log, data) {
		t.Errorf("without no_log: encryption_key %v; the key must be in neither the result nor the log", res["encryption_key"])
	}
	if w := pveapi.String(res["warnings"]); !strings.Contains(w, "pbs1.enc on the cluster, and masked in this result") || !strings.Contains(w, "no_log: true") {
		t.Errorf("warnings %s", w)
	}
}
