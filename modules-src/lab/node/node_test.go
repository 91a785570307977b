package node

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
	"github.com/gopve/proxmox/modules-src/lab/sshkey"
	"golang.org/x/crypto/ssh"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "lab nodes need root (mount and UTS namespaces, overlayfs, loop devices): run the lab tests as root")
	}
}

// run executes cmd on the node over SSH and returns stdout.
func run(t *testing.T, addr string, key sshkey.Pair, hostKey ssh.PublicKey, cmd string) (string, error) {
	t.Helper()
	client, err := ssh.Dial("tcp", addr+":22", &ssh.ClientConfig{
		User: "root", Auth: []ssh.AuthMethod{ssh.PublicKeys(key.Signer)},
		HostKeyCallback: ssh.FixedHostKey(hostKey),
	})
	if err != nil {
		t.Fatalf("ssh %s: %v", addr, err)
	}
	defer client.Close()
	s, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := s.CombinedOutput(cmd)
	return string(out), err
}

// TestNodeLifecycle starts one PVE 8 node on this machine's root and checks
// what the modules rely on: hostname, PVE files (B4, C7), disks (Z2, Z3),
// isolation from the host, and that Stop leaves no loop device.
func TestNodeLifecycle(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	client, err := sshkey.New("lab")
	if err != nil {
		t.Fatal(err)
	}
	host, err := sshkey.New("pve91")
	if err != nil {
		t.Fatal(err)
	}
	const addr = "127.77.199.11"
	n, err := New(Config{Name: "pve91", Addr: addr, PVE: 8, Lower: "/", Dir: filepath.Join(dir, "pve91"),
		Hide: []string{dir}, HostKey: host.PrivatePEM, HostKeyPub: host.Public,
		AuthorizedKeys: append(client.Public, '\n'), Disks: DefaultDisks(1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Stop() })

	for _, tc := range []struct{ cmd, want string }{
		{"hostname", "pve91"},
		{"cat /etc/modprobe.d/zfs.conf", "options zfs zfs_arc_max=3353346048"},       // B4
		{"cat /sys/module/zfs/parameters/zfs_arc_max", "3353346048"},                 // B4, live value
		{"readlink /root/.ssh/authorized_keys", "/etc/pve/priv/authorized_keys"},     // C7
		{"readlink -f /dev/disk/by-id/" + DefaultDisks(1)[0].IDs[0], "/dev/nvme0n1"}, // Z2
		{"ls /dev/disk/by-id/ | grep -c '_1$'", "1"},                                 // Z2 duplicate
		{"blkid -o value -s TYPE /dev/sdb", "ext4"},                                  // Z3
		{"blkid -o value -s PTTYPE /dev/sdc", "gpt"},                                 // Z3
		{"blkid /dev/nvme0n1; echo rc=$?", "rc=2"},                                   // Z3 blank
		{"ls /dev/disk/by-id/ | grep -c -- '-part1$'", "2"},
		{"ls " + dir + " | wc -l", "0"}, // the lab's own directory is hidden
		{"ps -e --no-headers | head -1", "sshd"},
		{"echo 1073741824 > /sys/module/zfs/parameters/zfs_arc_max && cat /sys/module/zfs/parameters/zfs_arc_max", "1073741824"},
	} {
		out, err := run(t, addr, client, host.PublicKey, tc.cmd)
		if err != nil || !strings.Contains(out, tc.want) {
			t.Errorf("%s: %q (err %v), want %q", tc.cmd, out, err, tc.want)
		}
	}
	// Writes stay in the node.
	if out, err := run(t, addr, client, host.PublicKey, "echo node > /etc/gopve-isolation-probe"); err != nil {
		t.Fatalf("write: %v %s", err, out)
	}
	if _, err := os.Stat("/etc/gopve-isolation-probe"); !os.IsNotExist(err) {
		t.Errorf("a file written in the node appeared on the host: %v", err)
	}
	if _, err := os.Stat(n.UpperPath("/etc/gopve-isolation-probe")); err != nil {
		t.Errorf("the node's write is not in its upper layer: %v", err)
	}

	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	if loops, _ := LoopsUnder(dir); len(loops) != 0 {
		t.Errorf("loop devices left after Stop: %v", loops)
	}
	if out, _ := exec.Command("pgrep", "-f", "ListenAddress="+addr).Output(); len(out) != 0 {
		t.Errorf("node processes left after Stop: %s", out)
	}
	// Restart = reboot: /run is fresh, files stay.
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out, _ := run(t, addr, client, host.PublicKey, "cat /etc/gopve-isolation-probe; cat /sys/module/zfs/parameters/zfs_arc_max"); !strings.Contains(out, "node") || !strings.Contains(out, "3353346048") {
		t.Errorf("after restart: %q, want the file kept and the ARC value reloaded from zfs.conf", out)
	}
}
