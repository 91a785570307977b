package main

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
	"github.com/gopve/proxmox/modules-src/lab/labctl"
)

// Issue 15: `lab power off|on|reboot NODE` by hand. Off: the node's SSH
// and API ports stop answering as a dead host's do (connect times out, no
// refusal) and `lab status` says so; again: "already off"; an unknown node
// is named with the lab's nodes; on and reboot bring SSH back. Every
// command runs without PATH. Then `lab digest` sees a file written there.
func TestPowerFromTheCLI(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "the lab needs root (namespaces, overlayfs, loop devices)")
	}
	bin := filepath.Join(t.TempDir(), "lab")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The longest directory the lab accepts: its control.sock is exactly
	// 107 bytes (gpg-agent's sockets no longer live under it).
	dir := t.TempDir() + "/"
	dir += strings.Repeat("p", labctl.MaxSocketPath-len("/control.sock")-len(dir))
	// Without PATH (cron, sudo's secure_path, a bare env): the lab finds
	// losetup, unshare, mkfs.ext4, gpg, ssh… in the system directories and
	// Go where its tarball installs it (issue 15).
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	lab := func(args ...string) (string, error) {
		var out bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	t.Cleanup(func() { _, _ = lab("down", "--dir", dir) })
	if out, err := lab("up", "--nodes", "1", "--pve", "9", "--dir", dir); err != nil {
		t.Fatalf("lab up: %v\n%s", err, out)
	}
	addr := readState(t, dir).Nodes[0].Addr

	if out, err := lab("power", "--dir", dir, "off", "pve01"); err != nil || !strings.Contains(out, "pve01 powered off") {
		t.Fatalf("lab power off: %v\n%s", err, out)
	}
	for _, port := range []string{"22", "8006"} {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(addr, port), 2*time.Second)
		var ne net.Error
		if err == nil {
			c.Close()
		}
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("port %s of a powered-off node: %v, want a connect timeout", port, err)
		}
	}
	if out, err := lab("status", "--dir", dir); err != nil || !strings.Contains(out, "pve01") || !strings.Contains(out, "powered off") {
		t.Errorf("lab status with pve01 off: %v\n%s", err, out)
	}
	if out, err := lab("power", "--dir", dir, "off", "pve01"); err != nil || !strings.Contains(out, "pve01 is already off") {
		t.Errorf("a second lab power off: %v\n%s", err, out)
	}
	if out, err := lab("power", "--dir", dir, "off", "pve07"); err == nil || !strings.Contains(out, `no node "pve07"`) || !strings.Contains(out, "pve01") {
		t.Errorf("lab power off on an unknown node: %v\n%s", err, out)
	}
	if out, err := lab("power", "--dir", dir, "halt", "pve01"); err == nil || !strings.Contains(out, `unknown power action "halt"`) {
		t.Errorf("lab power with an unknown action: %v\n%s", err, out)
	}
	if out, err := lab("power", "--dir", dir, "on", "pve01"); err != nil || !strings.Contains(out, "pve01 powered on") {
		t.Fatalf("lab power on: %v\n%s", err, out)
	}
	if out, err := lab("ssh", "--dir", dir, "pve01", "hostname"); err != nil || strings.TrimSpace(out) != "pve01" {
		t.Errorf("ssh after power on: %v %q", err, out)
	}
	if out, err := lab("power", "--dir", dir, "reboot", "pve01"); err != nil || !strings.Contains(out, "pve01 rebooted") {
		t.Errorf("lab power reboot: %v\n%s", err, out)
	}
	if out, err := lab("status", "--dir", dir); err != nil || !strings.Contains(out, "ssh up") {
		t.Errorf("lab status after the reboot: %v\n%s", err, out)
	}

	// `lab digest NODE` (issue 27): a file written on the node shows up,
	// what every login writes (wtmp, ~/.ansible) does not, and an unknown
	// node is an error.
	before, err := lab("digest", "--dir", dir, "pve01")
	if err != nil || !strings.Contains(before, "pve01:/etc/") {
		t.Fatalf("lab digest: %v\n%s", err, before)
	}
	if out, err := lab("ssh", "--dir", dir, "pve01", "mkdir -p /root/.ansible/tmp/x && echo hi > /root/written"); err != nil {
		t.Fatalf("ssh: %v\n%s", err, out)
	}
	after, err := lab("digest", "--dir", dir, "pve01")
	if err != nil {
		t.Fatalf("lab digest: %v\n%s", err, after)
	}
	var added []string
	for _, l := range strings.Split(after, "\n") {
		if !strings.Contains(before, l+"\n") {
			added = append(added, l)
		}
	}
	if len(added) != 1 || !strings.HasPrefix(added[0], "pve01:/root/written -rw-r--r-- 0:0 ") {
		t.Errorf("lab digest after writing /root/written: new lines %q, want that file's alone", added)
	}
	if out, err := lab("digest", "--dir", dir, "pve07"); err == nil || !strings.Contains(out, `no node "pve07"`) {
		t.Errorf("lab digest of an unknown node: %v\n%s", err, out)
	}
}
