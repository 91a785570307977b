package labctl

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// A powered-off machine on a LAN never answers: a client's SYN gets no
// SYN-ACK and no RST, so connect() times out (or, on the same segment once
// ARP gives up after about 3 s, fails with "No route to host"). A closed
// port on a live host answers RST at once ("connection refused"), which is a
// different failure: software that treats "refused" as "the daemon
// restarts, try again soon" must meet the dead-host case in the lab too.
//
// The nodes share the host's loopback, so the lab cannot make an address
// vanish from ARP without editing the host's routing or firewall. Instead a
// dead node's ports are held by a deadPort: a listening socket with a
// backlog of 0 whose one accept-queue slot is taken by the lab's own
// connection and never accepted. Linux drops every further SYN to a
// listener whose accept queue is full (tcp_conn_request: sk_acceptq_is_full
// → drop), so clients retransmit SYNs until their connect timeout, exactly
// as towards a dead host. Nothing on the host changes and the hold dies
// with the lab's process.

// deadPort holds one TCP port of a powered-off node.
type deadPort struct {
	fd     int
	filler net.Conn
}

// holdDead makes ip:port unreachable as a powered-off host's port.
func holdDead(ip string, port int) (*deadPort, error) {
	addr, err := netip.ParseAddr(ip)
	if err != nil || !addr.Is4() {
		return nil, fmt.Errorf("holding %s:%d dead: not an IPv4 address", ip, port)
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("holding %s:%d dead: %w", ip, port, err)
	}
	fail := func(step string, err error) (*deadPort, error) {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("holding %s:%d dead (%s): %w", ip, port, step, err)
	}
	// SO_REUSEADDR: the node's sshd and API listened here a moment ago.
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		return fail("SO_REUSEADDR", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: addr.As4()}); err != nil {
		return fail("bind", err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		return fail("listen", err)
	}
	filler, err := net.DialTimeout("tcp", net.JoinHostPort(ip, strconv.Itoa(port)), time.Second)
	var ne net.Error
	switch {
	case err == nil:
	case errors.As(err, &ne) && ne.Timeout():
		// A client polling the port took the one slot between listen and
		// this dial: the queue is full all the same (that client holds a
		// connection that never answers, as one open at the power cut).
		filler = nil
	default:
		return fail("filling the accept queue", err)
	}
	return &deadPort{fd: fd, filler: filler}, nil
}

// release frees the port: the node's daemons may listen there again.
func (d *deadPort) release() error {
	var errs []error
	if d.filler != nil {
		if err := d.filler.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := syscall.Close(d.fd); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
