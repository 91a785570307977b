package labctl

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pmxcfs"
)

// Power actions, as `lab power ACTION NODE` names them.
const (
	PowerActionOff    = "off"
	PowerActionOn     = "on"
	PowerActionReboot = "reboot"
)

// PowerOff cuts a node's power. Everything a dead machine loses goes at
// once: every process of the node ends (its sshd, sessions, daemons), its
// /etc/pve mount goes, its API stops, its corosync vote is lost (the
// simulator's membership and quorum follow: the other members' /etc/pve
// turns read-only if they lose quorum, C10; HA fences the node after
// FenceDelay, H3/H7), and its SSH and API ports no longer answer SYNs, so
// clients time out as towards a dead host (deadhost.go). Its disks and
// files stay for the next power-on. Powering off a node that is off does
// nothing.
func (l *Lab) PowerOff(ctx context.Context, name string) error {
	l.powerMu.Lock()
	defer l.powerMu.Unlock()
	n, err := l.powerNode(name)
	if err != nil {
		return err
	}
	if n.off {
		return nil
	}
	return l.powerOffLocked(n)
}

func (l *Lab) powerOffLocked(n *labNode) error {
	name := n.info.Name
	// The API and the vote first: power loss takes both in the same instant,
	// and no client should reach the API of a node whose processes are
	// being killed.
	if err := l.sim.SetOnline(name, false); err != nil {
		return fmt.Errorf("powering off %s: %w", name, err)
	}
	n.off = true
	var errs []error
	if err := n.node.Stop(); err != nil {
		errs = append(errs, err)
	}
	if srv := l.etcPve[name]; srv != nil {
		if err := srv.Unmount(); err != nil {
			errs = append(errs, err)
		}
		delete(l.etcPve, name)
	}
	for _, port := range []int{22, l.apiPort()} {
		d, err := holdDead(n.info.Addr, port)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n.dead = append(n.dead, d)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("powering off %s: %w", name, err)
	}
	l.logf("lab: %s powered off", name)
	return nil
}

// PowerOn boots a node that is off: its ports answer again, its /etc/pve is
// mounted (the cluster's current files: pmxcfs syncs a returning member
// from the quorate partition), sshd starts with fresh /run and /tmp, the
// API comes back and the node's corosync vote counts again. What a reboot
// loses is lost: its guests are stopped, except those with onboot=1 that
// pve-guests starts (HA guests are the CRM's). It returns once sshd
// accepts connections and the API listens. Powering on a running node
// does nothing.
func (l *Lab) PowerOn(ctx context.Context, name string) error {
	l.powerMu.Lock()
	defer l.powerMu.Unlock()
	n, err := l.powerNode(name)
	if err != nil {
		return err
	}
	if !n.off {
		return nil
	}
	return l.powerOnLocked(ctx, n)
}

func (l *Lab) powerOnLocked(ctx context.Context, n *labNode) error {
	name := n.info.Name
	var errs []error
	for _, d := range n.dead {
		if err := d.release(); err != nil {
			errs = append(errs, err)
		}
	}
	n.dead = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("powering on %s: freeing its ports: %w", name, err)
	}
	// The mount must exist before the node starts: its mount namespace
	// takes /etc/pve from it.
	if l.etcPve[name] == nil { // nil unless an earlier power-on failed later
		srv, err := pmxcfs.Mount(l.etcPveMount(name), name, simBackend{l.sim})
		if err != nil {
			return fmt.Errorf("powering on %s: %w", name, err)
		}
		l.etcPve[name] = srv
	}
	if err := n.node.Start(ctx); err != nil {
		return fmt.Errorf("powering on %s: %w", name, err)
	}
	if err := l.sim.SetOnline(name, true); err != nil {
		return fmt.Errorf("powering on %s: %w", name, err)
	}
	n.off = false
	l.logf("lab: %s powered on", name)
	return nil
}

// Reboot power-cycles a node (PowerOff, then PowerOn): every process ends,
// /run and /tmp are fresh (so /run/reboot-required is gone), the ZFS ARC
// limit comes from zfs.conf again, the newest installed kernel runs (B4,
// B5), and the API and the vote are gone meanwhile. A node that is off is
// just powered on.
func (l *Lab) Reboot(ctx context.Context, name string) error {
	l.powerMu.Lock()
	defer l.powerMu.Unlock()
	n, err := l.powerNode(name)
	if err != nil {
		return err
	}
	if !n.off {
		if err := l.powerOffLocked(n); err != nil {
			return err
		}
	}
	return l.powerOnLocked(ctx, n)
}

// Power runs one of PowerActionOff, PowerActionOn or PowerActionReboot.
func (l *Lab) Power(ctx context.Context, name, action string) error {
	switch action {
	case PowerActionOff:
		return l.PowerOff(ctx, name)
	case PowerActionOn:
		return l.PowerOn(ctx, name)
	case PowerActionReboot:
		return l.Reboot(ctx, name)
	}
	return fmt.Errorf("unknown power action %q: use off, on or reboot", action)
}

// PoweredOn reports whether node name has power.
func (l *Lab) PoweredOn(name string) (bool, error) {
	l.powerMu.Lock()
	defer l.powerMu.Unlock()
	n, err := l.powerNode(name)
	if err != nil {
		return false, err
	}
	return !n.off, nil
}

func (l *Lab) powerNode(name string) (*labNode, error) {
	if n := l.node(name); n != nil {
		return n, nil
	}
	names := make([]string, len(l.nodes))
	for i, n := range l.nodes {
		names[i] = n.info.Name
	}
	return nil, fmt.Errorf("the lab has no node %q (its nodes: %s)", name, strings.Join(names, ", "))
}

// apiPort is the port of the nodes' PVE API.
func (l *Lab) apiPort() int {
	if l.creds.Port != 0 {
		return l.creds.Port
	}
	return 8006
}
