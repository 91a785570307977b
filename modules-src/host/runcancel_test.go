package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// At the deadline the whole process group gets SIGTERM, and a program that
// handles it finishes its cleanup: nothing is SIGKILLed while it does.
func TestCancelSendsSIGTERMToTheGroup(t *testing.T) {
	dir := t.TempDir()
	script := `trap 'sleep 0.3; echo cleaned > ` + dir + `/parent; exit 143' TERM
sh -c "trap 'echo cleaned > ` + dir + `/child; exit 143' TERM; while :; do sleep 0.05; done" &
while :; do sleep 0.05; done`
	r := &ExecRunner{TermGrace: 5 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := r.Run(ctx, Command{Name: "sh", Args: []string{"-c", script}})
	if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "cannot run") {
		t.Fatalf("err = %v", err)
	}
	if res.ExitCode != 143 {
		t.Errorf("exit code %d, want 143 (exit 143 after SIGTERM)", res.ExitCode)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("took %s: the cancelled command was not stopped by SIGTERM", took)
	}
	for _, who := range []string{"parent", "child"} {
		if b, err := os.ReadFile(filepath.Join(dir, who)); err != nil || strings.TrimSpace(string(b)) != "cleaned" {
			t.Errorf("%s did not get SIGTERM and finish its cleanup: %q %v", who, b, err)
		}
	}
}

// A program that ignores SIGTERM is killed after the grace period, with its
// children.
func TestCancelKillsAfterGrace(t *testing.T) {
	dir := t.TempDir()
	script := `trap '' TERM
sh -c "trap '' TERM; while :; do date +%s%N > ` + dir + `/alive; sleep 0.05; done" &
while :; do sleep 0.05; done`
	r := &ExecRunner{TermGrace: 300 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	r.Run(ctx, Command{Name: "sh", Args: []string{"-c", script}})
	if took := time.Since(start); took < 450*time.Millisecond || took > 3*time.Second {
		t.Errorf("took %s, want the deadline plus the grace period", took)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "alive"))
	time.Sleep(300 * time.Millisecond)
	after, _ := os.ReadFile(filepath.Join(dir, "alive"))
	if string(before) != string(after) {
		t.Error("the child survived the kill")
	}
}

// Check mode's runner: only commands on the read-only allow-list run; any
// other is a bug that panics before it runs.
func TestReadOnlyRunner(t *testing.T) {
	sandbox := filepath.Join(os.TempDir(), SandboxPrefix+"123")
	noCache := []string{"-o", "Dir::Cache::pkgcache=", "-o", "Dir::Cache::srcpkgcache=", "-o", "Dir::Log::Planner=/dev/null"}
	sb := []string{"-c", sandbox + "/apt.conf", "-o", "Dir::State::Lists=" + sandbox + "/lists", "-o", "Dir::Cache=" + sandbox + "/cache", "-o", "Dir::Log::Planner=/dev/null"}
	cases := []struct {
		cmd  Command
		read bool
	}{
		{Command{Name: "apt-get", Args: append(append([]string{}, noCache...), "-s", "-q", "dist-upgrade")}, true},
		{Command{Name: "apt-get", Args: []string{"-s", "-q", "dist-upgrade"}}, false},                                     // would save /var/cache/apt/*.bin
		{Command{Name: "apt-get", Args: append(append([]string{}, noCache[:4]...), "-s", "-q", "install", "vim")}, false}, // would log its plan to eipp.log.xz
		{Command{Name: "apt-get", Args: append(append([]string{}, sb...), "-o", "DPkg::Lock::Timeout=300", "update")}, true},
		{Command{Name: "apt-get", Args: append(append([]string{}, sb[2:]...), "update")}, false}, // node's update hooks would run
		{Command{Name: "apt-get", Args: append(append([]string{}, sb...), "-s", "install", "vim")}, true},
		{Command{Name: "apt-get", Args: append(append([]string{}, noCache...), "update")}, false},
		{Command{Name: "apt-get", Args: append(append([]string{}, noCache...), "-y", "install", "vim")}, false},
		{Command{Name: "apt-get", Args: append(append([]string{}, noCache...), "-y", "dist-upgrade")}, false},
		{Command{Name: "apt-cache", Args: append(append([]string{}, noCache...), "policy", "pve-manager")}, true},
		{Command{Name: "apt-cache", Args: []string{"policy", "pve-manager"}}, false},
		{Command{Name: "apt-mark", Args: []string{"-o", "Dir::Cache::pkgcache=", "-o", "Dir::Cache::srcpkgcache=", "showhold"}}, true},
		// without them apt-mark rebuilds a stale /var/cache/apt/pkgcache.bin
		{Command{Name: "apt-mark", Args: []string{"showhold"}}, false},
		{Command{Name: "apt-mark", Args: []string{"hold", "pve-manager"}}, false},
		{Command{Name: "dpkg-query", Args: []string{"-W", "vim"}}, true},
		{Command{Name: "dpkg", Args: []string{"--audit"}}, true},
		{Command{Name: "dpkg", Args: []string{"--configure", "-a"}}, false},
		{Command{Name: "dpkg", Args: []string{"--audit", "--configure", "-a"}}, false},
		{Command{Name: "systemctl", Args: []string{"is-active", "pveproxy.service"}}, true},
		{Command{Name: "systemctl", Args: []string{"show", "-p", "ActiveState", "pveproxy.service"}}, true},
		{Command{Name: "systemctl", Args: []string{"restart", "pveproxy.service"}}, false},
		{Command{Name: "systemctl", Args: []string{"enable", "--now", "zfs-scrub-monthly@tank.timer"}}, false},
		{Command{Name: "zpool", Args: []string{"list", "-H", "-o", "name"}}, true},
		{Command{Name: "zpool", Args: []string{"create", "tank", "/dev/sdb"}}, false},
		{Command{Name: "zpool", Args: []string{"create", "-n", "-O", "compression=bogus", "tank", "/dev/sdb"}}, true},
		{Command{Name: "zpool", Args: []string{"destroy", "-n", "tank"}}, false}, // zpool destroy has no dry run
		{Command{Name: "zfs", Args: []string{"destroy", "-n", "tank/a"}}, true},
		{Command{Name: "qm", Args: []string{"config", "100"}}, true},
		{Command{Name: "qm", Args: []string{"set", "100", "--memory", "2048"}}, false},
		{Command{Name: "/usr/sbin/zfs", Args: []string{"get", "-H", "-p", "all", "tank"}}, true},
		{Command{Name: "zfs", Args: []string{"set", "atime=off", "tank"}}, false},
		{Command{Name: "blkid", Args: []string{"-p", "/dev/sdb"}}, true},
		{Command{Name: "blkid", Args: []string{"/dev/sdb"}}, false}, // updates blkid's cache file
		{Command{Name: "wipefs", Args: []string{"/dev/sdb"}}, true},
		{Command{Name: "wipefs", Args: []string{"-a", "/dev/sdb"}}, false},
		{Command{Name: "wipefs", Args: []string{"-fa", "/dev/sdb"}}, false},
		{Command{Name: "update-initramfs", Args: []string{"-u", "-k", "all"}}, false},
		{Command{Name: "pvesh", Args: []string{"get", "/cluster/status"}}, true},
		{Command{Name: "pvesh", Args: []string{"create", "/cluster/config"}}, false},
		{Command{Name: "rm", Args: []string{"-rf", "/"}}, false},
		// pve_cluster reads the primary's membership over ssh: read-only
		// only with a read-only remote command and options that never write
		{Command{Name: "ssh", Args: []string{"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "UpdateHostKeys=no", "-T", "root@192.0.2.11", "--", "pvesh", "get", "/cluster/status", "--output-format", "json"}}, true},
		{Command{Name: "ssh", Args: []string{"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "UpdateHostKeys=no", "root@192.0.2.11", "pvecm", "add", "x"}}, false},
		{Command{Name: "ssh", Args: []string{"-o", "StrictHostKeyChecking=accept-new", "-o", "UpdateHostKeys=no", "root@h", "pvesh", "get", "/x"}}, false}, // writes known_hosts
		{Command{Name: "ssh", Args: []string{"-o", "StrictHostKeyChecking=yes", "root@h", "pvesh", "get", "/x"}}, false},                                   // UpdateHostKeys may write
		{Command{Name: "ssh", Args: []string{"-o", "StrictHostKeyChecking=yes", "-o", "UpdateHostKeys=no", "-o", "ProxyCommand=touch /x", "h", "true"}}, false},
		{Command{Name: "ssh", Args: []string{"-o", "StrictHostKeyChecking=yes", "-o", "UpdateHostKeys=no", "-L", "1:h:2", "h", "true"}}, false},
		// Issue 15 item 9: the remote shell would run what the allow-list
		// never saw: every remote word must be shell-inert.
		{Command{Name: "ssh", Args: []string{"-o", "StrictHostKeyChecking=yes", "-o", "UpdateHostKeys=no", "h", "pvesh", "get", "/x; rm -rf /"}}, false},
		{Command{Name: "ssh", Args: []string{"-o", "StrictHostKeyChecking=yes", "-o", "UpdateHostKeys=no", "h", "--", "cat", "$(touch /x)"}}, false},
		{Command{Name: "ssh", Args: []string{"-o", "StrictHostKeyChecking=yes", "-o", "UpdateHostKeys=no", "h", "cat", "/etc/hosts", ">/etc/hosts"}}, false},
		{Command{Name: "ssh", Args: []string{"-o", "StrictHostKeyChecking=yes", "-o", "UpdateHostKeys=no", "h", "true&&touch", "/x"}}, false},
		{Command{Name: "ssh", Args: []string{"-o", "StrictHostKeyChecking=yes", "-o", "UpdateHostKeys=no", "h", "cat", "`touch /x`"}}, false},
		{Command{Name: "ssh", Args: []string{"-o", "StrictHostKeyChecking=yes", "-o", "UpdateHostKeys=no", "h", "cat", "/etc/pve/a b"}}, false},
		{Command{Name: "ssh", Args: []string{"-o", "StrictHostKeyChecking=yes", "-o", "UpdateHostKeys=no", "h", "cat\n", "/x"}}, false},
		{Command{Name: "ssh", Args: []string{"-o", "StrictHostKeyChecking=yes", "-o", "UpdateHostKeys=no", "h", "cat", "/etc/pve/corosync.conf"}}, true},
	}
	inner := &ExecRunner{}
	for _, c := range cases {
		if got := ReadOnlyCommand(c.cmd); got != c.read {
			t.Errorf("ReadOnlyCommand(%s) = %v, want %v", c.cmd, got, c.read)
		}
		if c.read {
			continue
		}
		func() {
			defer func() {
				p := recover()
				var wa *WriteAttempt
				if err, ok := p.(error); !ok || !errors.As(err, &wa) || !strings.Contains(err.Error(), c.cmd.String()) {
					t.Errorf("ReadOnly(...).Run(%s): recovered %v, want a *WriteAttempt naming the command", c.cmd, p)
				}
			}()
			ReadOnly(inner).Run(context.Background(), c.cmd)
		}()
	}
	if len(inner.Log()) != 0 {
		t.Errorf("refused commands ran: %v", inner.Log())
	}
	// allowed commands do run, and the log stays visible through the wrapper
	ro := ReadOnly(inner)
	if _, err := ro.Run(context.Background(), Command{Name: "true"}); err != nil {
		t.Fatal(err)
	}
	if l := CommandLog(ro); len(l) != 1 || l[0]["cmd"] != "true" {
		t.Errorf("CommandLog through ReadOnly = %v", l)
	}
}

// A command killed by the signal reports 128+signal and says so, not that
// it could not run.
func TestSignalledCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	res, err := (&ExecRunner{}).Run(ctx, Command{Name: "sleep", Args: []string{"30"}})
	if res.ExitCode != 143 || err == nil || strings.Contains(err.Error(), "cannot run") || !strings.Contains(err.Error(), "stopped by a signal (terminated)") {
		t.Errorf("rc %d, err %v", res.ExitCode, err)
	}
}
