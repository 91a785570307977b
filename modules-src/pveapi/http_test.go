package pveapi

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var fastRetry = RetryPolicy{ReadRetries: 3, Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, LockRetries: 2, LockWait: time.Millisecond}

// fakePVE is an httptest TLS server answering like pveproxy: {"data":…} on
// success, the message as reason phrase and in the body on errors.
type fakePVE struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string // "METHOD /path auth"
	handle   func(w http.ResponseWriter, r *http.Request) bool
}

func newFake(t *testing.T, handle func(w http.ResponseWriter, r *http.Request) bool) *fakePVE {
	f := &fakePVE{handle: handle}
	f.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, r.Method+" "+strings.TrimPrefix(r.URL.Path, "/api2/json")+" "+r.Header.Get("Authorization"))
		f.mu.Unlock()
		if !f.handle(w, r) {
			pveError(w, 501, fmt.Sprintf("Method '%s %s' not implemented", r.Method, r.URL.Path), nil)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakePVE) count(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.requests {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

func pveData(w http.ResponseWriter, data any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"data": data})
}

// pveError answers like pve-http-server: reason phrase = first line of the
// message. withBody=false imitates PVE before libpve-http-server-perl 5.2.
func pveError(w http.ResponseWriter, status int, msg string, errs map[string]string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	body := map[string]any{"data": nil, "message": msg + "\n"}
	if errs != nil {
		body["errors"] = errs
	}
	json.NewEncoder(w).Encode(body)
}

func (f *fakePVE) conn(t *testing.T) Connection {
	u, _ := url.Parse(f.URL)
	sum := sha256.Sum256(f.Certificate().Raw)
	var port int
	fmt.Sscanf(u.Port(), "%d", &port)
	return Connection{Host: u.Hostname(), Port: port, TokenID: "root@pam!ci", TokenSecret: "s3cr3t-uuid",
		ValidateCerts: true, Fingerprint: Fingerprint(sum[:]), Timeout: 5}
}

func connect(t *testing.T, conn Connection) *Client {
	t.Helper()
	c, err := Connect(context.Background(), conn, Options{Retry: &fastRetry})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	return c
}

func TestTokenHeaderBothSpellings(t *testing.T) {
	// K7: the short name plus api_user and the full id send the same header.
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Authorization") != "PVEAPIToken=root@pam!ci=s3cr3t-uuid" {
			pveError(w, 401, "invalid token value!", nil)
			return true
		}
		pveData(w, map[string]any{"version": "9.2.5", "release": "9.2", "repoid": "abc"})
		return true
	})
	for _, conn := range []Connection{f.conn(t), func() Connection { c := f.conn(t); c.User, c.TokenID = "root@pam", "ci"; return c }()} {
		v, err := connect(t, conn).Version(context.Background())
		if err != nil || v.Major != 9 || v.Release != "9.2" {
			t.Errorf("token %q user %q: version %+v, %v", conn.TokenID, conn.User, v, err)
		}
	}
}

func TestVersionReadOncePerClient(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) bool {
		pveData(w, map[string]any{"version": "8.4.5", "release": "8.4"})
		return true
	})
	c := connect(t, f.conn(t))
	for i := 0; i < 3; i++ {
		if v, err := c.Version(context.Background()); err != nil || v.Major != 8 {
			t.Fatalf("version %+v %v", v, err)
		}
	}
	if n := f.count("GET /version"); n != 1 {
		t.Errorf("GET /version sent %d times, want 1", n)
	}
}

func TestErrorsKeepStatusMessageAndParameters(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) bool {
		switch r.URL.Path {
		case "/api2/json/storage":
			pveError(w, 400, "Parameter verification failed.", map[string]string{"pool": "property is missing and it is not optional"})
		case "/api2/json/storage/x":
			pveError(w, 403, "Permission check failed (/storage/x, Datastore.Allocate)", nil)
		case "/api2/json/old":
			// Early PVE 8: the message only in the reason phrase.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(500)
			w.Write([]byte(`{"data":null}`))
		default:
			return false
		}
		return true
	})
	c := connect(t, f.conn(t))
	err := c.send(context.Background(), http.MethodPost, "/storage", url.Values{"storage": {"x"}, "type": {"zfspool"}}, nil)
	if KindOf(err) != KindBadRequest || !strings.Contains(err.Error(), "pool: property is missing") || IsUnanswered(err) {
		t.Errorf("400: %v (kind %s, unanswered %v)", err, KindOf(err), IsUnanswered(err))
	}
	err = c.Get(context.Background(), "/storage/x", nil, nil)
	if !IsPermission(err) || !strings.Contains(err.Error(), "Permission check failed (/storage/x, Datastore.Allocate)") {
		t.Errorf("403: %v", err)
	}
	err = c.Get(context.Background(), "/old", nil, nil)
	if !strings.Contains(err.Error(), "500 Internal Server Error") {
		t.Errorf("500 without message body: %v", err)
	}
	for _, e := range []string{err.Error()} {
		if strings.Contains(e, "s3cr3t-uuid") {
			t.Errorf("secret in error: %s", e)
		}
	}
	if n := f.count("POST /storage"); n != 1 {
		t.Errorf("a 400 write was sent %d times", n)
	}
}

func TestReadsRetriedWritesNot(t *testing.T) {
	var gets, posts atomic.Int32
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) bool {
		switch r.Method {
		case "GET":
			switch gets.Add(1) {
			case 1:
				pveError(w, 503, "Service Unavailable", nil)
			case 2:
				hj, _ := w.(http.Hijacker)
				conn, _, _ := hj.Hijack()
				conn.Close() // connection dropped without an answer
			default:
				pveData(w, map[string]any{"storage": "x", "type": "dir", "shared": "1"})
			}
		case "POST":
			posts.Add(1)
			pveError(w, 500, "got no worker upid - start worker failed", nil)
		}
		return true
	})
	c := connect(t, f.conn(t))
	var st struct {
		Storage string `json:"storage"`
		Shared  bool   `json:"shared"`
	}
	if err := c.Get(context.Background(), "/storage/x", nil, &st); err != nil || !st.Shared || st.Storage != "x" {
		t.Fatalf("GET after 503 and a dropped connection: %+v %v", st, err)
	}
	err := c.send(context.Background(), http.MethodPost, "/nodes/n/qemu/100/clone", url.Values{"newid": {"101"}}, nil)
	if err == nil || posts.Load() != 1 || !IsUnanswered(err) {
		t.Errorf("a failed create must be sent once and reported unanswered: posts=%d err=%v", posts.Load(), err)
	}
}

func TestLockContentionRetriedWithinBound(t *testing.T) {
	var puts atomic.Int32
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) bool {
		n := puts.Add(1)
		if r.URL.Path == "/api2/json/storage/busy" || n < 3 {
			pveError(w, 500, "update storage failed: cfs-lock 'file-storage_cfg' error: got lock request timeout", nil)
			return true
		}
		pveData(w, nil)
		return true
	})
	c := connect(t, f.conn(t))
	if err := c.send(context.Background(), http.MethodPut, "/storage/x", url.Values{"content": {"images"}}, nil); err != nil {
		t.Fatalf("PUT after two lock timeouts: %v", err)
	}
	puts.Store(0)
	err := c.send(context.Background(), http.MethodPut, "/storage/busy", url.Values{"content": {"images"}}, nil)
	if !IsLocked(err) || puts.Load() != int32(1+fastRetry.LockRetries) || IsUnanswered(err) {
		t.Errorf("lock held forever: %d attempts, err %v", puts.Load(), err)
	}
}

func TestTLS(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) bool {
		pveData(w, map[string]any{"version": "9.2.5"})
		return true
	})
	sum := sha256.Sum256(f.Certificate().Raw)
	fp := Fingerprint(sum[:])
	base := f.conn(t)
	base.Fingerprint = ""

	// K14: default validate_certs refuses the self-signed node, with a clear way out.
	_, err := connect(t, base).Version(context.Background())
	if KindOf(err) != KindTLS || !strings.Contains(err.Error(), "ca_path") || !strings.Contains(err.Error(), "api_fingerprint") || !strings.Contains(err.Error(), fp) {
		t.Errorf("unverified certificate: %v", err)
	}

	caFile := filepath.Join(t.TempDir(), "pve-root-ca.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.Certificate().Raw}), 0o600)
	withCA := base
	withCA.CAPath = caFile
	if _, err := connect(t, withCA).Version(context.Background()); err != nil {
		t.Errorf("ca_path: %v", err)
	}

	pinned := base
	pinned.Fingerprint = strings.ToLower(strings.ReplaceAll(fp, ":", ""))
	if _, err := connect(t, pinned).Version(context.Background()); err != nil {
		t.Errorf("pinned: %v", err)
	}
	wrong := base
	wrong.Fingerprint = strings.Repeat("AB:", 31) + "AB"
	_, err = connect(t, wrong).Version(context.Background())
	if KindOf(err) != KindTLS || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("wrong pin: %v", err)
	}
	if _, err := Connect(context.Background(), Connection{Host: "h", TokenID: "root@pam!x", TokenSecret: "s", Fingerprint: "AA:BB"}, Options{}); err == nil || !strings.Contains(err.Error(), "api_fingerprint") {
		t.Errorf("bad fingerprint format: %v", err)
	}
	off := base
	off.ValidateCerts = false
	if _, err := connect(t, off).Version(context.Background()); err != nil {
		t.Errorf("validate_certs false: %v", err)
	}
}

func TestPasswordLogsInOnceUpFront(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case r.URL.Path == "/api2/json/access/ticket":
			var body map[string]string
			json.NewDecoder(r.Body).Decode(&body)
			if body["username"] != "root@pam" || body["password"] != "pw-secret" {
				pveError(w, 401, "authentication failure", nil)
				return true
			}
			pveData(w, map[string]any{"ticket": "PVE:root@pam:ABC::sig", "CSRFPreventionToken": "csrf", "username": "root@pam"})
		default:
			if c, err := r.Cookie("PVEAuthCookie"); err != nil || c.Value != "PVE:root@pam:ABC::sig" {
				pveError(w, 401, "No ticket", nil)
				return true
			}
			if r.Method != "GET" && r.Header.Get("CSRFPreventionToken") != "csrf" {
				pveError(w, 401, "Permission denied - invalid csrf token", nil)
				return true
			}
			pveData(w, nil)
		}
		return true
	})
	conn := f.conn(t)
	conn.TokenID, conn.TokenSecret, conn.User, conn.Password = "", "", "root@pam", "pw-secret"
	c := connect(t, conn)
	if err := c.send(context.Background(), http.MethodPut, "/storage/x", url.Values{"disable": {"1"}}, nil); err != nil {
		t.Fatal(err)
	}
	if f.count("POST /access/ticket") != 1 || f.count("PUT /storage/x") != 1 {
		t.Errorf("requests: %v", f.requests)
	}
	conn.Password = "wrong"
	_, err := Connect(context.Background(), conn, Options{Retry: &fastRetry})
	if KindOf(err) != KindAuth || !strings.Contains(err.Error(), "root@pam") || strings.Contains(err.Error(), "wrong") {
		t.Errorf("bad password: %v", err)
	}
}

func TestDecodeTolerant(t *testing.T) {
	var v struct {
		NodeID  int      `json:"nodeid"`
		Quorate bool     `json:"quorate"`
		Shared  bool     `json:"shared"`
		Content []string `json:"content"`
		Nodes   []string `json:"nodes"`
		Size    uint64   `json:"size"`
	}
	raw := `{"nodeid":"2","quorate":"1","shared":0,"content":"images,rootdir","nodes":["a","b"],"size":1.073741824e9}`
	if err := Decode(json.RawMessage(raw), &v); err != nil {
		t.Fatal(err)
	}
	if v.NodeID != 2 || !v.Quorate || v.Shared || len(v.Content) != 2 || v.Content[1] != "rootdir" || len(v.Nodes) != 2 || v.Size != 1073741824 {
		t.Errorf("decoded %+v", v)
	}
}

func TestLocalModeNeedsRootOnANode(t *testing.T) {
	_, err := Connect(context.Background(), Connection{}, Options{LocalAllowed: func() bool { return false }})
	if err == nil || !strings.Contains(err.Error(), "api_host") {
		t.Errorf("no api_host off a node: %v", err)
	}
}

func TestPveshTransport(t *testing.T) {
	var got [][]string
	pt := &pveshTransport{bin: "pvesh", run: func(ctx context.Context, bin string, args []string) ([]byte, []byte, error) {
		got = append(got, args)
		switch args[1] {
		case "/storage/nvme-vm":
			return []byte(`{"storage":"nvme-vm","type":"zfspool","sparse":1}` + "\n"), nil, nil
		case "/storage":
			return nil, []byte("400 Parameter verification failed.\npool: property is missing and it is not optional\n\npvesh create <api_path> [OPTIONS] [FORMAT_OPTIONS]\n"), exitErr(t)
		}
		return nil, []byte("storage 'nope' does not exist\n"), exitErr(t)
	}}
	c := &Client{t: pt, retry: fastRetry, logf: func(string, ...any) {}, local: true}
	var st map[string]any
	if err := c.Get(context.Background(), "/storage/nvme-vm", nil, &st); err != nil || st["type"] != "zfspool" {
		t.Fatalf("get: %v %v", st, err)
	}
	err := c.send(context.Background(), http.MethodPost, "/storage", url.Values{"type": {"zfspool"}, "storage": {"a"}}, nil)
	if KindOf(err) != KindBadRequest || !strings.Contains(err.Error(), "pool: property is missing") {
		t.Errorf("400 through pvesh: %v", err)
	}
	if !IsNotFound(c.Get(context.Background(), "/storage/nope", nil, nil)) {
		t.Errorf("not found through pvesh")
	}
	want := "create /storage --output-format json --storage a --type zfspool"
	if strings.Join(got[1], " ") != want {
		t.Errorf("pvesh args %q, want %q", strings.Join(got[1], " "), want)
	}
}

// TestPveshNeverGetsASecret: pvesh reads parameters from its command line
// only, which any user of the node can read in the process list, so a
// request carrying a secret parameter is refused before pvesh runs, as a
// request that changed nothing, naming the parameter and the way out.
func TestPveshNeverGetsASecret(t *testing.T) {
	const secret = "s3cr3t-Pa55"
	var argv [][]string
	pt := &pveshTransport{bin: "pvesh", run: func(ctx context.Context, bin string, args []string) ([]byte, []byte, error) {
		argv = append(argv, args)
		return []byte("null\n"), nil, nil
	}}
	c := &Client{t: pt, retry: fastRetry, logf: func(string, ...any) {}, local: true}
	for _, name := range SecretParams {
		params := url.Values{"storage": {"backup"}, "type": {"pbs"}, name: {secret}}
		err := c.send(context.Background(), http.MethodPost, "/storage", params, nil)
		if err == nil {
			t.Errorf("%s: sent through pvesh", name)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, name+": a secret is never sent in local mode") || !strings.Contains(msg, "api_host") || strings.Contains(msg, secret) {
			t.Errorf("%s: message %q", name, msg)
		}
		if !NothingDone(err) || IsUnanswered(err) {
			t.Errorf("%s: a refused request must read as nothing done: %v", name, err)
		}
	}
	for _, args := range argv {
		if strings.Contains(strings.Join(args, " "), secret) {
			t.Errorf("pvesh got the secret on its command line: %q", args)
		}
	}
	if len(argv) != 0 {
		t.Errorf("pvesh ran %d times for requests it must refuse: %q", len(argv), argv)
	}
	// the same request without the secret goes through; a delete of the
	// option names it but carries no secret
	if err := c.send(context.Background(), http.MethodPut, "/storage/backup", url.Values{"delete": {"password"}}, nil); err != nil || len(argv) != 1 {
		t.Errorf("delete=password refused: %v (%d runs)", err, len(argv))
	}
}
