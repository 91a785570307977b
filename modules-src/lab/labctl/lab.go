// Package labctl starts and stops a whole lab: the apt repositories, the
// PVE API simulator, the control socket and N simulated nodes reachable by
// real SSH, and writes the Ansible inventory and credentials that point at
// them. Tests use it in-process; the `lab` command runs it in a supervisor.
package labctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/aptrepo"
	"github.com/gopve/proxmox/modules-src/lab/node"
	"github.com/gopve/proxmox/modules-src/lab/pmxcfs"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/sshkey"
)

// BaseDir holds the labs' directories when Options.Dir is not given.
const BaseDir = "/var/lib/gopve/labs"

// MaxSlot is the highest slot: node addresses are 127.77.S.(10+i).
const MaxSlot = 200

// Options describe the lab to start.
type Options struct {
	Nodes int    // number of nodes, default 3 (pve01…)
	PVE   int    // PVE major version: 8 or 9 (default 9)
	Slot  int    // 1..MaxSlot; 0 picks the first free slot
	Dir   string // lab directory; default BaseDir/lab<slot>. Must not hold a lab.
	// Root overrides the Debian root the nodes stand on (overlay lower
	// layer). Default: "/" (this machine, Debian 12) for PVE 8, the cached
	// trixie root from hack/debian-root.sh for PVE 9.
	Root string
	// Labtools is the CLI stand-ins binary (modules-src/cmd/labtools),
	// installed in every node under the names of the PVE/ZFS tools. Empty:
	// the nodes have no stand-ins.
	Labtools string
	Domain   string // DNS domain of the nodes' FQDNs (default lab.internal)
	// PveshStartup is the start-up cost of the pvesh stand-in per call
	// (real pvesh loads PVE's Perl API): 0 is the stand-in's default
	// (pvesh.DefaultStartup, 0.5 s), negative none.
	PveshStartup time.Duration
	// NoPerlStartup makes the stand-ins of PVE's other Perl tools (qm,
	// pct, pvecm, pvesm, ha-manager, pvesr) answer at once; by default each
	// first waits what the real tool costs at start (perlstartup.Default,
	// a reconstruction), as pvesh's does.
	// $GOPVE_LAB_PERL_STARTUP=off (EnvPerlStartup) sets it for every lab.
	NoPerlStartup bool
	Log           io.Writer // progress and server logs (nil: discarded)
	// SimConfig adjusts the API simulator's configuration before it starts:
	// tests shorten its timings (FenceDelay, HADelay, TaskDuration…).
	SimConfig func(*pvesim.Config)
}

// EnvPerlStartup set to "off" (or "0", "false", "no") switches the Perl
// tools' start-up costs off in every lab started with it in the
// environment (Options.NoPerlStartup): fast unit runs.
const EnvPerlStartup = "GOPVE_LAB_PERL_STARTUP"

// PerlStartupOff tells whether EnvPerlStartup switches the costs off.
func PerlStartupOff() bool {
	switch os.Getenv(EnvPerlStartup) {
	case "off", "0", "false", "no":
		return true
	}
	return false
}

// NodeInfo is what a user of the lab needs to reach a node.
type NodeInfo struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
}

// Lab is a running lab.
type Lab struct {
	opts    Options
	dir     string
	slot    int
	key     sshkey.Pair
	nodes   []*labNode
	repo    *aptrepo.Repo
	apt     *aptrepo.Server
	control *http.Server
	// labSock serves lab.sock (labsocket.go), on the host only.
	labSock *http.Server
	sim     *pvesim.Sim
	creds   Credentials
	slotF   *os.File
	log     io.Writer

	etcPve    map[string]*pmxcfs.Server // each running node's /etc/pve mount
	powerMu   sync.Mutex                // serialises power actions (power.go)
	closeOnce sync.Once
	closeErr  error
}

type labNode struct {
	info    NodeInfo
	hostKey sshkey.Pair
	node    *node.Node
	off     bool        // powered off (power.go)
	dead    []*deadPort // its ports held unanswered while off
}

// SlotAddr is the lab's own address in slot s (the repository server).
func SlotAddr(s int) string { return fmt.Sprintf("127.77.%d.1", s) }

// NodeAddr is the address of node i (1-based) in slot s.
func NodeAddr(s, i int) string { return fmt.Sprintf("127.77.%d.%d", s, 10+i) }

// NodeName is the name of node i (1-based).
func NodeName(i int) string { return fmt.Sprintf("pve%02d", i) }

// DefaultDir is the directory of the lab in slot s.
func DefaultDir(s int) string { return filepath.Join(BaseDir, fmt.Sprintf("lab%d", s)) }

// Start builds and starts a lab. On error everything already started is
// stopped and the directory removed.
func Start(ctx context.Context, opts Options) (_ *Lab, err error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("the lab needs root: nodes use mount namespaces, overlayfs and loop devices")
	}
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if opts.PVE == 0 {
		opts.PVE = 9
	}
	if PerlStartupOff() {
		opts.NoPerlStartup = true
	}
	if opts.Nodes < 1 || opts.Nodes > 9 {
		return nil, fmt.Errorf("a lab has 1 to 9 nodes, not %d", opts.Nodes)
	}
	if _, err := aptrepo.ReleaseFor(opts.PVE); err != nil {
		return nil, err
	}
	if err := CheckHostTools(); err != nil {
		return nil, err
	}
	if opts.Dir != "" {
		dir, err := filepath.Abs(opts.Dir)
		if err != nil {
			return nil, err
		}
		if err := CheckDir(dir); err != nil {
			return nil, err
		}
	}
	l := &Lab{opts: opts, log: opts.Log}
	if l.log == nil {
		l.log = io.Discard
	}
	begin := time.Now()
	if err := l.claimSlot(opts.Slot); err != nil {
		return nil, err
	}
	l.dir = opts.Dir
	if l.dir == "" {
		l.dir = DefaultDir(l.slot)
	}
	if l.dir, err = filepath.Abs(l.dir); err != nil {
		l.releaseSlot()
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(l.dir, StateFile)); err == nil {
		l.releaseSlot()
		return nil, fmt.Errorf("%s already holds a lab: stop it first (lab down --dir %s)", l.dir, l.dir)
	}
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		l.releaseSlot()
		return nil, fmt.Errorf("creating the lab directory: %w", err)
	}
	defer func() {
		if err != nil {
			if cerr := l.Close(); cerr != nil {
				err = fmt.Errorf("%w (and cleaning up: %v)", err, cerr)
			}
		}
	}()
	l.logf("lab: slot %d, %d PVE %d nodes, directory %s", l.slot, opts.Nodes, opts.PVE, l.dir)

	root, err := l.debianRoot(ctx)
	if err != nil {
		return nil, err
	}
	if l.key, err = sshkey.New("gopve-lab"); err != nil {
		return nil, err
	}
	if l.repo, err = aptrepo.Build(ctx, filepath.Join(l.dir, "repo"), opts.PVE); err != nil {
		return nil, err
	}
	if err := l.startAptServer(); err != nil {
		return nil, err
	}
	if err := l.startSimulator(ctx); err != nil {
		return nil, err
	}
	if err := l.startControl(); err != nil {
		return nil, err
	}
	if err := l.mountEtcPve(); err != nil {
		return nil, err
	}
	if err := l.serveLabSocket(); err != nil {
		return nil, err
	}
	l.logf("lab: repositories and API ready in %s", time.Since(begin).Round(time.Millisecond))

	for i := 1; i <= opts.Nodes; i++ {
		ln, err := l.newNode(i, root)
		if err != nil {
			return nil, err
		}
		l.nodes = append(l.nodes, ln)
	}
	if err := l.eachNode(func(n *labNode) error { return n.node.Start(ctx) }); err != nil {
		return nil, err
	}
	if err := l.eachNode(func(n *labNode) error { return l.install(ctx, n) }); err != nil {
		return nil, err
	}
	if err := l.writeClientFiles(); err != nil {
		return nil, err
	}
	if err := l.writeState(); err != nil {
		return nil, err
	}
	l.logf("lab: up in %s; inventory %s", time.Since(begin).Round(time.Millisecond), l.Inventory())
	return l, nil
}

func (l *Lab) logf(format string, args ...any) { fmt.Fprintf(l.log, format+"\n", args...) }

// eachNode runs fn for every node in parallel and joins the errors.
func (l *Lab) eachNode(fn func(*labNode) error) error {
	errs := make([]error, len(l.nodes))
	var wg sync.WaitGroup
	for i, n := range l.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(n)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// debianRoot returns the lower layer of the nodes.
func (l *Lab) debianRoot(ctx context.Context) (string, error) {
	if l.opts.Root != "" {
		return l.opts.Root, nil
	}
	if l.opts.PVE == 8 {
		return "/", nil
	}
	return TrixieRoot(ctx)
}

func (l *Lab) startAptServer() error {
	srv, err := aptrepo.NewServer(l.repo, l.log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(SlotAddr(l.slot), "80"))
	if err != nil {
		return fmt.Errorf("listening for the apt repositories: %w", err)
	}
	l.apt = srv
	go func() { _ = srv.Serve(ln) }()
	return nil
}

// controlSocket is the lab supervisor's control socket on the host.
func (l *Lab) controlSocket() string { return filepath.Join(l.dir, "control.sock") }

func (l *Lab) startControl() error {
	h := l.sim.ControlHandler()
	_ = os.Remove(l.controlSocket())
	ln, err := net.Listen("unix", l.controlSocket())
	if err != nil {
		return fmt.Errorf("listening on the control socket: %w", err)
	}
	l.control = &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = l.control.Serve(ln) }()
	return nil
}

// Dir is the lab's directory.
func (l *Lab) Dir() string { return l.dir }

// Slot is the lab's slot.
func (l *Lab) Slot() int { return l.slot }

// PVE is the simulated PVE major version.
func (l *Lab) PVE() int { return l.opts.PVE }

// Nodes lists the nodes in order.
func (l *Lab) Nodes() []NodeInfo {
	out := make([]NodeInfo, len(l.nodes))
	for i, n := range l.nodes {
		out[i] = n.info
	}
	return out
}

// Inventory is the path of the lab's Ansible inventory.
func (l *Lab) Inventory() string { return filepath.Join(l.dir, InventoryFile) }

// Credentials are the lab's API credentials (also in credentials.yml).
func (l *Lab) Credentials() Credentials { return l.creds }

// PrivateKey is the path of the lab's SSH client key.
func (l *Lab) PrivateKey() string { return filepath.Join(l.dir, KeyFile) }

// UpperPath is where node name's file p lives on the host once the node has
// written it (its overlay upper layer); "" for an unknown node.
func (l *Lab) UpperPath(name, p string) string {
	if n := l.node(name); n != nil {
		return n.node.UpperPath(p)
	}
	return ""
}

func (l *Lab) node(name string) *labNode {
	for _, n := range l.nodes {
		if n.info.Name == name {
			return n
		}
	}
	return nil
}

// Running reports, per node, whether its sshd is alive.
func (l *Lab) Running() map[string]bool {
	out := map[string]bool{}
	for _, n := range l.nodes {
		out[n.info.Name] = n.node.Running()
	}
	return out
}

// Close stops everything the lab started and removes its directory. It
// refuses to delete the directory while anything is still mounted under it.
func (l *Lab) Close() error {
	l.closeOnce.Do(func() { l.closeErr = l.close() })
	return l.closeErr
}

func (l *Lab) close() error {
	var errs []error
	if l.labSock != nil {
		_ = l.labSock.Close() // no power action starts from now on
	}
	l.powerMu.Lock()
	for _, n := range l.nodes {
		if err := n.node.Stop(); err != nil {
			errs = append(errs, err)
		}
		for _, d := range n.dead {
			_ = d.release()
		}
		n.dead = nil
	}
	if err := l.unmountEtcPve(); err != nil {
		errs = append(errs, err)
	}
	l.powerMu.Unlock()
	if l.control != nil {
		_ = l.control.Close()
	}

	if l.apt != nil {
		_ = l.apt.Close()
	}
	if l.sim != nil {
		if err := l.sim.Close(); err != nil {
			errs = append(errs, fmt.Errorf("stopping the simulator: %w", err))
		}
	}
	if l.dir != "" {
		if err := Cleanup(l.dir); err != nil {
			errs = append(errs, err)
		}
	}
	l.releaseSlot()
	return errors.Join(errs...)
}

// Cleanup removes what a lab may leave in dir after a crash: loop devices
// backed by its disk images, processes chrooted into its nodes, then the
// directory itself. Mounts need no clean-up: they live in the nodes' own
// mount namespaces and vanish with their processes.
func Cleanup(dir string) error {
	var errs []error
	if err := killProcessesUnder(dir); err != nil {
		errs = append(errs, err)
	}
	if err := node.DetachLoopsUnder(dir); err != nil {
		errs = append(errs, err)
	}
	// A crashed supervisor leaves its /etc/pve FUSE mounts (and only those:
	// the nodes' other mounts die with their namespaces) dangling.
	for _, m := range MountsUnder(filepath.Join(dir, "pmxcfs")) {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
		}
	}
	if mounts := MountsUnder(dir); len(mounts) > 0 {
		return errors.Join(append(errs, fmt.Errorf("not removing %s: still mounted there: %s", dir, strings.Join(mounts, ", ")))...)
	}
	if loops, err := node.LoopsUnder(dir); err == nil && len(loops) > 0 {
		return errors.Join(append(errs, fmt.Errorf("not removing %s: loop devices still attached: %s", dir, strings.Join(loops, ", ")))...)
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, fmt.Errorf("removing %s: %w", dir, err))
	}
	return errors.Join(errs...)
}

// LoopsUnder lists the loop devices backed by files under dir.
func LoopsUnder(dir string) ([]string, error) { return node.LoopsUnder(dir) }

// MountsUnder lists the host's mount points under dir (from /proc/self/mountinfo).
func MountsUnder(dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	prefix := filepath.Clean(dir) + "/"
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (strings.HasPrefix(f[4]+"/", prefix)) {
			out = append(out, f[4])
		}
	}
	sort.Strings(out)
	return out
}

// killProcessesUnder kills every process whose root directory is under dir
// (a node's processes, should its supervisor have died without them).
func killProcessesUnder(dir string) error {
	prefix := filepath.Clean(dir) + "/"
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("listing processes: %w", err)
	}
	for _, e := range entries {
		pid := 0
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid <= 1 {
			continue
		}
		root, err := os.Readlink(filepath.Join("/proc", e.Name(), "root"))
		if err != nil || !strings.HasPrefix(root+"/", prefix) {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return nil
}
