// Package pveapitest starts the lab's API simulator in-process for the
// tests of pveapi and of the API modules: real HTTPS, real schema
// validation, faults and the request log, without a lab. Only _test.go
// files import it (it pulls in modules-src/lab).
package pveapitest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
)

// Start runs a simulator of n nodes for PVE version on loopback addresses
// 127.79.X.11…, with short lab durations; it is closed when the test ends.
func Start(t testing.TB, version, n int) *pvesim.Sim { return StartWith(t, version, n, nil) }

// StartWith is Start with the simulator's config adjusted by tune before it
// starts (shorter HA rounds, replication minutes or fencing for pve_ha's
// tests; a storage allocation shorter than the scaled lock timeout, as on
// PVE, for pve_clone's).
func StartWith(t testing.TB, version, n int, tune func(*pvesim.Config)) *pvesim.Sim {
	t.Helper()
	dir := t.TempDir()
	var lastErr error
	for attempt := 0; attempt < 40; attempt++ {
		slot := 1 + rand.IntN(250)
		var nodes []pvesim.NodeConfig
		for i := 1; i <= n; i++ {
			nodes = append(nodes, pvesim.NodeConfig{Name: fmt.Sprintf("pve%02d", i), Addr: fmt.Sprintf("127.79.%d.%d", slot, 10+i)})
		}
		cfg := pvesim.Config{Version: version, Dir: dir, Nodes: nodes,
			AuthDelay: 20 * time.Millisecond, TaskDuration: 150 * time.Millisecond,
			RestartWindow: 300 * time.Millisecond, LockTimeout: 100 * time.Millisecond}
		if tune != nil {
			tune(&cfg)
		}
		s, err := pvesim.New(cfg)
		if err != nil {
			t.Fatalf("pvesim.New: %v", err)
		}
		if err := s.Start(context.Background()); err != nil {
			s.Close()
			lastErr = err
			if errors.Is(err, syscall.EADDRINUSE) {
				continue
			}
			t.Fatalf("pvesim Start: %v", err)
		}
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("closing the simulator: %v", err)
			}
		})
		return s
	}
	t.Fatalf("no free loopback address for the simulator: %v", lastErr)
	return nil
}

// TokenConn is a connection to node as the lab token (root@pam!lab,
// privilege separation off), pinned to the node's certificate.
func TokenConn(t testing.TB, s *pvesim.Sim, node string) pveapi.Connection {
	t.Helper()
	info, ok := s.Node(node)
	if !ok {
		t.Fatalf("no node %s", node)
	}
	id, secret := s.LabToken()
	return pveapi.Connection{Host: info.Addr, Port: pvesim.DefaultPort, TokenID: id, TokenSecret: secret,
		ValidateCerts: true, Fingerprint: info.Fingerprint, Timeout: 5}
}

// FastRetry keeps retry tests quick.
var FastRetry = pveapi.RetryPolicy{ReadRetries: 4, Backoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond,
	LockRetries: 3, LockWait: 10 * time.Millisecond}

// Mutating returns the non-GET requests of the log (what check mode must never send).
func Mutating(s *pvesim.Sim) []pvesim.Request {
	var out []pvesim.Request
	for _, r := range s.Requests() {
		if r.Mutating() {
			out = append(out, r)
		}
	}
	return out
}

// Accepted lists the writes the lab answered with success ("METHOD
// path"), logins aside: what a failed run must count as changed.
func Accepted(s *pvesim.Sim) []string {
	var out []string
	for _, r := range Mutating(s) {
		if r.Path != "/access/ticket" && r.Status >= 200 && r.Status < 300 {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	return out
}

// Cluster forms one cluster of every node of s (pvecm create on pve01, then
// add), so that /etc/pve — storage.cfg included — is shared (S1).
func Cluster(t testing.TB, s *pvesim.Sim) {
	t.Helper()
	names := s.NodeNames()
	first, _ := s.Node(names[0])
	if _, err := s.CreateCluster(names[0], "lab", first.Addr); err != nil {
		t.Fatalf("cluster create: %v", err)
	}
	for _, n := range names[1:] {
		info, _ := s.Node(n)
		if _, err := s.AddNode(names[0], n, info.Addr, false); err != nil {
			t.Fatalf("adding %s: %v", n, err)
		}
	}
	// A join restarts the joiner's API; wait until every node answers.
	deadline := time.Now().Add(10 * time.Second)
	for _, n := range names {
		for {
			info, _ := s.Node(n)
			if info.Serving {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s does not serve its API after the join", n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// Write makes a change by hand through the API, as an operator's pvesh or
// another tool would (drift for a module to find). It fails the test if
// the write is refused or its answer is lost.
func Write(t testing.TB, c *pveapi.Client, method, path string, params url.Values) {
	t.Helper()
	_, err := c.Dispatch(context.Background(), pveapi.Write{Method: method, Path: path, Params: params,
		What: "by hand: " + method + " " + path, Settle: func(context.Context) (bool, error) { return false, nil }, SettleWithin: time.Millisecond})
	if err != nil {
		t.Fatalf("%s %s by hand: %v", method, path, err)
	}
}

// Send makes a write as a test's setup or probe does: through Dispatch,
// once, its answer decoded into out (a task id, a created object); the
// error is returned for the test to judge. A lost answer is not settled.
func Send(ctx context.Context, c *pveapi.Client, method, path string, params url.Values, out any) error {
	o, err := c.Dispatch(ctx, pveapi.Write{Method: method, Path: path, Params: params,
		What: "test: " + method + " " + path, Settle: func(context.Context) (bool, error) { return false, nil }, SettleWithin: time.Millisecond})
	if err != nil || out == nil {
		return err
	}
	return o.Decode(out)
}

// WaitFaultsLeft waits (up to 30 s) until at most left of the simulator's
// faults are installed: a count-limited fault is dropped once spent, so
// for a latency fault the request it holds has arrived and is being
// delayed, and a test can act in that window.
func WaitFaultsLeft(t testing.TB, s *pvesim.Sim, left int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(s.Faults().List()) > left {
		if time.Now().After(deadline) {
			t.Fatalf("faults still unfired after 30 s: %+v", s.Faults().List())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// OneFewer runs fn as subtests on PVE 8 and 9: once with every privilege
// privs(v) gives (drop "", subtest PVE<v>/all), then once per privilege
// left out (PVE<v>/without_<priv>), kept being the privileges granted.
// A module's documented privileges are proven by it: all suffice, and
// each one is needed (issue 26).
func OneFewer(t *testing.T, privs func(v int) []string, fn func(t *testing.T, v int, drop string, kept []string)) {
	for _, v := range []int{8, 9} {
		for _, drop := range append([]string{""}, privs(v)...) {
			name := fmt.Sprintf("PVE%d/all", v)
			if drop != "" {
				name = fmt.Sprintf("PVE%d/without_%s", v, drop)
			}
			t.Run(name, func(t *testing.T) {
				kept := slices.DeleteFunc(slices.Clone(privs(v)), func(p string) bool { return p == drop })
				fn(t, v, drop, kept)
			})
		}
	}
}

// Step is one module run of a one-fewer proof: Run runs the module, and
// when it succeeds it must report Changed.
type Step struct {
	Name    string
	Changed bool
	Run     func() map[string]any
}

// StepsOneFewer runs steps in order for OneFewer's drop against the lab s.
// With every privilege (drop "") each step succeeds reporting its Changed.
// Without one, the first step that fails must say what is missing (named
// matches its message) and report changed exactly when the lab accepted a
// write in that step; when every step succeeds without it, the privilege
// is documented but not needed, and the test fails.
func StepsOneFewer(t *testing.T, s *pvesim.Sim, drop string, named *regexp.Regexp, steps []Step) {
	t.Helper()
	for _, st := range steps {
		s.ResetRequests()
		res := st.Run()
		msg := pveapi.String(res["msg"])
		if res["failed"] != true {
			if res["changed"] != st.Changed {
				t.Fatalf("%s: changed %v, want %v: %s", st.Name, res["changed"], st.Changed, msg)
			}
			continue
		}
		if drop == "" {
			t.Fatalf("%s with every documented privilege: %s", st.Name, msg)
		}
		if !named.MatchString(msg) {
			t.Errorf("without %s: %s failed, the message does not name what PVE refused: %s", drop, st.Name, msg)
		}
		if accepted := Accepted(s); res["changed"] != (len(accepted) > 0) {
			t.Errorf("without %s: %s changed %v, the lab accepted %v", drop, st.Name, res["changed"], accepted)
		}
		t.Logf("without %s: %s: %s", drop, st.Name, msg)
		return
	}
	if drop != "" {
		t.Errorf("without %s every step succeeded: the privilege is documented but not needed", drop)
	}
}

// PrivsepToken adds a privilege-separated token of root@pam on node, granted
// exactly privs on / (propagated): what a token has is then only those.
func PrivsepToken(t testing.TB, s *pvesim.Sim, node string, privs []string) (id, secret string) {
	t.Helper()
	id, secret, err := s.AddToken(node, pvesim.TokenSpec{User: "root@pam", Name: "auto", Privsep: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Grant(node, "/", id, "priv:"+strings.Join(privs, ","), true); err != nil {
		t.Fatal(err)
	}
	return id, secret
}
