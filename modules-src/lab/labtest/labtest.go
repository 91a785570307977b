// Package labtest is what a module's end-to-end tests need from the lab:
// start one with the module binary built from this tree and installed on
// pve01, and run a module there the way Ansible runs a binary module (an
// args file, one JSON object back). Only _test.go files import it.
package labtest

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
	"github.com/gopve/proxmox/modules-src/lab/labctl"
)

// NodeBinary is where Start installs the gopve binary on pve01.
const NodeBinary = "/usr/local/bin/gopve-e2e"

// EnvPrebuilt names a directory holding gopve and labtools built from this
// tree (`make test-unit` builds them once, up front): lab tests then use
// them instead of building both for every lab they start. Each build is a
// `go` run and a link, about a CPU-second, and CI starts some eighty labs
// on two cores (issue 27 §3).
const EnvPrebuilt = "GOPVE_TEST_LABBIN"

// prebuilt returns $GOPVE_TEST_LABBIN's gopve and labtools, or "" and ""
// when it is not set; a set one without both binaries fails the test.
func prebuilt(t *testing.T) (gopve, labtools string) {
	t.Helper()
	dir := os.Getenv(EnvPrebuilt)
	if dir == "" {
		return "", ""
	}
	gopve, labtools = filepath.Join(dir, "gopve"), filepath.Join(dir, "labtools")
	for _, p := range []string{gopve, labtools} {
		if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
			t.Fatalf("$%s=%s: no executable %s (%v)", EnvPrebuilt, dir, filepath.Base(p), err)
		}
	}
	return gopve, labtools
}

// Start starts a lab of n nodes running PVE pve, builds gopve from this tree
// and installs it on pve01 at NodeBinary. It returns the lab (closed when the
// test ends) and the local path of the binary. Lab tests need root and the
// tools `make deps` installs; they are skipped with -short.
func Start(t *testing.T, pve, n int) (*labctl.Lab, string) {
	t.Helper()
	return StartWith(t, pve, n, nil)
}

// StartWith is Start with the lab's options adjusted first (adjust may be
// nil), e.g. the simulator's timings through Options.SimConfig.
func StartWith(t *testing.T, pve, n int, adjust func(*labctl.Options)) (*labctl.Lab, string) {
	t.Helper()
	if testing.Short() {
		testenv.Skip(t, "lab end-to-end tests are skipped with -short")
	}
	if os.Geteuid() != 0 {
		testenv.Skip(t, "the lab needs root")
	}
	if err := labctl.CheckHostTools(); err != nil {
		testenv.Skipf(t, "make deps: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	bin, tools := prebuilt(t)
	if bin == "" {
		var err error
		if tools, err = labctl.BuildLabtools(ctx, tmp); err != nil {
			t.Fatal(err)
		}
		repo, err := labctl.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(tmp, "gopve")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./modules-src/cmd/gopve")
		build.Dir, build.Env = repo, append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building gopve: %v\n%s", err, out)
		}
	}
	var log bytes.Buffer
	opts := labctl.Options{Nodes: n, PVE: pve, Dir: filepath.Join(tmp, "lab"), Labtools: tools, Log: &log}
	if adjust != nil {
		adjust(&opts)
	}
	lab, err := labctl.Start(ctx, opts)
	if err != nil {
		t.Fatalf("starting the lab: %v\n%s", err, log.String())
	}
	t.Cleanup(func() {
		if err := lab.Close(); err != nil {
			t.Errorf("closing the lab: %v", err)
		}
	})
	f, err := os.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := lab.Run(ctx, "pve01", "cat > "+NodeBinary+" && chmod 755 "+NodeBinary, f)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("copying gopve to the node: %v %s", err, res.Stderr)
	}
	return lab, bin
}

// Invoke runs module on pve01 with the binary at nodeBin, in check mode or
// not, with diff mode on, and returns its one JSON result (the test fails
// if the binary printed anything else).
func Invoke(t *testing.T, lab *labctl.Lab, nodeBin, module string, args map[string]any, check bool) map[string]any {
	t.Helper()
	return InvokeEnv(t, lab, nodeBin, module, args, check, nil)
}

// InvokeEnv is Invoke with extra environment variables (KEY=value) for the
// module process, as Ansible's `environment:` keyword sets them.
func InvokeEnv(t *testing.T, lab *labctl.Lab, nodeBin, module string, args map[string]any, check bool, env []string) map[string]any {
	t.Helper()
	full := map[string]any{"_gopve_module": module, "_ansible_check_mode": check, "_ansible_diff": true, "_ansible_version": "2.14.18"}
	for k, v := range args {
		full[k] = v
	}
	data, _ := json.Marshal(full)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	run := nodeBin
	if len(env) > 0 {
		quoted := make([]string, len(env))
		for i, kv := range env {
			quoted[i] = "'" + strings.ReplaceAll(kv, "'", `'\''`) + "'"
		}
		run = "env " + strings.Join(quoted, " ") + " " + nodeBin
	}
	res, err := lab.Run(ctx, "pve01", "f=$(mktemp) && cat > $f && "+run+" $f; rc=$?; rm -f $f; exit $rc", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil {
		t.Fatalf("%s did not print one JSON object (%v):\nstdout: %s\nstderr: %s", module, err, res.Stdout, res.Stderr)
	}
	return out
}

// PowerOff cuts node's power (labctl.Lab.PowerOff: no SSH, no API, no
// vote; its ports time out) and fails the test if that fails. The node
// stays off until PowerOn; the lab's Close stops it either way.
func PowerOff(t *testing.T, lab *labctl.Lab, node string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := lab.PowerOff(ctx, node); err != nil {
		t.Fatalf("powering off %s: %v", node, err)
	}
}

// PowerOn boots node again (labctl.Lab.PowerOn) and fails the test if that
// fails; it returns once sshd and the API answer.
func PowerOn(t *testing.T, lab *labctl.Lab, node string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := lab.PowerOn(ctx, node); err != nil {
		t.Fatalf("powering on %s: %v", node, err)
	}
}

// SampleCmdlines runs fn while every process's command line on each of
// nodes (/proc/*/cmdline, NULs as spaces) is read every 5 ms, and returns
// the distinct ones per node, one a line: what any user of a real node
// could have seen on a command line meanwhile (a secret must never be
// there). The sampler reads each node's own /proc from the host
// (labctl.Lab.ProcDir), so it starts nothing on the node: a loop of cat,
// tr and sleep there forked three processes a round on every node, most of
// a core while a run went on (issue 27 §3). A process shorter than the
// period can be missed; the lab's PVE tools also record theirs
// (tools.CommandLog).
func SampleCmdlines(t *testing.T, lab *labctl.Lab, nodes []string, fn func()) map[string]string {
	t.Helper()
	dirs := map[string]string{}
	seen := map[string]map[string]bool{}
	for _, n := range nodes {
		d, err := lab.ProcDir(n)
		if err != nil {
			t.Fatalf("the /proc sampler: %v", err)
		}
		dirs[n], seen[n] = d, map[string]bool{}
	}
	sample := func() {
		for n, d := range dirs {
			for _, line := range cmdlines(d) {
				seen[n][line] = true
			}
		}
	}
	// The first round must see the node's sshd (PID 1), or the sampler
	// reads nothing and its silence would prove nothing.
	sample()
	for n := range dirs {
		if len(seen[n]) == 0 {
			t.Fatalf("the /proc sampler read no command line on %s (%s)", n, dirs[n])
		}
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				sample() // what is still running at the end
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	fn()
	close(stop)
	<-done
	out := map[string]string{}
	for n, lines := range seen {
		out[n] = strings.Join(slices.Sorted(maps.Keys(lines)), "\n")
	}
	return out
}

// cmdlines reads the command line of every process in the /proc at dir,
// NULs as spaces. Processes that end while it reads are skipped.
func cmdlines(dir string) []string {
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	var out []string
	for _, name := range names {
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		b, err := os.ReadFile(dir + "/" + name + "/cmdline")
		if err != nil || len(b) == 0 {
			continue // gone, or a kernel thread
		}
		out = append(out, strings.TrimRight(strings.ReplaceAll(string(b), "\x00", " "), " "))
	}
	return out
}

// FormCluster makes every node of lab a member of one cluster, "lab",
// created on the first node, in the simulator only: for tests of the phases
// after the cluster phase, which start from a formed cluster.
func FormCluster(t *testing.T, lab *labctl.Lab) {
	t.Helper()
	FormClusterOf(t, lab, len(lab.Nodes()))
}

// FormClusterOf is FormCluster of the lab's first n nodes only: the others
// stay standalone, for tests of a node the cluster phase joins.
func FormClusterOf(t *testing.T, lab *labctl.Lab, n int) {
	t.Helper()
	sim, nodes := lab.Sim(), lab.Nodes()[:n]
	if _, err := sim.CreateCluster(nodes[0].Name, "lab", nodes[0].Addr); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes[1:] {
		if _, err := sim.AddNode(nodes[0].Name, n.Name, n.Addr, false); err != nil {
			t.Fatal(err)
		}
	}
}
