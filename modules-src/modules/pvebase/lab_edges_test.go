package pvebase

// Issue 7 on a lab node (real apt and dpkg): a suite of another release is
// refused before any write; a held package plans no phantom upgrade and
// does not fail the run; proxies given with `environment:` reach apt-get —
// observed by a logging proxy the node's apt must go through.

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/aptrepo"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
)

func TestLabEdgesPVE8(t *testing.T) {
	t.Parallel()
	testLabEdges(t, 8)
}
func TestLabEdgesPVE9(t *testing.T) {
	t.Parallel()
	testLabEdges(t, 9)
}

func testLabEdges(t *testing.T, pve int) {
	lab, _ := labtest.Start(t, pve, 1)
	bin := labtest.NodeBinary
	r, err := aptrepo.ReleaseFor(pve)
	if err != nil {
		t.Fatal(err)
	}
	mustSSH := func(cmd string) string {
		t.Helper()
		out, err := lab.SSH("pve01", cmd)
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return out
	}
	policy := func(want string) {
		t.Helper()
		out := mustSSH("apt-cache policy pve-manager")
		if !regexp.MustCompile(`Installed: ` + regexp.QuoteMeta(want) + `\s`).MatchString(out) {
			t.Errorf("pve-manager is not at %s:\n%s", want, out)
		}
	}

	// Target guard: another release's suite is refused before any write.
	other := map[int]string{8: "trixie", 9: "bookworm"}[pve]
	before := labStateAndLogs(t, lab)
	for _, check := range []bool{true, false} {
		res := labtest.Invoke(t, lab, bin, "pve_base", map[string]any{"suite": other}, check)
		if msg, _ := res["msg"].(string); !failed(res) || !strings.Contains(msg, "suite: "+other+" differs from this node's release "+r.Codename) {
			t.Errorf("check=%v suite %s: %v", check, other, res["msg"])
		}
	}
	if after := labStateAndLogs(t, lab); after != before {
		t.Errorf("the refused suite changed the node:\n%s\n---\n%s", before, after)
	}

	// A held package (apt-mark hold): check mode predicts no upgrade of it,
	// the real run upgrades the rest and does not fail on it (B2's proof
	// leaves held packages alone), `held` names it.
	mustSSH("apt-mark hold pve-manager >/dev/null")
	args := map[string]any{"remove_subscription_notice": false}
	before = labState(t, lab)
	check := labtest.Invoke(t, lab, bin, "pve_base", args, true)
	if failed(check) || !reflect.DeepEqual(check["held"], []any{"pve-manager"}) {
		t.Fatalf("held, check mode: %v held=%v", check["msg"], check["held"])
	}
	if strings.Contains(strings.Join(changes(check), "\n"), "pve-manager") {
		t.Errorf("check mode plans to upgrade the held pve-manager: %q", changes(check))
	}
	if after := labState(t, lab); after != before {
		t.Fatalf("check mode wrote to the node")
	}
	real := labtest.Invoke(t, lab, bin, "pve_base", args, false)
	if failed(real) || !reflect.DeepEqual(changes(real), changes(check)) || !reflect.DeepEqual(real["held"], []any{"pve-manager"}) {
		t.Fatalf("held, real run: %v changes %q (predicted %q) held=%v", real["msg"], changes(real), changes(check), real["held"])
	}
	policy(r.ManagerInstalled)
	if again := labtest.Invoke(t, lab, bin, "pve_base", args, false); failed(again) || again["changed"] != false {
		t.Errorf("held, second run: %v %q", again["msg"], changes(again))
	}
	mustSSH("apt-mark unhold pve-manager >/dev/null")

	// Proxies from `environment:` reach apt-get: the node's own proxy
	// setting is removed, so apt can only reach the repositories through the
	// logging proxy named in http_proxy/HTTPS_PROXY.
	upstream := strings.TrimSpace(mustSSH(`sed -n 's/^Acquire::http::Proxy "\(.*\)";$/\1/p' ` + aptrepo.AptConfPath))
	proxy := startLoggingProxy(t, upstream)
	mustSSH("cp " + aptrepo.AptConfPath + " /root/apt-lab-conf.saved && sed -i '/::Proxy /d' " + aptrepo.AptConfPath)
	defer mustSSH("cp /root/apt-lab-conf.saved " + aptrepo.AptConfPath)
	env := []string{"http_proxy=http://" + proxy.addr, "HTTPS_PROXY=http://" + proxy.addr, "no_proxy=localhost"}
	check = labtest.InvokeEnv(t, lab, bin, "pve_base", args, true, env)
	if failed(check) || !proxy.saw("download.proxmox.com") {
		t.Fatalf("proxy, check mode: %v; proxy saw %q", check["msg"], proxy.requests())
	}
	n := len(proxy.requests())
	real = labtest.InvokeEnv(t, lab, bin, "pve_base", args, false, env)
	if failed(real) || !reflect.DeepEqual(changes(real), changes(check)) {
		t.Fatalf("proxy, real run: %v changes %q (predicted %q)", real["msg"], changes(real), changes(check))
	}
	if len(proxy.requests()) == n {
		t.Errorf("the real run's apt-get never went through the proxy")
	}
	policy(r.ManagerNew)
}

// loggingProxy is a forward proxy that records each request's method and
// host and hands it on to the lab's own apt proxy.
type loggingProxy struct {
	addr string
	mu   sync.Mutex
	seen []string
}

func startLoggingProxy(t *testing.T, upstream string) *loggingProxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" {
		t.Fatalf("the lab's apt proxy %q: %v", upstream, err)
	}
	// nodes share the host's network namespace: loopback reaches them
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &loggingProxy{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c, u.Host)
		}
	}()
	return p
}

func (p *loggingProxy) serve(c net.Conn, upstream string) {
	defer c.Close()
	up, err := net.Dial("tcp", upstream)
	if err != nil {
		return
	}
	defer up.Close()
	br, upBr := bufio.NewReader(c), bufio.NewReader(up)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		p.mu.Lock()
		p.seen = append(p.seen, req.Method+" "+req.Host)
		p.mu.Unlock()
		if req.Method == http.MethodConnect {
			if err := req.Write(up); err != nil {
				return
			}
			go io.Copy(up, br)
			io.Copy(c, upBr)
			return
		}
		if err := req.WriteProxy(up); err != nil {
			return
		}
		resp, err := http.ReadResponse(upBr, req)
		if err != nil {
			return
		}
		err = resp.Write(c)
		resp.Body.Close()
		if err != nil {
			return
		}
	}
}

func (p *loggingProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

func (p *loggingProxy) saw(host string) bool {
	for _, r := range p.requests() {
		if strings.Contains(r, host) {
			return true
		}
	}
	return false
}
