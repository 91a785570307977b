package pvecluster

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/host"
	"github.com/gopve/proxmox/modules-src/host/hosttest"
	hostssh "github.com/gopve/proxmox/modules-src/host/ssh"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
	xssh "golang.org/x/crypto/ssh"
)

// lab is the simulator plus, per node, a root directory and an SSH host
// key: enough for the module's files, pvecm and ssh, without a real node.
type lab struct {
	t        *testing.T
	sim      *pvesim.Sim
	roots    map[string]host.Root
	hostKeys map[string]xssh.PublicKey // by address
	mu       sync.Mutex
	cmds     []string
	// silentAdd makes pvecm add exit 0 without joining although the host
	// key is known: the lab's C2 behaviour reached another way.
	silentAdd bool
}

func newLab(t *testing.T, version, n int) *lab {
	s := pveapitest.Start(t, version, n)
	l := &lab{t: t, sim: s, roots: map[string]host.Root{}, hostKeys: map[string]xssh.PublicKey{}}
	for _, name := range s.NodeNames() {
		dir := t.TempDir()
		info, _ := s.Node(name)
		if err := os.MkdirAll(filepath.Join(dir, "etc"), 0o755); err != nil {
			t.Fatal(err)
		}
		hosts := "127.0.0.1 localhost\n" + info.Addr + " " + name + ".lab " + name + "\n"
		if err := os.WriteFile(filepath.Join(dir, "etc/hosts"), []byte(hosts), 0o644); err != nil {
			t.Fatal(err)
		}
		l.roots[name] = host.Root(dir)
		pub, _, _ := ed25519.GenerateKey(rand.Reader)
		k, _ := xssh.NewPublicKey(pub)
		l.hostKeys[info.Addr] = k
	}
	return l
}

func (l *lab) nodes() []any {
	var out []any
	for _, n := range l.sim.NodeNames() {
		info, _ := l.sim.Node(n)
		out = append(out, map[string]any{"name": n, "address": info.Addr})
	}
	return out
}

func (l *lab) nameOf(addr string) string {
	for _, n := range l.sim.NodeNames() {
		if info, _ := l.sim.Node(n); info.Addr == addr {
			return n
		}
	}
	return ""
}

// client reaches a node's API as the lab token without pinning (a join
// changes the certificate; the module's local client is pvesh, which
// needs no TLS).
func (l *lab) client(node string) *pveapi.Client {
	info, _ := l.sim.Node(node)
	id, secret := l.sim.LabToken()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	c, err := pveapi.Connect(context.Background(), pveapi.Connection{Host: info.Addr, Port: pvesim.DefaultPort, TokenID: id, TokenSecret: secret},
		pveapi.Options{HTTPClient: hc, Retry: &pveapitest.FastRetry, TaskPoll: 20 * time.Millisecond})
	if err != nil {
		l.t.Fatal(err)
	}
	return c
}

// trusts tells whether node's known_hosts holds addr's real host key.
func (l *lab) trusts(node, addr string) bool {
	b, _ := os.ReadFile(l.roots[node].Path(hostssh.KnownHosts))
	want := hostssh.HostKey{Names: []string{addr}, Key: l.hostKeys[addr]}.Line()
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && slices.Contains(strings.Split(f[0], ","), addr) && f[1]+" "+f[2] == strings.SplitN(want, " ", 2)[1] {
			return true
		}
	}
	return false
}

// pinned tells whether an ssh command line pins addr's real host key
// (KnownHostsCommand=/bin/echo LINE, as the module's own reads do).
func (l *lab) pinned(args []string, addr string) bool {
	want := hostssh.HostKey{Names: []string{addr}, Key: l.hostKeys[addr]}.Line()
	for i, a := range args {
		if a == "-o" && i+1 < len(args) && args[i+1] == "KnownHostsCommand=/bin/echo "+want {
			return true
		}
	}
	return false
}

// runner plays pvecm and ssh on node: pvecm add --use_ssh without the
// primary's host key exits 0 having done nothing, like the real one (C2).
func (l *lab) runner(node string) host.Runner {
	// Counted: pvecm and ssh are answered here, not started, so the runtime's
	// write count (issue 23 §2) is fed as ExecRunner feeds it on a node.
	return hosttest.Counted(runnerFunc(func(ctx context.Context, cmd host.Command) (host.Result, error) {
		line := cmd.String()
		l.mu.Lock()
		l.cmds = append(l.cmds, node+": "+line)
		l.mu.Unlock()
		res := host.Result{Command: line}
		fail := func(code int, msg string) (host.Result, error) {
			res.ExitCode, res.Stderr = code, msg
			return res, &host.CommandError{Result: res}
		}
		a := cmd.Args
		switch {
		case cmd.Name == "pvecm" && a[0] == "create":
			if _, err := l.sim.CreateCluster(node, a[1], a[3]); err != nil {
				return fail(255, err.Error())
			}
			res.Stdout = "Writing corosync config to /etc/pve/corosync.conf\n"
			return res, nil
		case cmd.Name == "pvecm" && a[0] == "add":
			if !l.trusts(node, a[1]) || l.silentAdd {
				res.Stderr = "Host key verification failed.\n"
				return res, nil // C2
			}
			if _, err := l.sim.AddNode(l.nameOf(a[1]), node, a[4], false); err != nil {
				return fail(255, err.Error())
			}
			res.Stdout = fmt.Sprintf("successfully added node '%s' to cluster.\n", node)
			return res, nil
		case cmd.Name == "ssh":
			i := slices.Index(a, "--")
			addr := strings.TrimPrefix(a[i-1], "root@")
			if !l.trusts(node, addr) && !l.pinned(a, addr) {
				return fail(255, "Host key verification failed.")
			}
			remote := a[i+1:]
			if len(remote) < 3 || remote[0] != "pvesh" || remote[1] != "get" {
				return fail(127, "unexpected remote command "+line)
			}
			var raw json.RawMessage
			if err := l.client(l.nameOf(addr)).Get(ctx, remote[2], nil, &raw); err != nil {
				return fail(255, err.Error())
			}
			res.Stdout = string(raw)
			return res, nil
		}
		return fail(127, "unexpected command "+line)
	}))
}

type runnerFunc func(ctx context.Context, cmd host.Command) (host.Result, error)

func (f runnerFunc) Run(ctx context.Context, cmd host.Command) (host.Result, error) {
	return f(ctx, cmd)
}

func (l *lab) env(node string) Env {
	return Env{
		Root:   l.roots[node],
		Runner: l.runner(node),
		Local:  func(*ansible.Run) (*pveapi.Client, error) { return l.client(node), nil },
		Connect: func(_ *ansible.Run, c pveapi.Connection) (*pveapi.Client, error) {
			hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
			if c.Fingerprint != "" {
				hc = nil // pveapi's own TLS, pinned to the fingerprint
			}
			return pveapi.Connect(context.Background(), c, pveapi.Options{HTTPClient: hc, Retry: &pveapitest.FastRetry, TaskPoll: 20 * time.Millisecond})
		},
		HostKey: func(_ context.Context, addr string) (xssh.PublicKey, error) {
			ip := strings.TrimSuffix(addr, ":22")
			k, ok := l.hostKeys[ip]
			if info, _ := l.sim.Node(l.nameOf(ip)); !info.Online {
				ok = false // a node powered off answers nothing
			}
			if !ok {
				return nil, fmt.Errorf("connection refused")
			}
			return k, nil
		},
		Hostname: func() (string, error) { return node, nil },
		Poll:     20 * time.Millisecond,
	}
}

// run executes pve_cluster on node like Ansible would, diff mode on.
func (l *lab) run(node string, args map[string]any, check bool) map[string]any {
	l.t.Helper()
	m := New(func(*ansible.Run) Env { return l.env(node) })
	env := func(string) (string, bool) { return "", false }
	return ansible.Execute(context.Background(), &m, &ansible.Invocation{Params: args, CheckMode: check, Diff: true}, env, io.Discard)
}

func (l *lab) args(extra map[string]any) map[string]any {
	a := map[string]any{"cluster_name": "lab", "primary": "pve01", "nodes": l.nodes(), "domain": "lab", "wait_timeout": 10}
	for k, v := range extra {
		a[k] = v
	}
	return a
}

// snapshot is every file under every node's root, for "nothing written".
func (l *lab) snapshot() map[string]string {
	out := map[string]string{}
	for n, r := range l.roots {
		_ = filepath.Walk(r.Path("/"), func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				b, _ := os.ReadFile(p)
				out[n+":"+p] = string(b)
			}
			return nil
		})
	}
	return out
}

// role runs what roles/pve_cluster does: every node's key first, then
// the primary, then the others one at a time, in nodes order.
func (l *lab) role(check bool, extra map[string]any) map[string]map[string]any {
	l.t.Helper()
	keys := map[string]any{}
	out := map[string]map[string]any{}
	for _, n := range l.sim.NodeNames() {
		res := l.run(n, l.args(map[string]any{"prepare": []any{"ssh_key"}, "form": false}), check)
		if res["failed"] == true {
			l.t.Fatalf("prepare %s: %v", n, res["msg"])
		}
		keys[n] = res["ssh_public_key"]
		out["prep:"+n] = res
	}
	for _, n := range l.sim.NodeNames() {
		a := l.args(map[string]any{"peer_keys": keys, "prepare": []any{"hosts", "authorized_keys", "known_hosts"}})
		for k, v := range extra {
			a[k] = v
		}
		out[n] = l.run(n, a, check)
	}
	return out
}

func failed(res map[string]any) bool { return res["failed"] == true }

func clusterOf(res map[string]any) *Cluster {
	b, _ := json.Marshal(res["cluster"])
	var c *Cluster
	_ = json.Unmarshal(b, &c)
	return c
}

func memberNames(c *Cluster) string {
	if c == nil {
		return "standalone"
	}
	return c.Name + ":" + strings.Join(c.names(), ",")
}

// The whole role on a fresh simulated cluster, PVE 8 and 9: check mode
// predicts every node's membership with no write anywhere (no file, no API
// write); the real run forms a quorate cluster of three and reads it back
// on every node; a second run changes nothing (C1, C3, C4, C5, C7).
func TestFormCheckRealNoop(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprint("pve", v), func(t *testing.T) {
			l := newLab(t, v, 3)
			before := l.snapshot()
			check := l.role(true, nil)
			if after := l.snapshot(); !maps.Equal(before, after) {
				t.Fatalf("check mode wrote files")
			}
			if m := pveapitest.Mutating(l.sim); len(m) != 0 {
				t.Fatalf("check mode sent writes: %+v", m)
			}
			for _, n := range l.sim.NodeNames() {
				if failed(check[n]) || check[n]["changed"] != true {
					t.Fatalf("check %s: %v", n, check[n]["msg"])
				}
			}
			real := l.role(false, nil)
			for i, n := range l.sim.NodeNames() {
				if failed(real[n]) || real[n]["changed"] != true {
					t.Fatalf("real %s: %v %v", n, real[n]["msg"], real[n]["evidence"])
				}
				if got, want := memberNames(clusterOf(real[n])), memberNames(clusterOf(check[n])); got != want {
					t.Errorf("%s: check predicted %s, real run read back %s", n, want, got)
				}
				if pveapi.String(real[n]["changes"]) != pveapi.String(check[n]["changes"]) {
					t.Errorf("%s: check planned %v, real made %v", n, check[n]["changes"], real[n]["changes"])
				}
				if c := clusterOf(real[n]); c == nil || !c.Quorate || len(c.Members) != i+1 {
					t.Errorf("%s: read back %v", n, c)
				}
				// What the later phases' check runs read through (issue 23 §6):
				// the primary for a joiner, in check mode as in the real run.
				want := "pve01"
				if i == 0 {
					want = ""
				}
				if check[n]["joined_through"] != want || real[n]["joined_through"] != want {
					t.Errorf("%s: joined_through %q in check mode, %q in the real run, want %q", n, check[n]["joined_through"], real[n]["joined_through"], want)
				}
			}
			for _, n := range l.sim.NodeNames() {
				if fi, err := os.Stat(l.roots[n].Path(hostssh.PrivateKey)); err != nil || fi.Mode().Perm() != 0o600 {
					t.Errorf("%s: root's private key: %v %v, want mode 0600", n, fi, err)
				}
				if ci, _ := l.sim.Cluster(n); ci.Name != "lab" || len(ci.Nodes) != 3 {
					t.Errorf("%s in the simulator: %+v", n, ci)
				}
			}
			again := l.role(false, nil)
			for _, n := range l.sim.NodeNames() {
				if failed(again[n]) || again[n]["changed"] != false || again["prep:"+n]["changed"] != false {
					t.Errorf("second run on %s: changed=%v %v %v", n, again[n]["changed"], again[n]["changes"], again[n]["msg"])
				}
				if c := clusterOf(again[n]); c == nil || len(c.Members) != 3 || !c.Quorate {
					t.Errorf("second run on %s reports %v", n, c)
				}
				if again[n]["joined_through"] != "" {
					t.Errorf("second run on %s: joined_through %q, want empty (nothing joined)", n, again[n]["joined_through"])
				}
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool { return maps.Equal(a, b) }

func pveapiString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
