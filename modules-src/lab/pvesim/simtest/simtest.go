// Package simtest starts simulators for tests and talks to them as a module
// would: real TLS pinned to the node's fingerprint, token or ticket auth,
// and every 200 answer checked against the schema's returns, so every test
// also proves the simulator's response shapes. The lab's own tests use it
// from core, from the backends and from pvesim's tests of the whole
// simulator; it does not import pvesim, so its callers pass the
// constructor that wires what they test (pvesim.New).
package simtest

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
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
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

// Opts are a test simulator's size and timings; zero values get fast
// defaults (PVE 9, one node, 100 ms tasks).
type Opts struct {
	Version       int
	Nodes         int
	TaskDuration  time.Duration
	RestartWindow time.Duration
	LockTimeout   time.Duration
	AuthDelay     time.Duration
	Dir           string
}

// Sim is what simtest drives of a simulator: pvesim.Sim has it all (core's
// Sim, which it embeds, has all but the backends' parts of the Go API).
type Sim interface {
	Start(context.Context) error
	Close() error
	InternalErrors() []string
	Node(name string) (core.NodeInfo, bool)
	RootPassword() string
	LabToken() (id, secret string)
	Schema() *pveschema.Schema
	ControlHandler() http.Handler
	ReadPmxcfs(node, path string) (string, bool, error)
}

// New makes a simulator from a Config: pvesim.New, with every backend.
type New[S Sim] func(core.Config) (S, error)

// Config is the simulator o describes, on loopback slot 127.77.slot.x.
func Config(o Opts, slot int, dir string) core.Config {
	var nodes []core.NodeConfig
	for i := 1; i <= o.Nodes; i++ {
		nodes = append(nodes, core.NodeConfig{Name: fmt.Sprintf("pve%02d", i), Addr: fmt.Sprintf("127.77.%d.%d", slot, 10+i)})
	}
	return core.Config{Version: o.Version, Dir: dir, Nodes: nodes,
		AuthDelay: o.AuthDelay, TaskDuration: o.TaskDuration, RestartWindow: o.RestartWindow, LockTimeout: o.LockTimeout}
}

// Start creates and starts a simulator that the test's cleanup closes.
func Start[S Sim](t *testing.T, newSim New[S], o Opts) S {
	t.Helper()
	return StartWith(t, newSim, o, nil)
}

// StartWith lets a test adjust the Config (hooks) before New.
func StartWith[S Sim](t *testing.T, newSim New[S], o Opts, adjust func(*core.Config)) S {
	t.Helper()
	if o.Version == 0 {
		o.Version = 9
	}
	if o.Nodes == 0 {
		o.Nodes = 1
	}
	if o.TaskDuration == 0 {
		o.TaskDuration = 100 * time.Millisecond
	}
	if o.RestartWindow == 0 {
		o.RestartWindow = 300 * time.Millisecond
	}
	if o.LockTimeout == 0 {
		o.LockTimeout = 200 * time.Millisecond
	}
	if o.AuthDelay == 0 {
		o.AuthDelay = 20 * time.Millisecond
	}
	dir := o.Dir
	if dir == "" {
		dir = t.TempDir()
	}
	var lastErr error
	for attempt := 0; attempt < 55; attempt++ {
		slot := 200 + int(slotCounter.Add(1))%55
		if _, taken := slotsHeld.LoadOrStore(slot, true); taken {
			continue
		}
		cfg := Config(o, slot, dir)
		if adjust != nil {
			adjust(&cfg)
		}
		s, err := newSim(cfg)
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
	var none S
	return none
}

// Client talks to one node like a module would: real TLS, pinned to a
// fingerprint, token or ticket auth. Every 200 answer is checked against the
// schema's `returns` for that endpoint.
type Client struct {
	t      *testing.T
	sim    Sim
	Node   string
	base   string
	Pin    string // fingerprint to pin; "" = current node fingerprint at creation
	token  string // "user@realm!name=secret"
	Ticket string // PVEAuthCookie after Login
	CSRF   string // CSRFPreventionToken after Login
	hc     *http.Client
	// nullAnswer marks a call PVE answers with data null although the
	// schema declares a type (a Perl sub returning undef; PVE does not
	// check returns): its answer is not checked against the schema.
	nullAnswer bool
}

// ExpectNull is c for one call whose answer PVE gives as null.
func (c *Client) ExpectNull() *Client { n := *c; n.nullAnswer = true; return &n }

// NewClient is a client of node, pinned to its current certificate.
func NewClient(t *testing.T, s Sim, node string) *Client {
	t.Helper()
	info, ok := s.Node(node)
	if !ok {
		t.Fatalf("no node %s", node)
	}
	c := &Client{t: t, sim: s, Node: node, base: info.URL, Pin: info.Fingerprint}
	c.hc = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true, VerifyPeerCertificate: c.verify},
		DisableKeepAlives: true,
	}}
	t.Cleanup(c.hc.CloseIdleConnections)
	return c
}

func (c *Client) verify(raw [][]byte, _ [][]*x509.Certificate) error {
	if len(raw) == 0 {
		return errors.New("no certificate")
	}
	if got := nodecert.Fingerprint(raw[0]); !strings.EqualFold(got, c.Pin) {
		return fmt.Errorf("certificate fingerprint %s does not match pinned %s", got, c.Pin)
	}
	return nil
}

func (c *Client) WithToken(id, secret string) *Client {
	c.token = id + "=" + secret
	return c
}

func (c *Client) LabToken() *Client { return c.WithToken(c.sim.LabToken()) }

// Login gets a ticket; it fails the test unless it works.
func (c *Client) Login(user, password string) *Client {
	c.t.Helper()
	r := c.Call("POST", "/access/ticket", url.Values{"username": {user}, "password": {password}})
	if r.Status != 200 {
		c.t.Fatalf("login %s: %d %s", user, r.Status, r.Reason)
	}
	d := r.Data.(map[string]any)
	c.Ticket, c.CSRF = d["ticket"].(string), d["CSRFPreventionToken"].(string)
	return c
}

func (c *Client) Root() *Client { return c.Login("root@pam", c.sim.RootPassword()) }

// Resp is one answer.
type Resp struct {
	Status int
	Reason string // reason phrase (PVE puts the message's first line there)
	Data   any
	Body   map[string]any
	Errs   map[string]any
	Err    error // transport error (connection refused, reset, TLS)
}

func (c *Client) Call(method, path string, params url.Values) Resp {
	return c.CallCtx(context.Background(), method, path, params, "")
}

func (c *Client) CallJSON(method, path string, body map[string]any) Resp {
	b, _ := json.Marshal(body)
	return c.CallCtx(context.Background(), method, path, nil, string(b))
}

func (c *Client) CallCtx(ctx context.Context, method, path string, params url.Values, jsonBody string) Resp {
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
	if c.Ticket != "" {
		req.AddCookie(&http.Cookie{Name: "PVEAuthCookie", Value: c.Ticket})
		if method != "GET" {
			req.Header.Set("CSRFPreventionToken", c.CSRF)
		}
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return Resp{Err: err}
	}
	r := decode(res)
	if r.Status == 200 && !(c.nullAnswer && r.Data == nil) {
		c.CheckReturns(method, path, r.Data)
	}
	return r
}

// Send sends body as it is, with the client's token or ticket cookie (no
// CSRF token: what an upload sends) and decodes the answer; its answer is
// not checked against the schema (a multipart upload, a form PVE reads
// differently from net/url).
func (c *Client) Send(method, path, contentType string, body io.Reader) Resp {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	if c.token != "" {
		req.Header.Set("Authorization", "PVEAPIToken="+c.token)
	}
	if c.Ticket != "" {
		req.AddCookie(&http.Cookie{Name: "PVEAuthCookie", Value: c.Ticket})
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return Resp{Err: err}
	}
	return decode(res)
}

// decode reads an answer: status, reason phrase and the JSON body.
func decode(res *http.Response) Resp {
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := Resp{Status: res.StatusCode, Reason: strings.TrimSpace(strings.TrimPrefix(res.Status, fmt.Sprint(res.StatusCode)))}
	if err := json.Unmarshal(raw, &r.Body); err == nil {
		r.Data = r.Body["data"]
		if e, ok := r.Body["errors"].(map[string]any); ok {
			r.Errs = e
		}
	}
	return r
}

// CheckReturns fails the test unless data fits the schema's returns of
// method and path.
func (c *Client) CheckReturns(method, path string, data any) {
	c.t.Helper()
	schema := c.sim.Schema()
	m, _, err := schema.Lookup(method, strings.SplitN(path, "?", 2)[0])
	if err != nil {
		c.t.Errorf("200 for %s %s that the schema does not know: %v", method, path, err)
		return
	}
	if problems := pveschema.CheckValue(m.Returns, data); len(problems) > 0 {
		c.t.Errorf("%s %s answer does not fit the PVE %d schema's returns:\n  %s", method, path, schema.Version, strings.Join(problems, "\n  "))
	}
}

// Must fails unless the call answered 200.
func (r Resp) Must(t *testing.T, what string) Resp {
	t.Helper()
	if r.Err != nil || r.Status != 200 {
		t.Fatalf("%s: status %d %q err %v body %v", what, r.Status, r.Reason, r.Err, r.Body)
	}
	return r
}

func (r Resp) List() []map[string]any {
	l, _ := r.Data.([]any)
	out := make([]map[string]any, 0, len(l))
	for _, e := range l {
		m, _ := e.(map[string]any)
		out = append(out, m)
	}
	return out
}

func (r Resp) Obj() map[string]any {
	m, _ := r.Data.(map[string]any)
	return m
}

// WaitTask polls the task on the node named in its UPID until it stops.
func WaitTask(t *testing.T, c *Client, upid string) map[string]any {
	t.Helper()
	node, ok := tasks.ParseUPID(upid)
	if !ok {
		t.Fatalf("not a UPID: %q", upid)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r := c.Call("GET", "/nodes/"+node+"/tasks/"+url.PathEscape(upid)+"/status", nil)
		if r.Status == 200 && r.Obj()["status"] == "stopped" {
			return r.Obj()
		}
		time.Sleep(30 * time.Millisecond)
	}
	t.Fatalf("task %s did not stop in time", upid)
	return nil
}

// Eventually retries f until it returns true or the deadline passes.
func Eventually(t *testing.T, what string, f func() bool) {
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

// Quorate reads /cluster/status and tells whether the cluster entry is quorate
// with want nodes online.
func Quorate(c *Client, want int) bool {
	r := c.Call("GET", "/cluster/status", nil)
	if r.Status != 200 {
		return false
	}
	q, online := false, 0
	for _, e := range r.List() {
		if e["type"] == "cluster" && fmt.Sprint(e["quorate"]) == "1" {
			q = true
		}
		if e["type"] == "node" && fmt.Sprint(e["online"]) == "1" {
			online++
		}
	}
	return q && online == want
}

// ControlAPI serves s's control API for the test and returns a caller that
// sends one JSON request and decodes the JSON answer.
func ControlAPI(t *testing.T, s Sim) func(method, path, body string) (int, map[string]any) {
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

// CreateVM creates vmid on c's node and waits for the qmcreate task.
func CreateVM(t *testing.T, c *Client, vmid int, extra url.Values) {
	t.Helper()
	p := url.Values{"vmid": {fmt.Sprint(vmid)}, "name": {fmt.Sprintf("vm%d", vmid)}, "memory": {"2048"}, "cores": {"2"},
		"net0": {"virtio,bridge=vmbr0"}, "scsi0": {"local-lvm:8"}}
	for k, v := range extra {
		p[k] = v
	}
	upid := c.Call("POST", "/nodes/"+c.Node+"/qemu", p).Must(t, "create VM").Data.(string)
	if st := WaitTask(t, c, upid); st["exitstatus"] != "OK" {
		t.Fatalf("create %d: %v", vmid, st)
	}
}

// MustTask runs a task-starting call and returns its final status.
func MustTask(t *testing.T, c *Client, method, path string, p url.Values) map[string]any {
	t.Helper()
	upid, _ := c.Call(method, path, p).Must(t, method+" "+path).Data.(string)
	return WaitTask(t, c, upid)
}

// VMNode is the node and status /cluster/resources gives guest vmid ("",
// "" when it lists no such guest): where HA or a migration has put it.
func VMNode(t *testing.T, c *Client, vmid int) (node, status string) {
	t.Helper()
	for _, e := range c.Call("GET", "/cluster/resources", url.Values{"type": {"vm"}}).Must(t, "resources").List() {
		if e["vmid"] == float64(vmid) {
			return fmt.Sprint(e["node"]), fmt.Sprint(e["status"])
		}
	}
	return "", ""
}
