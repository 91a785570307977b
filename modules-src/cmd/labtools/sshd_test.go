package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// sshdAddr picks a loopback address unlikely to collide with a lab
// (labs use 127.77.S.x).
func sshdAddr() (string, int, error) {
	host := fmt.Sprintf("127.79.%d.%d", os.Getpid()%250+1, time.Now().Nanosecond()%200+10)
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", 0, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return host, port, nil
}

func cmdSshd(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: sshd NODEJSON")
	}
	dir := ts.MkAbs("sshd")
	ts.Check(os.MkdirAll(dir, 0o700))
	for _, k := range []string{"host_key", "client_key"} {
		p := filepath.Join(dir, k)
		os.Remove(p)
		os.Remove(p + ".pub")
		out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", p).CombinedOutput()
		if err != nil {
			ts.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(dir, "client_key.pub"))
	ts.Check(err)
	ts.Check(os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600))
	pvecm, err := lookPath(ts, "pvecm")
	ts.Check(err)
	// The remote side: the stand-in acting as the member node.
	wrapper := filepath.Join(dir, "remote.sh")
	ts.Check(os.WriteFile(wrapper, []byte(fmt.Sprintf("#!/bin/sh\nset -f\nset -- $SSH_ORIGINAL_COMMAND\n[ \"$1\" = pvecm ] || { echo \"lab sshd: only pvecm is served\" >&2; exit 127; }\nshift\nexec env GOPVE_LAB_NODE_JSON=%s %s \"$@\"\n", ts.MkAbs(args[0]), pvecm)), 0o755))
	host, port, err := sshdAddr()
	ts.Check(err)
	cfg := filepath.Join(dir, "sshd_config")
	ts.Check(os.WriteFile(cfg, []byte(fmt.Sprintf(`ListenAddress %s
HostKey %s/host_key
AuthorizedKeysFile %s/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
UseDNS no
PidFile %s/sshd.pid
ForceCommand %s
`, net.JoinHostPort(host, fmt.Sprint(port)), dir, dir, dir, wrapper)), 0o600))
	os.MkdirAll("/run/sshd", 0o755)
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		sshd = "/usr/sbin/sshd"
	}
	cmd := exec.Command(sshd, "-D", "-f", cfg, "-E", filepath.Join(dir, "sshd.log"))
	ts.Check(cmd.Start())
	ts.Defer(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", net.JoinHostPort(host, fmt.Sprint(port)))
		if err == nil {
			c.Close()
			break
		}
		if i > 100 {
			ts.Fatalf("sshd did not start: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	sshCfg := filepath.Join(dir, "ssh_config")
	ts.Check(os.WriteFile(sshCfg, []byte(fmt.Sprintf("Host *\n  Port %d\n  User root\n  IdentityFile %s/client_key\n  UserKnownHostsFile %s/known_hosts\n  GlobalKnownHostsFile /dev/null\n", port, dir, dir)), 0o600))
	client := filepath.Join(dir, "ssh")
	// setsid: no controlling terminal, as under Ansible, whatever runs the tests.
	ts.Check(os.WriteFile(client, []byte(fmt.Sprintf("#!/bin/sh\nexec setsid -w /usr/bin/ssh -F %s \"$@\"\n", sshCfg)), 0o755))
	ts.Setenv("SSHHOST", host)
	ts.Setenv("SSHPORT", fmt.Sprint(port))
	ts.Setenv("GOPVE_LAB_SSH", client)
}

func cmdTrustHost(ts *testscript.TestScript, neg bool, args []string) {
	dir := ts.MkAbs("sshd")
	pub, err := os.ReadFile(filepath.Join(dir, "host_key.pub"))
	ts.Check(err)
	f := strings.Fields(string(pub))
	line := fmt.Sprintf("[%s]:%s %s %s\n", ts.Getenv("SSHHOST"), ts.Getenv("SSHPORT"), f[0], f[1])
	fh, err := os.OpenFile(filepath.Join(dir, "known_hosts"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	ts.Check(err)
	defer fh.Close()
	_, err = fh.WriteString(line)
	ts.Check(err)
}

func lookPath(ts *testscript.TestScript, name string) (string, error) {
	for _, d := range filepath.SplitList(ts.Getenv("PATH")) {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not on the script's PATH", name)
}
