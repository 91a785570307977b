package core

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/nodecert"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/tasks"
)

// slotCounter hands each test its own 127.77.S.x addresses (S in 200..254)
// so tests run in parallel; a slot someone else holds is skipped.
var slotCounter atomic.Int32

// slotsHeld are the slots of the simulators alive in this process: a slot
// is never handed out twice at once, even when the counter wraps. Checking
// by binding alone is not enough: a joiner's ports are free during its
// restart window, and another test's simulator could take them (seen in
// CI: "node pve02 cannot listen … address already in use").
var slotsHeld sync.Map

type simOpts struct {
	version       int
	nodes         int
	taskDuration  time.Duration
	restartWindow time.Duration
	lockTimeout   time.Duration
	authDelay     time.Duration
	dir           string
}

func testConfig(o simOpts, slot int, dir string) Config {
	var nodes []NodeConfig
	for i := 1; i <= o.nodes; i++ {
		nodes = append(nodes, NodeConfig{Name: fmt.Sprintf("pve%02d", i), Addr: fmt.Sprintf("127.77.%d.%d", slot, 10+i)})
	}
	return Config{Version: o.version, Dir: dir, Nodes: nodes,
		AuthDelay: o.authDelay, TaskDuration: o.taskDuration, RestartWindow: o.restartWindow, LockTimeout: o.lockTimeout}
}

// startSim creates and starts a simulator that the test's cleanup closes.
func startSim(t *testing.T, o simOpts) *Sim {
	t.Helper()
	return startSimWith(t, o, nil)
}

// startSimWith lets a test adjust the Config (hooks) before New.
func startSimWith(t *testing.T, o simOpts, adjust func(*Config)) *Sim {
	t.Helper()
	if o.version == 0 {
		o.version = 9
	}
	if o.nodes == 0 {
		o.nodes = 1
	}
	if o.taskDuration == 0 {
		o.taskDuration = 100 * time.Millisecond
	}
	if o.restartWindow == 0 {
		o.restartWindow = 300 * time.Millisecond
	}
	if o.lockTimeout == 0 {
		o.lockTimeout = 200 * time.Millisecond
	}
	if o.authDelay == 0 {
		o.authDelay = 20 * time.Millisecond
	}
	dir := o.dir
	if dir == "" {
		dir = t.TempDir()
	}
	var lastErr error
	for attempt := 0; attempt < 55; attempt++ {
		slot := 200 + int(slotCounter.Add(1))%55
		if _, taken := slotsHeld.LoadOrStore(slot, true); taken {
			continue
		}
		cfg := testConfig(o, slot, dir)
		if adjust != nil {
			adjust(&cfg)
		}
		s, err := New(cfg)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		if err := s.Start(context.Background()); err != nil {
			s.Close()
			slotsHeld.Delete(slot)
			lastErr = err
			if errors.Is(err, syscall.EADDRINUSE) {
				continue
			}
			t.Fatalf("Start: %v", err)
		}
		t.Cleanup(func() {
			defer slotsHeld.Delete(slot)
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if errs := s.InternalErrors(); len(errs) > 0 {
				t.Errorf("simulator internal errors: %v", errs)
			}
		})
		return s
	}
	t.Fatalf("no free loopback slot: %v", lastErr)
	return nil
}

// apiClient talks to one node like a module would: real TLS, pinned to a
// fingerprint, token or ticket auth. Every 200 answer is checked against the
// schema's `returns` for that endpoint, so every test also proves the
// simulator's response shapes.
type apiClient struct {
	t      *testing.T
	sim    *Sim
	node   string
	base   string
	pin    string // fingerprint to pin; "" = current node fingerprint at creation
	token  string // "user@realm!name=secret"
	ticket string
	csrf   string
	hc     *http.Client
	// nullAnswer marks a call PVE answers with data null although the
	// schema declares a type (a Perl sub returning undef; PVE does not
	// check returns): its answer is not checked against the schema.
	nullAnswer bool
}

// expectNull is c for one call whose answer PVE gives as null.
func (c *apiClient) expectNull() *apiClient { n := *c; n.nullAnswer = true; return &n }

func newClient(t *testing.T, s *Sim, node string) *apiClient {
	t.Helper()
	info, ok := s.Node(node)
	if !ok {
		t.Fatalf("no node %s", node)
	}
	c := &apiClient{t: t, sim: s, node: node, base: info.URL, pin: info.Fingerprint}
	c.hc = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true, VerifyPeerCertificate: c.verify},
		DisableKeepAlives: true,
	}}
	t.Cleanup(c.hc.CloseIdleConnections)
	return c
}

func (c *apiClient) verify(raw [][]byte, _ [][]*x509.Certificate) error {
	if len(raw) == 0 {
		return errors.New("no certificate")
	}
	if got := nodecert.Fingerprint(raw[0]); !strings.EqualFold(got, c.pin) {
		return fmt.Errorf("certificate fingerprint %s does not match pinned %s", got, c.pin)
	}
	return nil
}

func (c *apiClient) withToken(id, secret string) *apiClient {
	c.token = id + "=" + secret
	return c
}

func (c *apiClient) labToken() *apiClient { return c.withToken(c.sim.LabToken()) }

// login gets a ticket; it fails the test unless it works.
func (c *apiClient) login(user, password string) *apiClient {
	c.t.Helper()
	r := c.call("POST", "/access/ticket", url.Values{"username": {user}, "password": {password}})
	if r.status != 200 {
		c.t.Fatalf("login %s: %d %s", user, r.status, r.reason)
	}
	d := r.data.(map[string]any)
	c.ticket, c.csrf = d["ticket"].(string), d["CSRFPreventionToken"].(string)
	return c
}

func (c *apiClient) root() *apiClient { return c.login("root@pam", c.sim.RootPassword()) }

type resp struct {
	status int
	reason string // reason phrase (PVE puts the message's first line there)
	data   any
	body   map[string]any
	errs   map[string]any
	err    error // transport error (connection refused, reset, TLS)
}

func (c *apiClient) call(method, path string, params url.Values) resp {
	return c.callCtx(context.Background(), method, path, params, "")
}

func (c *apiClient) callJSON(method, path string, body map[string]any) resp {
	b, _ := json.Marshal(body)
	return c.callCtx(context.Background(), method, path, nil, string(b))
}

func (c *apiClient) callCtx(ctx context.Context, method, path string, params url.Values, jsonBody string) resp {
	c.t.Helper()
	u := c.base + path
	var body io.Reader
	if method == "GET" || method == "DELETE" {
		if len(params) > 0 {
			u += "?" + params.Encode()
		}
	} else if jsonBody != "" {
		body = strings.NewReader(jsonBody)
	} else {
		body = strings.NewReader(params.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if jsonBody != "" {
		req.Header.Set("Content-Type", "application/json")
	} else if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "PVEAPIToken="+c.token)
	}
	if c.ticket != "" {
		req.AddCookie(&http.Cookie{Name: "PVEAuthCookie", Value: c.ticket})
		if method != "GET" {
			req.Header.Set("CSRFPreventionToken", c.csrf)
		}
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return resp{err: err}
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := resp{status: res.StatusCode, reason: strings.TrimSpace(strings.TrimPrefix(res.Status, fmt.Sprint(res.StatusCode)))}
	if err := json.Unmarshal(raw, &r.body); err == nil {
		r.data = r.body["data"]
		if e, ok := r.body["errors"].(map[string]any); ok {
			r.errs = e
		}
	}
	if r.status == 200 && !(c.nullAnswer && r.data == nil) {
		c.checkReturns(method, path, r.data)
	}
	return r
}

func (c *apiClient) checkReturns(method, path string, data any) {
	c.t.Helper()
	schema := c.sim.schema
	m, _, err := schema.Lookup(method, strings.SplitN(path, "?", 2)[0])
	if err != nil {
		c.t.Errorf("200 for %s %s that the schema does not know: %v", method, path, err)
		return
	}
	if problems := pveschema.CheckValue(m.Returns, data); len(problems) > 0 {
		c.t.Errorf("%s %s answer does not fit the PVE %d schema's returns:\n  %s", method, path, schema.Version, strings.Join(problems, "\n  "))
	}
}

// must fails unless the call answered 200.
func (r resp) must(t *testing.T, what string) resp {
	t.Helper()
	if r.err != nil || r.status != 200 {
		t.Fatalf("%s: status %d %q err %v body %v", what, r.status, r.reason, r.err, r.body)
	}
	return r
}

func (r resp) list() []map[string]any {
	l, _ := r.data.([]any)
	out := make([]map[string]any, 0, len(l))
	for _, e := range l {
		m, _ := e.(map[string]any)
		out = append(out, m)
	}
	return out
}

func (r resp) obj() map[string]any {
	m, _ := r.data.(map[string]any)
	return m
}

// waitTask polls the task on the node named in its UPID until it stops.
func waitTask(t *testing.T, c *apiClient, upid string) map[string]any {
	t.Helper()
	node, ok := tasks.ParseUPID(upid)
	if !ok {
		t.Fatalf("not a UPID: %q", upid)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r := c.call("GET", "/nodes/"+node+"/tasks/"+url.PathEscape(upid)+"/status", nil)
		if r.status == 200 && r.obj()["status"] == "stopped" {
			return r.obj()
		}
		time.Sleep(30 * time.Millisecond)
	}
	t.Fatalf("task %s did not stop in time", upid)
	return nil
}

// eventually retries f until it returns true or the deadline passes.
func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if f() {
			return
		}
		time.Sleep(30 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// quorate reads /cluster/status and tells whether the cluster entry is quorate
// with want nodes online.
func quorate(c *apiClient, want int) bool {
	r := c.call("GET", "/cluster/status", nil)
	if r.status != 200 {
		return false
	}
	q, online := false, 0
	for _, e := range r.list() {
		if e["type"] == "cluster" && fmt.Sprint(e["quorate"]) == "1" {
			q = true
		}
		if e["type"] == "node" && fmt.Sprint(e["online"]) == "1" {
			online++
		}
	}
	return q && online == want
}

// controlAPI serves s's control API for the test and returns a caller that
// sends one JSON request and decodes the JSON answer.
func controlAPI(t *testing.T, s *Sim) func(method, path, body string) (int, map[string]any) {
	t.Helper()
	srv := httptest.NewServer(s.ControlHandler())
	t.Cleanup(srv.Close)
	return func(method, path, body string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(res.Body).Decode(&out)
		return res.StatusCode, out
	}
}
