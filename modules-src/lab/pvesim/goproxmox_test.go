package pvesim

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/nodecert"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/tasks"
	proxmox "github.com/luthermonson/go-proxmox"
)

// pinnedHTTPClient trusts exactly one certificate fingerprint, the way the
// modules pin PVE's self-signed certificates (K14).
func pinnedHTTPClient(fp string) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || !strings.EqualFold(nodecert.Fingerprint(raw[0]), fp) {
				return errors.New("fingerprint mismatch")
			}
			return nil
		},
	}}}
}

// The modules use go-proxmox v0.8.2's transport: it must log in (lazily,
// after a 401) and read /version, with a password and with a token.
func TestGoProxmoxClient(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{})
	n := mustNode(t, s, "pve01")
	ctx := context.Background()

	withPassword := proxmox.NewClient(n.URL,
		proxmox.WithHTTPClient(pinnedHTTPClient(n.Fingerprint)),
		proxmox.WithCredentials(&proxmox.Credentials{Username: "root@pam", Password: s.RootPassword()}))
	v, err := withPassword.Version(ctx)
	if err != nil {
		t.Fatalf("go-proxmox with password: %v", err)
	}
	if !strings.HasPrefix(v.Release, "9.") {
		t.Errorf("release %q", v.Release)
	}

	id, secret := s.LabToken()
	withToken := proxmox.NewClient(n.URL, proxmox.WithHTTPClient(pinnedHTTPClient(n.Fingerprint)), proxmox.WithAPIToken(id, secret))
	if _, err := withToken.Version(ctx); err != nil {
		t.Fatalf("go-proxmox with token: %v", err)
	}
	// A JSON body (go-proxmox's encoding) through the schema validator.
	var out json.RawMessage
	if err := withToken.Post(ctx, "/pools", map[string]any{"poolid": "from-go-proxmox"}, &out); err != nil {
		t.Fatalf("go-proxmox POST /pools: %v", err)
	}
	// A 400 surfaces as go-proxmox's "bad request" error naming the parameter.
	err = withToken.Post(ctx, "/pools", map[string]any{"poolid": "x", "bogus": 1}, &out)
	if err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("invalid POST through go-proxmox: %v", err)
	}
	// Wrong pin: TLS refuses.
	bad := proxmox.NewClient(n.URL, proxmox.WithHTTPClient(pinnedHTTPClient("AA:BB")), proxmox.WithAPIToken(id, secret))
	if _, err := bad.Version(ctx); err == nil {
		t.Error("wrong fingerprint accepted")
	}
}

// Restarting the simulator keeps state and certificates (only a join
// changes a certificate, C5).
func TestRestartKeepsStateAndCertificates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := New(testConfig(simOpts{Version: 9, Nodes: 2}, 199, dir))
	if err != nil {
		t.Fatal(err)
	}
	fp := mustNode(t, s, "pve01").Fingerprint
	pw := s.RootPassword()
	if _, err := s.CreateCluster("pve01", "lab", ""); err != nil {
		t.Fatal(err)
	}
	// A second simulator on the same lab is refused while the first runs.
	if _, err := New(testConfig(simOpts{Version: 9, Nodes: 2}, 199, dir)); err == nil {
		t.Error("two simulators on one lab")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := New(testConfig(simOpts{Version: 8, Nodes: 2}, 199, dir)); err == nil {
		t.Error("lab reopened with another PVE version")
	}
	s2, err := New(testConfig(simOpts{Version: 9, Nodes: 2}, 199, dir))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got := mustNode(t, s2, "pve01").Fingerprint; got != fp {
		t.Errorf("fingerprint changed across restart: %s → %s", fp, got)
	}
	if s2.RootPassword() != pw {
		t.Error("root password changed across restart")
	}
	if info, ok := s2.Cluster("pve01"); !ok || info.Name != "lab" {
		t.Errorf("cluster lost across restart: %+v", info)
	}
	// A task cut short by the restart is recorded as died, not left running.
	s2.Mu.Lock()
	s2.State.Nodes["pve02"].Tasks = append(s2.State.Nodes["pve02"].Tasks, &tasks.Task{UPID: "UPID:pve02:00000001:00000001:00000001:x::root@pam:", Status: "running"})
	s2.State.Nodes["pve02"].CorosyncUpAt = time.Now().Add(time.Hour).UnixMilli()
	s2.Mu.Unlock()
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	s3, err := New(testConfig(simOpts{Version: 9, Nodes: 2}, 199, dir))
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	if tk := s3.State.Nodes["pve02"].Tasks[0]; tk.Status != "stopped" || tk.ExitStatus != "unexpected status" {
		t.Errorf("task across restart: %+v", tk)
	}
	if s3.State.Nodes["pve02"].CorosyncUpAt > time.Now().UnixMilli() {
		t.Error("a join cut short by the restart leaves the node out of quorum forever")
	}
}

func TestControlAPI(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{Nodes: 3})
	do := controlAPI(t, s)
	tests := []struct {
		method, path, body string
		status             int
		check              func(map[string]any) bool
	}{
		{"GET", "/v1/nodes/pve01/cluster", "", 404, func(m map[string]any) bool { return strings.Contains(m["error"].(string), "does not exist") }},
		{"POST", "/v1/clusters", `{"node":"pve01","name":"lab","link0":"127.77.9.11"}`, 200, func(m map[string]any) bool {
			return m["name"] == "lab" && m["quorate"] == true && m["transport"] == "knet"
		}},
		{"POST", "/v1/clusters", `{"node":"pve01","name":"again"}`, 409, func(m map[string]any) bool {
			return m["error"] == "cluster config '/etc/pve/corosync.conf' already exists"
		}},
		{"POST", "/v1/nodes/pve02/cluster/nodes", `{"node":"pve03"}`, 404, nil},
		{"POST", "/v1/nodes/pve01/cluster/nodes", `{"node":"pve02"}`, 200, func(m map[string]any) bool { return len(m["nodes"].([]any)) == 2 }},
		{"POST", "/v1/nodes/pve01/cluster/nodes", `{"node":"pve02"}`, 409, func(m map[string]any) bool {
			return strings.Contains(m["error"].(string), "Check if node may join a cluster failed!")
		}},
		{"POST", "/v1/nodes/pve01/online", `{"online":false}`, 200, func(m map[string]any) bool { return m["online"] == false && m["serving"] == false }},
		{"GET", "/v1/nodes/pve02/cluster", "", 200, func(m map[string]any) bool { return m["quorate"] == false }},
		{"POST", "/v1/nodes/pve02/cluster/expected", `{"votes":1}`, 200, func(m map[string]any) bool { return m["quorate"] == true }},
		{"POST", "/v1/nodes/pve01/online", `{"online":true}`, 200, func(m map[string]any) bool { return m["serving"] == true }},
		{"POST", "/v1/faults", `{"path":"/version","kind":"error","status":500,"message":"boom","count":1}`, 200, func(m map[string]any) bool { return m["id"] != nil }},
		{"POST", "/v1/faults", `{"path":"/version","kind":"nope"}`, 400, nil},
		{"GET", "/v1/nodes/nope", "", 404, nil},
	}
	for _, tt := range tests {
		status, body := do(tt.method, tt.path, tt.body)
		if status != tt.status || tt.check != nil && !tt.check(body) {
			t.Errorf("%s %s %s: %d %v, want %d", tt.method, tt.path, tt.body, status, body, tt.status)
		}
	}
	// The injected fault reaches the PVE API.
	c := newClient(t, s, "pve01").LabToken()
	if r := c.Call("GET", "/version", nil); r.Status != 500 || r.Reason != "boom" {
		t.Errorf("fault from control API: %d %q", r.Status, r.Reason)
	}
	// The cluster made through the control API is the one the HTTPS API shows.
	st := c.Call("GET", "/cluster/status", nil).Must(t, "status").List()
	if st[0]["name"] != "lab" || len(st) != 3 {
		t.Errorf("HTTPS view of the control-made cluster: %v", st)
	}
}

// C7: /etc/pve/priv/authorized_keys is cluster-wide: after a join the
// joiner sees the primary's copy and its own keys are gone; without quorum
// /etc/pve refuses writes (C10).
func TestPmxcfsFilesFollowTheJoinC7(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{Nodes: 2})
	ctl := controlAPI(t, s)
	const keys = "/v1/nodes/%s/pmxcfs/priv/authorized_keys"
	if st, _ := ctl("PUT", fmt.Sprintf(keys, "pve01"), `{"content":"ssh-ed25519 AAAA primary\n"}`); st != 200 {
		t.Fatalf("write on pve01: %d", st)
	}
	if st, _ := ctl("PUT", fmt.Sprintf(keys, "pve02"), `{"content":"ssh-ed25519 BBBB joiner-only\n"}`); st != 200 {
		t.Fatalf("write on pve02: %d", st)
	}
	if _, err := s.CreateCluster("pve01", "lab", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddNode("pve01", "pve02", "", false); err != nil {
		t.Fatal(err)
	}
	st, body := ctl("GET", fmt.Sprintf(keys, "pve02"), "")
	if st != 200 || body["content"] != "ssh-ed25519 AAAA primary\n" {
		t.Errorf("pve02 after join: %d %v", st, body)
	}
	if st, _ := ctl("GET", "/v1/nodes/pve02/pmxcfs/../etc/shadow", ""); st == 200 {
		t.Error("path escaping /etc/pve accepted")
	}
	if err := s.SetOnline("pve01", false); err != nil {
		t.Fatal(err)
	}
	st, body = ctl("PUT", fmt.Sprintf(keys, "pve02"), `{"content":"x"}`)
	if st != 409 || !strings.Contains(fmt.Sprint(body["error"]), "Permission denied") {
		t.Errorf("write without quorum: %d %v", st, body)
	}
}

// The shapes reproduce what real PVE does to go-proxmox v0.8.2's typed
// wrappers (research notes §1.1/§1.6): join info's corosync strings break
// JoinInfo, storage create's {storage,type} object breaks
// NewClusterStorage after the storage was created, while cluster status and
// tasks decode. If one of these starts "working", the simulator drifted.
func TestGoProxmoxTypedWrappersSeeRealShapes(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{TaskDuration: 50 * time.Millisecond})
	n := mustNode(t, s, "pve01")
	ctx := context.Background()
	id, secret := s.LabToken()
	c := proxmox.NewClient(n.URL, proxmox.WithHTTPClient(pinnedHTTPClient(n.Fingerprint)), proxmox.WithAPIToken(id, secret))
	if _, err := s.CreateCluster("pve01", "lab", ""); err != nil {
		t.Fatal(err)
	}
	cl, err := c.Cluster(ctx)
	if err != nil {
		t.Fatalf("cluster status through go-proxmox: %v", err)
	}
	if cl.Name != "lab" || cl.Quorate != 1 {
		t.Errorf("go-proxmox cluster %+v", cl)
	}
	if _, err := cl.JoinInfo(ctx, ""); err == nil || !strings.Contains(err.Error(), "string") {
		t.Errorf("JoinInfo decoded corosync strings (%v): the simulator no longer returns them as strings", err)
	}
	_, err = c.NewClusterStorage(ctx,
		proxmox.ClusterStorageOptions{Name: "storage", Value: "d1"},
		proxmox.ClusterStorageOptions{Name: "type", Value: "dir"},
		proxmox.ClusterStorageOptions{Name: "path", Value: "/srv/d1"})
	if err == nil || !strings.Contains(err.Error(), "cannot unmarshal object") {
		t.Errorf("NewClusterStorage: %v, want the real object-vs-UPID unmarshal error", err)
	}
	if _, err := c.ClusterStorage(ctx, "d1"); err != nil {
		t.Errorf("the storage must exist although go-proxmox reported an error: %v", err)
	}
	if nodes, err := c.Nodes(ctx); err != nil || len(nodes) != 1 || nodes[0].SSLFingerprint != n.Fingerprint {
		t.Errorf("go-proxmox Nodes: %v %+v", err, nodes)
	}
	if node, err := c.Node(ctx, "pve01"); err != nil || !strings.HasPrefix(node.PVEVersion, "pve-manager/9.") || node.CPUInfo.Cores != 4 {
		t.Errorf("go-proxmox Node: %v %+v", err, node)
	}
	// A task through go-proxmox's own wait.
	s.Mu.Lock()
	upid := s.StartSimpleTaskLocked(&core.Req{Sim: s.Sim, Who: &core.Principal{User: "root@pam", TokenID: "lab"}}, "pve01", "vzdump", "", "backup")
	s.Mu.Unlock()
	task := proxmox.NewTask(proxmox.UPID(upid), c)
	if err := task.WaitFor(ctx, 5); err != nil {
		t.Fatalf("go-proxmox task wait: %v", err)
	}
	if !task.IsSuccessful || task.ExitStatus != "OK" || task.Node != "pve01" {
		t.Errorf("go-proxmox task %+v", task)
	}
}

// Limited tokens for module tests (K19) are made through the control API.
func TestControlAPIAccess(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{})
	ctl := controlAPI(t, s)
	post := func(path, body string) (int, map[string]any) { t.Helper(); return ctl("POST", path, body) }
	st, tok := post("/v1/access/tokens", `{"node":"pve01","user":"auto@pve","name":"ci","privsep":true}`)
	if st != 200 || tok["full-tokenid"] != "auto@pve!ci" || tok["value"] == "" {
		t.Fatalf("token: %d %v", st, tok)
	}
	c := newClient(t, s, "pve01").WithToken(tok["full-tokenid"].(string), tok["value"].(string))
	if n := len(c.Call("GET", "/storage", nil).Must(t, "storage").List()); n != 0 {
		t.Errorf("fresh privsep token sees %d storages", n)
	}
	for _, body := range []string{
		`{"node":"pve01","path":"/","ugid":"auto@pve","role":"PVEDatastoreAdmin","propagate":true}`,
		`{"node":"pve01","path":"/storage","ugid":"auto@pve!ci","role":"priv:Datastore.Audit","propagate":true}`,
	} {
		if st, out := post("/v1/access/acl", body); st != 200 {
			t.Fatalf("acl %s: %d %v", body, st, out)
		}
	}
	if n := len(c.Call("GET", "/storage", nil).Must(t, "storage").List()); n != 2 {
		t.Errorf("token with Datastore.Audit sees %d storages, want 2", n)
	}
	// Intersection: the token has no Datastore.Allocate of its own.
	if r := c.Call("POST", "/storage", url.Values{"storage": {"d1"}, "type": {"dir"}, "path": {"/x"}}); r.Status != 403 {
		t.Errorf("privsep token allocating: %d", r.Status)
	}
	if st, _ := post("/v1/access/acl", `{"node":"pve01","path":"/","ugid":"x@pve","role":"NoSuchRole"}`); st != 400 {
		t.Errorf("unknown role: %d", st)
	}
	if st, _ := post("/v1/access/tokens", `{"node":"pve09","user":"a@pve","name":"b"}`); st != 404 {
		t.Errorf("unknown node: %d", st)
	}
	if st, _ := post("/v1/access/users", `{"node":"pve01","user":"alice@pve","password":"wonderland"}`); st != 200 {
		t.Fatalf("user: %d", st)
	}
	newClient(t, s, "pve01").Login("alice@pve", "wonderland")
}

// K14: certificates are signed by the /etc/pve root CA, so a client may
// verify with ca_path instead of pinning. A join re-signs the joiner with
// the cluster's CA: the cluster CA then verifies every member, the joiner's
// old CA no longer does.
func TestClusterRootCAK14(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{Nodes: 2})
	verifyWith := func(caPEM []byte, node string) error {
		n := mustNode(t, s, node)
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			t.Fatal("CA PEM does not parse")
		}
		hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		defer hc.CloseIdleConnections()
		res, err := hc.Get(n.URL + "/version")
		if err != nil {
			return err
		}
		res.Body.Close()
		return nil
	}
	ca1, ca2 := mustNode(t, s, "pve01").CAPEM, mustNode(t, s, "pve02").CAPEM
	if err := verifyWith(ca1, "pve01"); err != nil {
		t.Fatalf("pve01 with its own CA: %v", err)
	}
	if err := verifyWith(ca1, "pve02"); err == nil {
		t.Fatal("standalone pve02 verified with pve01's CA")
	}
	if _, err := s.CreateCluster("pve01", "lab", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddNode("pve01", "pve02", "", false); err != nil {
		t.Fatal(err)
	}
	if err := verifyWith(ca1, "pve02"); err != nil {
		t.Errorf("joined pve02 with the cluster CA: %v", err)
	}
	if err := verifyWith(ca2, "pve02"); err == nil {
		t.Error("joined pve02 still verifies with its pre-join CA")
	}
	if got := mustNode(t, s, "pve02").CAPEM; string(got) != string(ca1) {
		t.Error("pve02 does not report the cluster's CA after the join")
	}
}
