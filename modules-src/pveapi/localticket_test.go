package pveapi_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/internal/cost"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// localNode is what local mode reads on node: a copy of its /etc/pve keys
// (so a test may spoil them) and an /etc/hosts line for its name.
type localNode struct {
	etcPve, hosts string
}

func newLocalNode(t *testing.T, s *pvesim.Sim, node string) localNode {
	t.Helper()
	info, _ := s.Node(node)
	dir := t.TempDir()
	src := s.EtcPveDir(node)
	for _, rel := range []string{"priv/authkey.key", "authkey.pub", "pve-www.key", "pve-root-ca.pem"} {
		b, err := os.ReadFile(filepath.Join(src, rel))
		if err != nil {
			t.Fatalf("the lab node has no /etc/pve/%s: %v", rel, err)
		}
		writeFile(t, filepath.Join(dir, rel), b)
		st, _ := os.Stat(filepath.Join(src, rel))
		os.Chtimes(filepath.Join(dir, rel), st.ModTime(), st.ModTime())
	}
	hosts := filepath.Join(t.TempDir(), "hosts")
	writeFile(t, hosts, []byte("127.0.0.1 localhost.localdomain localhost\n"+info.Addr+" "+node+".lab.internal "+node+"\n"))
	return localNode{etcPve: dir, hosts: hosts}
}

func writeFile(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// fakePvesh is a pvesh that records it ran and answers /version.
func fakePvesh(t *testing.T) (bin, calls string) {
	t.Helper()
	dir := t.TempDir()
	calls = filepath.Join(dir, "calls")
	bin = filepath.Join(dir, "pvesh")
	writeFile(t, bin, []byte("#!/bin/sh\necho \"$*\" >> "+calls+"\necho '{\"version\":\"9.2.5\",\"release\":\"9.2\",\"repoid\":\"x\"}'\n"))
	os.Chmod(bin, 0o755)
	return bin, calls
}

func (n localNode) options(pvesh string) pveapi.Options {
	return pveapi.Options{LocalAllowed: func() bool { return true }, EtcPve: n.etcPve, HostsFile: n.hosts,
		Nodename: "pve01", Pvesh: pvesh, Retry: &pveapitest.FastRetry}
}

// TestLocalModeMintsATicket: as root on a node, local mode signs a root@pam
// ticket with the node's authkey and talks HTTPS to the node's own API,
// found at the address /etc/hosts gives its name and verified against
// pve-root-ca.pem; reads and writes (CSRF) work, pvesh never runs, and no
// warning is given. PVE 8 and 9.
func TestLocalModeMintsATicket(t *testing.T) {
	for _, v := range []int{8, 9} {
		s := pveapitest.Start(t, v, 1)
		n := newLocalNode(t, s, "pve01")
		pvesh, calls := fakePvesh(t)
		c, err := pveapi.Connect(context.Background(), pveapi.Connection{}, n.options(pvesh))
		if err != nil {
			t.Fatalf("PVE %d: Connect: %v", v, err)
		}
		if !c.Local() || c.Pvesh() || len(c.Warnings()) > 0 {
			t.Errorf("PVE %d: local %v pvesh %v warnings %q", v, c.Local(), c.Pvesh(), c.Warnings())
		}
		got, err := c.Version(context.Background())
		if err != nil || got.Major != v {
			t.Errorf("PVE %d: version %+v %v", v, got, err)
		}
		if err := pveapitest.Send(context.Background(), c, "POST", "/pools", url.Values{"poolid": {"minted"}}, nil); err != nil {
			t.Errorf("PVE %d: a write with the minted ticket: %v", v, err)
		}
		var pools []map[string]any
		if err := c.Get(context.Background(), "/pools", nil, &pools); err != nil || len(pools) != 1 {
			t.Errorf("PVE %d: pools %v %v", v, pools, err)
		}
		if _, err := os.Stat(calls); err == nil {
			t.Errorf("PVE %d: pvesh ran although the ticket works", v)
		}
		for _, r := range s.Requests() {
			if r.Auth != "root@pam" {
				t.Errorf("PVE %d: %s %s authenticated as %q, want the ticket's root@pam", v, r.Method, r.Path, r.Auth)
			}
		}
	}
}

// TestLocalModeFallsBackToPvesh: when a ticket cannot be minted or is
// refused, local mode uses pvesh and says why in a warning; a ticket the
// node does not accept is never used.
func TestLocalModeFallsBackToPvesh(t *testing.T) {
	s := pveapitest.Start(t, 9, 1)
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	otherPriv := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(other)})
	pubDER, _ := x509.MarshalPKIXPublicKey(&other.PublicKey)
	otherPub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	for name, tc := range map[string]struct {
		spoil func(n localNode)
		why   string
	}{
		"authkey unreadable": {func(n localNode) { os.Remove(filepath.Join(n.etcPve, "priv/authkey.key")) }, "cannot read the cluster's auth key"},
		"signed with another key": {func(n localNode) {
			writeFile(t, filepath.Join(n.etcPve, "priv/authkey.key"), otherPriv)
			writeFile(t, filepath.Join(n.etcPve, "authkey.pub"), otherPub)
		}, "did not answer a minted ticket: signed SHA-1/PKCS#1 v1.5: GET /version: 401 invalid ticket; signed SHA-256/PKCS#1 v1.5: GET /version: 401"},
		"key and public key differ": {func(n localNode) { writeFile(t, filepath.Join(n.etcPve, "authkey.pub"), otherPub) }, "does not belong to"},
		"key due for rotation": {func(n localNode) {
			old := time.Now().Add(-25 * time.Hour)
			os.Chtimes(filepath.Join(n.etcPve, "authkey.pub"), old, old)
		}, "due for rotation"},
		"no CA":      {func(n localNode) { os.Remove(filepath.Join(n.etcPve, "pve-root-ca.pem")) }, "cannot read the cluster CA"},
		"no address": {func(n localNode) { writeFile(t, n.hosts, []byte("127.0.0.1 localhost\n")) }, "has no address for this node's name"},
	} {
		n := newLocalNode(t, s, "pve01")
		tc.spoil(n)
		before := len(s.Requests())
		pvesh, calls := fakePvesh(t)
		c, err := pveapi.Connect(context.Background(), pveapi.Connection{}, n.options(pvesh))
		if err != nil {
			t.Fatalf("%s: Connect: %v", name, err)
		}
		w := c.Warnings()
		if !c.Pvesh() || len(w) != 1 || !strings.Contains(w[0], "local mode uses pvesh") || !strings.Contains(w[0], tc.why) {
			t.Errorf("%s: pvesh %v, warnings %q (want one naming %q)", name, c.Pvesh(), w, tc.why)
		}
		if _, err := c.Version(context.Background()); err != nil {
			t.Errorf("%s: through pvesh: %v", name, err)
		}
		if b, _ := os.ReadFile(calls); !strings.HasPrefix(string(b), "get /version") {
			t.Errorf("%s: pvesh calls %q", name, b)
		}
		reqs := s.Requests()[before:]
		if name == "signed with another key" {
			// each form once (SHA-1 as PVE signs, then SHA-256), by a read
			if len(reqs) != 2 || reqs[0].Status != 401 || reqs[0].Method != "GET" || reqs[1].Status != 401 || reqs[1].Method != "GET" {
				t.Errorf("%s: the refused ticket must be tried once in each form, by a read: %+v", name, reqs)
			}
		} else if len(reqs) != 0 {
			t.Errorf("%s: requests sent without a usable ticket: %+v", name, reqs)
		}
	}
	// Not root: no local mode at all.
	if _, err := pveapi.Connect(context.Background(), pveapi.Connection{}, pveapi.Options{LocalAllowed: func() bool { return false }}); err == nil || !strings.HasPrefix(err.Error(), "api_host:") {
		t.Errorf("not root: %v", err)
	}
}

// TestMintedTicketExpires: a ticket minted as local mode mints it but two
// hours old is refused by the lab's API, as by PVE (Ticket.pm
// verify_rsa_ticket with ticket_lifetime); a fresh one is accepted.
func TestMintedTicketExpires(t *testing.T) {
	s := pveapitest.Start(t, 9, 1)
	info, _ := s.Node("pve01")
	dir := s.EtcPveDir("pve01")
	b, _ := os.ReadFile(filepath.Join(dir, "priv/authkey.key"))
	blk, _ := pem.Decode(b)
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	// a key made 3 h ago, so only the ticket's own age decides
	old := time.Now().Add(-3 * time.Hour)
	os.Chtimes(filepath.Join(dir, "authkey.pub"), old, old)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	status := func(at time.Time) int {
		ticket, err := pveapi.MintTicket(k.(*rsa.PrivateKey), "root@pam", at)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("GET", info.URL+"/nodes", nil)
		req.AddCookie(&http.Cookie{Name: "PVEAuthCookie", Value: ticket})
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	if got := status(time.Now()); got != 200 {
		t.Errorf("fresh minted ticket: %d", got)
	}
	if got := status(time.Now().Add(-2*time.Hour - time.Minute)); got != 401 {
		t.Errorf("minted ticket 2 h 1 min old: %d, want 401", got)
	}
}

// TestPveshUnderTheDeadline (issue 15 item 9): pvesh runs in its own
// process group under the run's deadline: SIGTERM when it passes, SIGKILL
// after the grace, and an error that says the deadline stopped it — not
// 20 s later with an empty message.
func TestPveshUnderTheDeadline(t *testing.T) {
	dir := t.TempDir()
	for name, script := range map[string]string{
		"dies on SIGTERM":     "#!/bin/sh\nsleep 20\n",
		"ignores SIGTERM":     "#!/bin/sh\ntrap '' TERM\nsleep 20 & wait; sleep 20\n",
		"a child keeps going": "#!/bin/sh\n(trap '' TERM; sleep 20) & wait\n",
	} {
		bin := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		writeFile(t, bin, []byte(script))
		os.Chmod(bin, 0o755)
		c, err := pveapi.Connect(context.Background(), pveapi.Connection{}, pveapi.Options{LocalAllowed: func() bool { return true },
			NoTicket: true, Pvesh: bin, PveshGrace: time.Second, Retry: &pveapitest.FastRetry})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		start := time.Now()
		err = pveapitest.Send(ctx, c, "POST", "/pools", url.Values{"poolid": {"x"}}, nil)
		took := time.Since(start)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "deadline") || !strings.Contains(err.Error(), "pvesh") {
			t.Errorf("%s: error %v, want one saying pvesh was stopped at the deadline", name, err)
		}
		if !pveapi.IsUnanswered(err) || pveapi.NothingDone(err) {
			t.Errorf("%s: a write stopped mid-way may have happened: unanswered %v", name, pveapi.IsUnanswered(err))
		}
		t.Logf("%s: %s: %v", name, took.Round(10*time.Millisecond), err)
		// deadline (1 s) + grace (1 s) + load margin
		if took > 6*time.Second {
			t.Errorf("%s: returned after %s", name, took)
		}
	}
}

// TestLocalModeFollowsANewKey: a join gives the node the cluster's auth
// key (a rotation does not matter: the old key keeps verifying); the next request's 401 makes local mode read the keys
// again and send the request once more (PVE refused it before acting), so
// a module that reads the node after joining it keeps working.
func TestLocalModeFollowsANewKey(t *testing.T) {
	s := pveapitest.Start(t, 9, 1)
	n := newLocalNode(t, s, "pve01")
	c, err := pveapi.Connect(context.Background(), pveapi.Connection{}, n.options("/nonexistent/pvesh"))
	if err != nil || c.Pvesh() {
		t.Fatalf("Connect: %v (pvesh %v)", err, c != nil && c.Pvesh())
	}
	// A first write: local mode has confirmed its node (GET /cluster/status).
	if err := pveapitest.Send(context.Background(), c, "POST", "/pools", url.Values{"poolid": {"before-join"}}, nil); err != nil {
		t.Fatalf("a write before the key changed: %v", err)
	}
	// The node joins a cluster: /etc/pve, keys included, is the cluster's.
	dir := s.EtcPveDir("pve01")
	k, _ := rsa.GenerateKey(rand.Reader, 2048)
	pubDER, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	for rel, b := range map[string][]byte{
		"priv/authkey.key": pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}),
		"authkey.pub":      pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}),
	} {
		writeFile(t, filepath.Join(dir, rel), b)
		writeFile(t, filepath.Join(n.etcPve, rel), b)
	}
	s.ResetRequests()
	if err := pveapitest.Send(context.Background(), c, "POST", "/pools", url.Values{"poolid": {"after-join"}}, nil); err != nil {
		t.Fatalf("a write after the key changed: %v", err)
	}
	var got []string
	for _, r := range s.Requests() {
		got = append(got, r.Method+" "+r.Path+" "+http.StatusText(r.Status))
	}
	if len(got) != 2 || got[0] != "POST /pools Unauthorized" || got[1] != "POST /pools OK" {
		t.Errorf("requests %q: want the refused write, then the same write once with the new key", got)
	}
}

// TestLocalModeConfirmsItsNode (issue 24 §1): local mode finds its node's
// API at the address /etc/hosts gives the nodename; a stale line there
// points it at another node's pveproxy, which takes the cluster's ticket
// and, when every node serves the same certificate, passes TLS too. Before
// its first write it reads GET /cluster/status and sends nothing unless
// the entry marked local: 1 is its own node (as on a standalone node,
// whose one entry PVE fakes with local: 1); reads alone pay nothing.
func TestLocalModeConfirmsItsNode(t *testing.T) {
	s := pveapitest.Start(t, 9, 2)
	pveapitest.Cluster(t, s)
	n := newLocalNode(t, s, "pve01")
	other, _ := s.Node("pve02")
	// pve01's /etc/hosts names pve02's address; the certificate there is
	// the one pve01 pins (nodes/pve01/pveproxy-ssl.pem), as when every node
	// has the same custom certificate.
	writeFile(t, n.hosts, []byte("127.0.0.1 localhost\n"+other.Addr+" pve01.lab.internal pve01\n"))
	writeFile(t, filepath.Join(n.etcPve, "nodes", "pve01", "pveproxy-ssl.pem"), other.CertPEM)
	c, err := pveapi.Connect(context.Background(), pveapi.Connection{}, n.options("/nonexistent/pvesh"))
	if err != nil || c.Pvesh() {
		t.Fatalf("Connect: %v (pvesh %v)", err, c != nil && c.Pvesh())
	}
	s.ResetRequests()
	var pools []map[string]any
	if err := c.Get(context.Background(), "/pools", nil, &pools); err != nil {
		t.Fatalf("a read: %v", err)
	}
	err = pveapitest.Send(context.Background(), c, "POST", "/pools", url.Values{"poolid": {"elsewhere"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "POST /pools: not sent") || !strings.Contains(err.Error(), "names node pve02 as the one answering") ||
		!strings.Contains(err.Error(), n.hosts) || !pveapi.NothingDone(err) {
		t.Errorf("a write through another node's pveproxy: %v (nothing done %v)", err, pveapi.NothingDone(err))
	}
	var seen []string
	for _, q := range s.Requests() {
		seen = append(seen, q.Node+" "+q.Method+" "+q.Path)
	}
	if want := "pve02 GET /pools\npve02 GET /cluster/status"; strings.Join(seen, "\n") != want {
		t.Errorf("requests\n%s\nwant\n%s", strings.Join(seen, "\n"), want)
	}

	// The right address: confirmed once, then every write goes out.
	for _, v := range []int{8, 9} {
		s := pveapitest.Start(t, v, 1) // standalone: PVE's one faked entry
		n := newLocalNode(t, s, "pve01")
		c, err := pveapi.Connect(context.Background(), pveapi.Connection{}, n.options("/nonexistent/pvesh"))
		if err != nil || c.Pvesh() {
			t.Fatalf("PVE %d: Connect: %v", v, err)
		}
		s.ResetRequests()
		for _, id := range []string{"a", "b"} {
			if err := pveapitest.Send(context.Background(), c, "POST", "/pools", url.Values{"poolid": {id}}, nil); err != nil {
				t.Errorf("PVE %d: write %s: %v", v, id, err)
			}
		}
		var seen []string
		for _, q := range s.Requests() {
			seen = append(seen, q.Method+" "+q.Path)
		}
		if want := "GET /cluster/status\nPOST /pools\nPOST /pools"; strings.Join(seen, "\n") != want {
			t.Errorf("PVE %d: requests\n%s\nwant\n%s", v, strings.Join(seen, "\n"), want)
		}
	}
}

// TestLocalModeOneConnectionPerTask (issue 24 §3): every call of a task in
// local mode with a minted ticket goes over one HTTPS connection, kept
// alive as pveproxy keeps it (pve-http-server AnyEvent.pm finish_response:
// the next request is read from the same handle while keep_alive > 0):
// the probe, reads, the node check before the first write (GET
// /cluster/status) and the write. Counted by the client's own cost
// counter, and checked against what the lab's pveproxy saw.
func TestLocalModeOneConnectionPerTask(t *testing.T) {
	s := pveapitest.Start(t, 9, 1)
	n := newLocalNode(t, s, "pve01")
	pvesh, _ := fakePvesh(t)
	var counter cost.Counter
	ctx := cost.With(context.Background(), &counter)
	s.ResetRequests()
	c, err := pveapi.Connect(ctx, pveapi.Connection{}, n.options(pvesh))
	if err != nil || c.Pvesh() {
		t.Fatalf("Connect: %v (pvesh %v)", err, c != nil && c.Pvesh())
	}
	for range 3 {
		var pools []map[string]any
		if err := c.Get(ctx, "/pools", nil, &pools); err != nil {
			t.Fatal(err)
		}
	}
	if err := pveapitest.Send(ctx, c, "POST", "/pools", url.Values{"poolid": {"kept"}}, nil); err != nil {
		t.Fatal(err)
	}
	got, seen := counter.Read(), len(s.Requests())
	if got.APIRequests != seen || seen != 6 { // /version, 3 × /pools, /cluster/status, POST
		t.Errorf("the client counted %d requests, the lab saw %d, want 6 both: %+v", got.APIRequests, seen, s.Requests())
	}
	if got.Connections != 1 || got.Processes != 0 {
		t.Errorf("counted %+v: want every request over one connection and no process", got)
	}
}
