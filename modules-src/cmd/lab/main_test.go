package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
	"github.com/gopve/proxmox/modules-src/lab/labctl"
)

// TestUpIsIdempotentAndDownLeavesNothing drives the real binary: two labs
// side by side (distinct slots), a second `lab up` that changes nothing,
// `lab status`, and `lab down` that removes everything.
func TestUpIsIdempotentAndDownLeavesNothing(t *testing.T) {
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
	base := t.TempDir()
	dirA, dirB := filepath.Join(base, "a"), filepath.Join(base, "b")
	t.Cleanup(func() { _, _ = lab("down", "--dir", dirA); _, _ = lab("down", "--dir", dirB) })

	if out, err := lab("up", "--nodes", "1", "--pve", "8", "--dir", dirA); err != nil {
		t.Fatalf("lab up A: %v\n%s", err, out)
	}
	if out, err := lab("up", "--nodes", "1", "--pve", "8", "--dir", dirB); err != nil {
		t.Fatalf("lab up B: %v\n%s", err, out)
	}
	stA, stB := readState(t, dirA), readState(t, dirB)
	if stA.Slot == stB.Slot {
		t.Fatalf("two labs share slot %d", stA.Slot)
	}
	out, err := lab("up", "--nodes", "1", "--pve", "8", "--dir", dirA)
	if err != nil || !strings.Contains(out, "already up") {
		t.Errorf("second lab up: %v\n%s", err, out)
	}
	if again := readState(t, dirA); again.PID != stA.PID {
		t.Errorf("second lab up replaced the supervisor (%d → %d)", stA.PID, again.PID)
	}
	if out, err := lab("up", "--nodes", "2", "--pve", "8", "--dir", dirA); err == nil {
		t.Errorf("lab up with another shape on a running lab must fail:\n%s", out)
	}
	if out, err := lab("status", "--dir", dirA); err != nil || !strings.Contains(out, "pve01") || !strings.Contains(out, "ssh up") {
		t.Errorf("lab status: %v\n%s", err, out)
	}
	if out, err := lab("ssh", "--dir", dirA, "pve01", "hostname"); err != nil || strings.TrimSpace(out) != "pve01" {
		t.Errorf("lab ssh: %v %q", err, out)
	}
	for _, d := range []string{dirA, dirB} {
		if out, err := lab("down", "--dir", d); err != nil {
			t.Errorf("lab down: %v\n%s", err, out)
		}
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s survived lab down", d)
		}
	}
	if _, err := lab("status", "--dir", dirA); err == nil {
		t.Error("lab status must exit non-zero once the lab is down")
	}
	if loops, _ := exec.Command("losetup", "--list", "--noheadings", "--output", "BACK-FILE").Output(); bytes.Contains(loops, []byte(base)) {
		t.Errorf("loop devices left: %s", loops)
	}
	if alive(stA.PID) || alive(stB.PID) {
		t.Error("a supervisor survived lab down")
	}
}

func readState(t *testing.T, dir string) labctl.State {
	t.Helper()
	st, err := labctl.ReadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestDownAfterSupervisorCrash kills the supervisor outright: its nodes die
// with it (they are tied to it), `lab status` reports the lab dead, and
// `lab down` still detaches the loop devices and removes the directory.
func TestDownAfterSupervisorCrash(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "the lab needs root (namespaces, overlayfs, loop devices)")
	}
	bin := filepath.Join(t.TempDir(), "lab")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "crash")
	t.Cleanup(func() { _ = exec.Command(bin, "down", "--dir", dir).Run() })
	if out, err := exec.Command(bin, "up", "--nodes", "1", "--pve", "8", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("lab up: %v\n%s", err, out)
	}
	st := readState(t, dir)
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for alive(st.PID) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	// The node's sshd goes with its supervisor.
	deadline = time.Now().Add(10 * time.Second)
	for portState(st.Nodes[0].Addr, "22") == "up" && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if portState(st.Nodes[0].Addr, "22") == "up" {
		t.Error("the node's sshd outlived its supervisor")
	}
	out, err := exec.Command(bin, "status", "--dir", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "dead") {
		t.Errorf("lab status after a crash: %v\n%s", err, out)
	}
	if loops, _ := labctl.LoopsUnder(dir); len(loops) == 0 {
		t.Log("no loop device left to clean (the kernel may have released them)")
	}
	if out, err := exec.Command(bin, "down", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("lab down after a crash: %v\n%s", err, out)
	}
	if loops, _ := labctl.LoopsUnder(dir); len(loops) != 0 {
		t.Errorf("loop devices left: %v", loops)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s survived lab down", dir)
	}
}

// Issue 12: once built, `lab up` works from any directory: outside the
// checkout it finds the cached Debian 13 root and, with no labtools next to
// it, installs itself as the nodes' stand-ins.
func TestUpFromAnyDirectory(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "the lab needs root (namespaces, overlayfs, loop devices)")
	}
	bin := filepath.Join(t.TempDir(), "lab")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "lab")
	lab := func(args ...string) (string, error) {
		var out bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Dir = "/" // no checkout above
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	t.Cleanup(func() { _, _ = lab("down", "--dir", dir) })
	if out, err := lab("up", "--nodes", "1", "--pve", "9", "--dir", dir); err != nil {
		t.Fatalf("lab up outside the checkout: %v\n%s", err, out)
	}
	out, err := lab("ssh", "--dir", dir, "pve01", "zpool list; pvesm status | head -n 1; ls -l /usr/sbin/zpool")
	if err != nil || !strings.Contains(out, "no pools available") || !strings.Contains(out, "Name") {
		t.Errorf("stand-ins in a lab started outside the checkout: %v\n%s", err, out)
	}
	if out, err := lab("down", "--dir", dir); err != nil {
		t.Errorf("lab down: %v\n%s", err, out)
	}
}
