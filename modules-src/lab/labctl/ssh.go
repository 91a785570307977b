package labctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"golang.org/x/crypto/ssh"
)

// Result is the outcome of a command run on a node.
type Result struct {
	Stdout, Stderr string
	ExitCode       int
}

// ProcDir is node name's own /proc as the host reaches it (node.ProcDir).
func (l *Lab) ProcDir(name string) (string, error) {
	n := l.node(name)
	if n == nil {
		return "", fmt.Errorf("the lab has no node %q", name)
	}
	return n.node.ProcDir()
}

// Run runs cmd on node name over SSH as root (the same path Ansible takes),
// with stdin if non-nil. A non-zero exit is a Result, not an error.
func (l *Lab) Run(ctx context.Context, name, cmd string, stdin io.Reader) (Result, error) {
	n := l.node(name)
	if n == nil {
		return Result{}, fmt.Errorf("the lab has no node %q", name)
	}
	d := net.Dialer{}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(n.info.Addr, "22"))
	if err != nil {
		return Result{}, fmt.Errorf("connecting to %s: %w", name, err)
	}
	c, chans, reqs, err := ssh.NewClientConn(conn, n.info.Addr+":22", &ssh.ClientConfig{
		User: "root", Auth: []ssh.AuthMethod{ssh.PublicKeys(l.key.Signer)},
		HostKeyCallback: ssh.FixedHostKey(n.hostKey.PublicKey),
	})
	if err != nil {
		conn.Close()
		return Result{}, fmt.Errorf("ssh to %s: %w", name, err)
	}
	client := ssh.NewClient(c, chans, reqs)
	defer client.Close()
	s, err := client.NewSession()
	if err != nil {
		return Result{}, fmt.Errorf("ssh session on %s: %w", name, err)
	}
	defer s.Close()
	var stdout, stderr bytes.Buffer
	s.Stdout, s.Stderr, s.Stdin = &stdout, &stderr, stdin
	done := make(chan error, 1)
	go func() { done <- s.Run(cmd) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		client.Close()
		return Result{}, fmt.Errorf("running on %s: %w", name, ctx.Err())
	}
	res := Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *ssh.ExitError
	switch {
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitStatus()
	case err != nil:
		return res, fmt.Errorf("running on %s: %w", name, err)
	}
	return res, nil
}

// SSH runs cmd on node name and returns its stdout; a non-zero exit is an
// error carrying stderr.
func (l *Lab) SSH(name, cmd string) (string, error) {
	res, err := l.Run(context.Background(), name, cmd, nil)
	if err != nil {
		return res.Stdout, err
	}
	if res.ExitCode != 0 {
		return res.Stdout, fmt.Errorf("%s: %q exited %d: %s", name, cmd, res.ExitCode, res.Stderr)
	}
	return res.Stdout, nil
}
