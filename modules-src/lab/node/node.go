// Package node runs one simulated PVE host: a real sshd in its own mount,
// UTS and PID namespaces, chrooted into an overlay of a Debian root, with its
// own /dev (loop-backed disks), /run, /tmp and a writable
// /sys/module/zfs/parameters. Everything a module writes lands in the node's
// upper layer, never on the host, and disappears with the lab.
package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/systool"
)

// Config describes a node.
type Config struct {
	Name   string // node name and hostname: "pve01"
	Domain string // DNS domain of the FQDN in /etc/hosts
	Addr   string // the node's loopback address; sshd listens on Addr:22
	PVE    int    // 8 or 9

	// Lower is the read-only Debian root the node stands on: "/" (this
	// machine, Debian 12) for PVE 8, a cached trixie root for PVE 9.
	Lower string
	// Dir is the node's private directory (upper layer, disks, logs).
	Dir string
	// Hide lists directories of Lower masked by an empty tmpfs inside the
	// node, e.g. the labs' own directories when Lower is "/".
	Hide []string

	HostKey        []byte // OpenSSH private host key (ed25519, PEM)
	HostKeyPub     []byte // its authorized_keys line
	AuthorizedKeys []byte // root's keys (in /etc/pve/priv/authorized_keys, C7) when EtcPve is empty
	// EtcPve is a host directory (the lab's pmxcfs mount of this node)
	// bind-mounted at /etc/pve at every start. Empty: /etc/pve is a plain
	// directory of the node holding priv/authorized_keys and known_hosts.
	EtcPve string
	// DropFSTypes are filesystem types of which the node keeps only the
	// mounts inside its root: its mount namespace starts as a copy of the
	// host's, which holds every node's /etc/pve (and other labs'); a copy
	// held here would keep another node's /etc/pve alive after that node
	// powers off.
	DropFSTypes []string
	MemBytes    int64 // RAM the installer "saw": zfs.conf gets ~10 % (B4)

	// Files are written into the node's own filesystem before first start.
	Files map[string]File
	// Binds are host files mounted into the node at every start (the lab's
	// control socket).
	Binds []Bind
	Disks []Disk
}

// File is a file to place in the node: Data, a copy of the host file
// Source, or a hard link to another file of the node (Link, a node path) so
// one multi-call binary can sit under many names without many copies.
type File struct {
	Data   []byte
	Source string
	Link   string
	Mode   os.FileMode // 0 means 0644
}

// Bind mounts host path Source at Target inside the node.
type Bind struct{ Source, Target string }

// Node is a running (or stopped) simulated host.
type Node struct {
	cfg Config

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	disks  []attached
	log    *os.File
}

// New checks cfg and returns a stopped node.
func New(cfg Config) (*Node, error) {
	switch {
	case cfg.Name == "" || cfg.Addr == "" || cfg.Dir == "" || cfg.Lower == "":
		return nil, errors.New("node: Name, Addr, Dir and Lower are required")
	case net.ParseIP(cfg.Addr) == nil || !net.ParseIP(cfg.Addr).IsLoopback():
		return nil, fmt.Errorf("node %s: address %q is not a loopback address; the lab only ever uses 127.0.0.0/8", cfg.Name, cfg.Addr)
	case cfg.PVE != 8 && cfg.PVE != 9:
		return nil, fmt.Errorf("node %s: PVE %d is not simulated (8 or 9)", cfg.Name, cfg.PVE)
	}
	if cfg.MemBytes == 0 {
		cfg.MemBytes = 33533460480 // the seed's nodes: zfs_arc_max=3353346048
	}
	if cfg.Domain == "" {
		cfg.Domain = "lab.internal"
	}
	if _, err := os.Stat(filepath.Join(cfg.Lower, "usr/sbin/sshd")); err != nil {
		return nil, fmt.Errorf("node %s: root %s has no /usr/sbin/sshd (install openssh-server there): %w", cfg.Name, cfg.Lower, err)
	}
	return &Node{cfg: cfg}, nil
}

// Name is the node's name.
func (n *Node) Name() string { return n.cfg.Name }

// Addr is the node's loopback address.
func (n *Node) Addr() string { return n.cfg.Addr }

func (n *Node) upper() string  { return filepath.Join(n.cfg.Dir, "upper") }
func (n *Node) work() string   { return filepath.Join(n.cfg.Dir, "work") }
func (n *Node) merged() string { return filepath.Join(n.cfg.Dir, "root") }

// UpperPath is where a node path lives on the host once written by the node
// (its overlay upper layer); reading it needs no running node.
func (n *Node) UpperPath(p string) string { return filepath.Join(n.upper(), filepath.FromSlash(p)) }

// Start prepares the node's filesystem on first use, attaches its disks and
// starts sshd; it returns once sshd accepts connections. A node started again
// after Stop keeps its files and disks, which makes Stop+Start a reboot: /run
// and /tmp are fresh, the ZFS ARC limit is read again from zfs.conf (B4) and
// the newest installed kernel becomes the running one (B5).
func (n *Node) Start(ctx context.Context) (err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return fmt.Errorf("node %s is already running", n.cfg.Name)
	}
	if err := n.prepare(); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			n.detachDisks()
		}
	}()
	for _, d := range n.cfg.Disks {
		img := filepath.Join(n.cfg.Dir, "disks", d.Name+".img")
		if err := createImage(ctx, img, d); err != nil {
			return fmt.Errorf("node %s: %w", n.cfg.Name, err)
		}
		a, err := attach(ctx, img, d)
		if err != nil {
			return fmt.Errorf("node %s: %w", n.cfg.Name, err)
		}
		n.disks = append(n.disks, a)
	}
	log, err := os.OpenFile(filepath.Join(n.cfg.Dir, "sshd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("node %s: opening its log: %w", n.cfg.Name, err)
	}
	// unshare: a private mount namespace holds the overlay and every mount
	// of the node, so they vanish with its last process; the PID namespace
	// makes sshd PID 1, so killing it ends every session and daemon the node
	// started; --kill-child and Pdeathsig tie all of it to this process.
	unshare, err := systool.Path("unshare")
	if err != nil {
		log.Close()
		return fmt.Errorf("node %s: %w", n.cfg.Name, err)
	}
	cmd := exec.Command(unshare, "--mount", "--uts", "--pid", "--fork", "--kill-child",
		"--propagation", "private", "--", "/bin/sh", "-c", n.script(), "gopve-node-"+n.cfg.Name)
	cmd.Env = systool.Env()
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("node %s: starting unshare: %w", n.cfg.Name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	n.cmd, n.exited, n.log = cmd, exited, log
	if err := n.waitListening(ctx, exited); err != nil {
		n.stopLocked()
		return err
	}
	return nil
}

// waitListening waits until sshd accepts TCP connections on the node address.
func (n *Node) waitListening(ctx context.Context, exited <-chan struct{}) error {
	addr := net.JoinHostPort(n.cfg.Addr, "22")
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("node %s: sshd exited during start-up: %s", n.cfg.Name, n.logTail())
		case <-ctx.Done():
			return fmt.Errorf("node %s: waiting for sshd: %w", n.cfg.Name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s: sshd is not listening on %s after 20s: %s", n.cfg.Name, addr, n.logTail())
		}
	}
}

func (n *Node) logTail() string {
	b, _ := os.ReadFile(filepath.Join(n.cfg.Dir, "sshd.log"))
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return s
}

// Running reports whether the node's sshd is still alive.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// ProcDir is the node's own /proc as the host reaches it,
// /proc/<PID 1 of the node>/root/proc: the processes a user on the node
// sees, and only those, read without starting anything on the node.
func (n *Node) ProcDir() (string, error) {
	n.mu.Lock()
	cmd := n.cmd
	n.mu.Unlock()
	if cmd == nil {
		return "", fmt.Errorf("node %s is not running", n.cfg.Name)
	}
	// unshare --fork has one child, PID 1 of the node's PID namespace.
	pid := cmd.Process.Pid
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return "", fmt.Errorf("node %s: %w", n.cfg.Name, err)
	}
	f := strings.Fields(string(b))
	if len(f) != 1 {
		return "", fmt.Errorf("node %s: unshare (PID %d) has children %q, want the node's PID 1 alone", n.cfg.Name, pid, f)
	}
	return "/proc/" + f[0] + "/root/proc", nil
}

// Stop ends every process of the node, which releases its mounts, and
// detaches its disks. Its files stay (Start again = reboot).
func (n *Node) Stop() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stopLocked()
}

func (n *Node) stopLocked() error {
	var errs []error
	if n.cmd != nil {
		// unshare ignores SIGTERM while it waits; killing it fires
		// --kill-child's SIGKILL at sshd, PID 1 of the node, and the kernel
		// then kills every other process of the node's PID namespace.
		_ = n.cmd.Process.Kill()
		<-n.exited
		n.cmd = nil
		n.log.Close()
		n.waitPortClosed()
	}
	if err := n.detachDisks(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// waitPortClosed waits (up to 10 s) until nothing listens on the node's
// SSH port any more: sshd dies from --kill-child's signal a moment after
// unshare itself, and a Start in that moment would find the old sshd still
// accepting (and then resetting) connections.
func (n *Node) waitPortClosed() {
	addr := net.JoinHostPort(n.cfg.Addr, "22")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(20 * time.Millisecond)
	}
}

func (n *Node) detachDisks() error {
	var errs []error
	for _, a := range n.disks {
		// The node's processes are gone, but the kernel may hold the device
		// a moment longer; retry briefly before reporting.
		for _, loop := range []string{a.loop, a.partLoop} {
			if loop == "" {
				continue
			}
			var err error
			for i := 0; i < 20; i++ {
				if err = detach(loop); err == nil {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	n.disks = nil
	return errors.Join(errs...)
}

// Exec runs a shell script as root in the node's filesystem (its mount
// namespace, chrooted into its root) without going through SSH: what the
// simulator does "on the node" as a PVE daemon would (activating a storage,
// listing its content). It returns stdout; a non-zero exit is an error
// carrying stderr.
func (n *Node) Exec(ctx context.Context, script string) (string, error) {
	return n.ExecInput(ctx, script, nil)
}

// ExecInput is Exec with the script's standard input read from stdin.
func (n *Node) ExecInput(ctx context.Context, script string, stdin io.Reader) (string, error) {
	n.mu.Lock()
	cmd := n.cmd
	n.mu.Unlock()
	if cmd == nil || !n.Running() {
		return "", fmt.Errorf("node %s is not running", n.cfg.Name)
	}
	nsenter, err := systool.Path("nsenter")
	if err != nil {
		return "", err
	}
	chroot, err := systool.Path("chroot")
	if err != nil {
		return "", err
	}
	c := exec.CommandContext(ctx, nsenter, fmt.Sprintf("--mount=/proc/%d/ns/mnt", cmd.Process.Pid), "--",
		chroot, n.merged(), "/bin/sh", "-c", script)
	c.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	var stdout, stderr strings.Builder
	c.Stdin, c.Stdout, c.Stderr = stdin, &stdout, &stderr
	if err := c.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s", strings.TrimSpace(stderr.String()+" "+err.Error()))
	}
	return stdout.String(), nil
}
