package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
	"github.com/gopve/proxmox/modules-src/lab/labctl"
)

// Issue 15: a `lab up` that fails says why. The supervisor's start-up
// removes the lab directory, its log included, before it exits; the error
// must still carry the log's tail, and the log stays on disk. A directory
// too long for the lab's sockets is refused before anything starts.
func TestUpFailureSaysWhy(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "the lab needs root (namespaces, overlayfs, loop devices)")
	}
	bin := filepath.Join(t.TempDir(), "lab")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	lab := func(args ...string) (string, error) {
		var out bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	dir := filepath.Join(t.TempDir(), "lab")
	t.Cleanup(func() { _, _ = lab("down", "--dir", dir) })

	// The stand-ins binary is missing: the node's first start fails, after
	// the repositories, the simulator and the mounts were set up.
	missing := filepath.Join(t.TempDir(), "no-such-labtools")
	out, err := lab("up", "--nodes", "1", "--pve", "8", "--dir", dir, "--labtools", missing)
	if err == nil {
		t.Fatalf("lab up with a missing stand-ins binary succeeded:\n%s", out)
	}
	logPath := filepath.Join(dir, "supervisor.log")
	for _, want := range []string{"the lab supervisor stopped", "its log (kept in " + logPath + ") ends:", missing, "no such file"} {
		if !strings.Contains(out, want) {
			t.Errorf("lab up's failure lacks %q:\n%s", want, out)
		}
	}
	log, rerr := os.ReadFile(logPath)
	if rerr != nil || !strings.Contains(string(log), missing) {
		t.Errorf("the supervisor's log is not kept with the reason (%v):\n%s", rerr, log)
	}
	if _, err := labctl.ReadState(dir); err == nil {
		t.Error("a failed lab up left a lab.json")
	}
	if loops, _ := labctl.LoopsUnder(dir); len(loops) > 0 {
		t.Errorf("a failed lab up left loop devices: %v", loops)
	}
	if m := labctl.MountsUnder(dir); len(m) > 0 {
		t.Errorf("a failed lab up left mounts: %v", m)
	}
	// The kept log does not stop the next start.
	if out, err := lab("down", "--dir", dir); err != nil {
		t.Errorf("lab down after a failed start: %v\n%s", err, out)
	}

	long := filepath.Join(t.TempDir(), strings.Repeat("l", labctl.MaxSocketPath))
	out, err = lab("up", "--nodes", "1", "--pve", "8", "--dir", long)
	if err == nil || !strings.Contains(out, "is too long") || !strings.Contains(out, "sun_path is 108 bytes") || !strings.Contains(out, long+"/") {
		t.Errorf("lab up in a directory too long for its sockets: %v\n%s", err, out)
	}
	if _, err := os.Stat(long); !os.IsNotExist(err) {
		t.Errorf("the refused directory was created: %v", err)
	}
}
