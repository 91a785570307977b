// Package pvecm is the lab's pvecm stand-in. Cluster state lives in the lab
// simulator (reached through the control API); the output is what real pvecm
// prints (corosync-quorumtool's sections for status). `pvecm add --use_ssh`
// runs the real /usr/bin/ssh to the member, with host key checking as
// configured: an unknown host key makes ssh fail without a terminal, and,
// like real pvecm (C2), the command then exits 0 without having joined.
// Without --use_ssh, `pvecm add` joins over the API as real pvecm does: the
// peer's root password and certificate answer are read from stdin when it is
// not a terminal, so under automation it fails with "EOF while reading
// password" (exit 255).
package pvecm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
	"github.com/gopve/proxmox/modules-src/lab/tools/control"
	"github.com/gopve/proxmox/modules-src/lab/tools/nodecfg"
)

// Cluster is what pvecm needs from the lab (control.Client implements it).
type Cluster interface {
	ClusterOf(ctx context.Context, node string) (*control.Cluster, error)
	CreateCluster(ctx context.Context, node, name, link0 string) (*control.Cluster, error)
	AddNodeEntry(ctx context.Context, member, node, link0 string, force bool) (*control.Cluster, error)
	FinishJoin(ctx context.Context, node string) (output []string, failure string, err error)
	SetExpected(ctx context.Context, node string, votes int) (*control.Cluster, error)
}

// EnvSSH overrides the ssh client pvecm add --use_ssh runs (tests point it
// at a wrapper that adds -F; host key checking must stay on).
const EnvSSH = "GOPVE_LAB_SSH"

// Tool runs pvecm on one node.
type Tool struct {
	Env     *cli.Env
	Node    *nodecfg.Node
	Cluster Cluster
	Now     func() time.Time
	// Restart restarts local units (corosync, pve-cluster, pveproxy…) the
	// way the real join does; nil does nothing.
	Restart func(units ...string)
}

// notClustered is real pvecm's message on a standalone node (exit 2).
const notClustered = "Error: Corosync config '/etc/pve/corosync.conf' does not exist - is this node part of a cluster?"

const usage = `USAGE: pvecm <COMMAND> [ARGS] [OPTIONS]

       pvecm add <hostname> [OPTIONS]
       pvecm addnode <node> [OPTIONS]
       pvecm create <clustername> [OPTIONS]
       pvecm expected <expected>
       pvecm nodes
       pvecm status
       pvecm updatecerts  [OPTIONS]
`

// die prints an error the way PVE's CLI handler does and returns 255.
func (t *Tool) die(format string, a ...any) int {
	return t.Env.Fail(255, format, a...)
}

// Run executes pvecm with env.Args.
func (t *Tool) Run() int {
	pos, opts, err := cli.PVEArgs(t.Env.Args, map[string]bool{"use_ssh": true, "force": true, "silent": true, "unmerge-known-hosts": true})
	if fp, ok := opts["fingerprint"]; ok && fp == "" {
		return t.die("400 Parameter verification failed.\nfingerprint: value does not match the regex pattern")
	}
	if err != nil {
		return t.die("%v", err)
	}
	if len(pos) == 0 {
		t.Env.Errf("ERROR: no command specified\n%s", usage)
		return 255
	}
	ctx := context.Background()
	switch pos[0] {
	case "status":
		return t.status(ctx)
	case "nodes":
		return t.nodes(ctx)
	case "create":
		return t.create(ctx, pos[1:], opts)
	case "add":
		return t.add(ctx, pos[1:], opts)
	case "addnode":
		return t.addnode(ctx, pos[1:], opts)
	case "expected":
		return t.expected(ctx, pos[1:])
	case "updatecerts":
		if opts["silent"] != "1" {
			t.Env.Outf("(re)generate node files\nmerge authorized SSH keys\n")
		}
		return 0
	case "help":
		t.Env.Outf("%s", usage)
		return 0
	}
	t.Env.Errf("ERROR: unknown command 'pvecm %s'\n%s", pos[0], usage)
	return 255
}

func (t *Tool) local(ctx context.Context) (*control.Cluster, int) {
	cl, err := t.Cluster.ClusterOf(ctx, t.Node.Node)
	if control.IsNotFound(err) {
		return nil, t.Env.Fail(2, "%s", notClustered)
	}
	if err != nil {
		return nil, t.die("%v", err)
	}
	return cl, 0
}

// Quorum numbers as votequorum computes them.
func quorum(cl *control.Cluster) (total, expected, need int, quorate bool) {
	for _, m := range cl.Nodes {
		if m.Online {
			total += m.Votes
		}
	}
	expected = cl.ExpectedVotes
	if expected == 0 {
		for _, m := range cl.Nodes {
			expected += m.Votes
		}
	}
	need = expected/2 + 1
	return total, expected, need, total >= need
}

func (t *Tool) status(ctx context.Context) int {
	cl, code := t.local(ctx)
	if cl == nil {
		return code
	}
	total, expected, need, quorate := quorum(cl)
	online, myID := 0, 0
	for _, m := range cl.Nodes {
		if m.Online {
			online++
		}
		if m.Name == t.Node.Node {
			myID = m.NodeID
		}
	}
	yes := map[bool]string{true: "Yes", false: "No"}
	secure := map[bool]string{true: "on", false: "off"}
	transport := cl.Transport
	if transport == "" {
		transport = "knet"
	}
	ring := cl.RingID
	if ring == "" {
		ring = fmt.Sprintf("%x.%x", max(myID, 1), cl.ConfigVersion)
	}
	flags, quorumLine := "Quorate", strconv.Itoa(need)
	if !quorate {
		flags, quorumLine = "", quorumLine+" Activity blocked"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Cluster information\n-------------------\n")
	fmt.Fprintf(&b, "Name:             %s\nConfig Version:   %d\nTransport:        %s\nSecure auth:      %s\n\n",
		cl.Name, cl.ConfigVersion, transport, secure[cl.SecureAuth || cl.Transport == ""])
	fmt.Fprintf(&b, "Quorum information\n------------------\n")
	fmt.Fprintf(&b, "Date:             %s\nQuorum provider:  corosync_votequorum\nNodes:            %d\nNode ID:          0x%08x\nRing ID:          %s\nQuorate:          %s\n\n",
		t.Now().Format("Mon Jan _2 15:04:05 2006"), online, myID, ring, yes[quorate])
	fmt.Fprintf(&b, "Votequorum information\n----------------------\n")
	fmt.Fprintf(&b, "Expected votes:   %d\nHighest expected: %d\nTotal votes:      %d\nQuorum:           %s\nFlags:            %s\n\n",
		expected, expected, total, quorumLine, flags)
	fmt.Fprintf(&b, "Membership information\n----------------------\n    Nodeid      Votes Name\n")
	for _, m := range cl.Nodes {
		if !m.Online {
			continue
		}
		name := m.Ring0Addr
		if name == "" {
			name = m.Name
		}
		if m.Name == t.Node.Node {
			name += " (local)"
		}
		fmt.Fprintf(&b, "0x%08x %10d %s\n", m.NodeID, m.Votes, name)
	}
	io.WriteString(t.Env.Stdout, b.String())
	return 0
}

func (t *Tool) nodes(ctx context.Context) int {
	cl, code := t.local(ctx)
	if cl == nil {
		return code
	}
	t.Env.Outf("\nMembership information\n----------------------\n    Nodeid      Votes Name\n")
	for _, m := range cl.Nodes {
		if !m.Online {
			continue
		}
		name := m.Name
		if m.Name == t.Node.Node {
			name += " (local)"
		}
		t.Env.Outf("%10d %10d %s\n", m.NodeID, m.Votes, name)
	}
	return 0
}

func (t *Tool) link0(opts map[string]string) string {
	l := opts["link0"]
	if l == "" {
		l = opts["ring0_addr"]
	}
	// "--link0 address=10.0.0.1,priority=10" or a bare address
	if strings.Contains(l, "=") {
		for _, kv := range strings.Split(l, ",") {
			if k, v, _ := strings.Cut(kv, "="); k == "address" {
				return v
			}
		}
	}
	if l == "" {
		l = t.Node.Address
	}
	return l
}

func (t *Tool) restart(units ...string) {
	if t.Restart != nil {
		t.Restart(units...)
	}
}

func (t *Tool) create(ctx context.Context, pos []string, opts map[string]string) int {
	if len(pos) != 1 {
		return t.die("400 not enough arguments\npvecm create <clustername> [OPTIONS]")
	}
	name := pos[0]
	if len(name) > 15 || !validName(name) {
		return t.die("400 Parameter verification failed.\nclustername: invalid format - value does not look like a valid node name\n\npvecm create <clustername> [OPTIONS]")
	}
	if _, err := t.Cluster.ClusterOf(ctx, t.Node.Node); err == nil {
		return t.die("cluster config '/etc/pve/corosync.conf' already exists")
	} else if !control.IsNotFound(err) {
		return t.die("%v", err)
	}
	if _, err := t.Cluster.CreateCluster(ctx, t.Node.Node, name, t.link0(opts)); err != nil {
		return t.die("%v", err)
	}
	t.Env.Outf("Corosync Cluster Engine Authentication key generator.\nGathering 2048 bits for key from /dev/urandom.\nWriting corosync key to /etc/corosync/authkey.\nWriting corosync config to /etc/pve/corosync.conf\nRestart corosync and cluster filesystem\n")
	t.restart("corosync", "pve-cluster")
	return 0
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' && i > 0) {
			return false
		}
	}
	return true
}

// assertJoinable is real pvecm's refusal to join from a node that already
// has a cluster configuration (C6: never a silent re-join).
const assertJoinable = `detected the following error(s):
* authentication key '/etc/corosync/authkey' already exists
* cluster config '/etc/pve/corosync.conf' already exists
* corosync is already running, is this node already in a cluster?!
Check if node may join a cluster failed!`

func (t *Tool) add(ctx context.Context, pos []string, opts map[string]string) int {
	if len(pos) != 1 {
		return t.die("400 not enough arguments\npvecm add <hostname> [OPTIONS]")
	}
	host := pos[0]
	if _, err := t.Cluster.ClusterOf(ctx, t.Node.Node); err == nil {
		if opts["force"] != "1" {
			return t.die("%s", assertJoinable)
		}
	} else if !control.IsNotFound(err) {
		return t.die("%v", err)
	}
	if opts["use_ssh"] != "1" {
		return t.apiJoin(ctx, host, opts)
	}
	link0 := t.link0(opts)
	remote := []string{"pvecm", "addnode", t.Node.Node, "--force", "1"}
	if link0 != "" {
		remote = append(remote, "--link0", link0)
	}
	sshBin := t.Env.Getenv(EnvSSH)
	if sshBin == "" {
		sshBin = "/usr/bin/ssh"
	}
	cmd := exec.CommandContext(ctx, sshBin, append([]string{host}, remote...)...)
	cmd.Stdin = t.Env.Stdin
	var stderr bytes.Buffer
	cmd.Stdout = t.Env.Stdout
	cmd.Stderr = io.MultiWriter(&stderr, t.Env.Stderr)
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && strings.Contains(stderr.String(), "Host key verification failed"):
		// C2: the host key question got EOF; real pvecm gives up here and
		// still exits 0, without having joined.
		return 0
	default:
		return t.die("unable to add node: command failed (ssh %s %s)", host, strings.Join(remote, " "))
	}
	t.Env.Outf("copy corosync auth key\n")
	return t.finishJoin(ctx)
}

// finishJoin is PVE::Cluster::Setup::finish_join, the joiner's half of the
// join (the member has listed this node already): the simulator makes the
// node take the cluster's configuration and prints what finish_join
// prints; on success the local services it restarts are restarted. A
// failure leaves the member listing this node (lab/pvesim/clustersim/join.go).
func (t *Tool) finishJoin(ctx context.Context) int {
	out, failure, err := t.Cluster.FinishJoin(ctx, t.Node.Node)
	for _, l := range out {
		t.Env.Outf("%s\n", l)
	}
	if err != nil {
		return t.die("%v", err)
	}
	if failure != "" {
		return t.die("%s", failure)
	}
	t.restart("corosync", "pve-cluster", "pveproxy", "pvedaemon")
	return 0
}

func (t *Tool) addnode(ctx context.Context, pos []string, opts map[string]string) int {
	if len(pos) != 1 {
		return t.die("400 not enough arguments\npvecm addnode <node> [OPTIONS]")
	}
	// the member's half only: the joiner finishes on its side (finish_join)
	if _, err := t.Cluster.AddNodeEntry(ctx, t.Node.Node, pos[0], opts["link0"], opts["force"] == "1"); err != nil {
		if control.IsNotFound(err) {
			return t.Env.Fail(2, "%s", notClustered)
		}
		return t.die("%v", err)
	}
	return 0
}

func (t *Tool) expected(ctx context.Context, pos []string) int {
	if len(pos) != 1 {
		return t.die("400 not enough arguments\npvecm expected <expected>")
	}
	n, err := strconv.Atoi(pos[0])
	if err != nil || n < 1 {
		return t.die("400 Parameter verification failed.\nexpected: value must have a minimum value of 1\n")
	}
	if _, err := t.Cluster.SetExpected(ctx, t.Node.Node, n); err != nil {
		if control.IsNotFound(err) {
			return t.Env.Fail(2, "%s", notClustered)
		}
		return t.die("%v", err)
	}
	return 0
}
