package pvecluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"

	hostssh "github.com/gopve/proxmox/modules-src/host/ssh"
)

// removalProcedure is what state=absent answers (C9): PVE has no API to
// leave a cluster, and a removed node must not come back as it is.
const removalProcedure = `state=absent: removing a node from a Proxmox VE cluster is not automated (the API cannot make a node leave). The manual procedure:
  1. move or remove every guest of the node, and remove it from HA groups/rules and replication jobs;
  2. power the node off for good (it must never come back with its current /etc/pve);
  3. on a remaining member: pvecm delnode NODE, then pvecm status to check the cluster is quorate;
  4. remove /etc/pve/nodes/NODE on a remaining member once nothing refers to it;
  5. reinstall the node before using it again, standalone or in a cluster.
Nothing was changed.`

var (
	nodeNameRe    = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$`)
	clusterNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,14}$`)
	fingerprintRe = regexp.MustCompile(`^([A-Fa-f0-9]{2}:){31}[A-Fa-f0-9]{2}$`)
)

// checked is the task's input after validation: this node, the primary,
// the members in order.
type checked struct {
	self, primary hostssh.Member
	members       []hostssh.Member
	index         int // this node's position in members
	link0         string
}

func (c checked) isPrimary() bool { return c.self.Name == c.primary.Name }

// validate refuses bad input before anything is read or written, naming
// the option.
func validate(p params, hostname func() (string, error)) (checked, error) {
	if p.State == "absent" {
		//lint:ignore ST1005 the manual removal procedure, shown as written (several lines)
		return checked{}, errors.New(removalProcedure)
	}
	if !clusterNameRe.MatchString(p.ClusterName) {
		return checked{}, fmt.Errorf("cluster_name: %q is not a valid cluster name (1 to 15 letters, digits or dashes, not starting with a dash)", p.ClusterName)
	}
	if len(p.Nodes) == 0 {
		return checked{}, errors.New("nodes: at least the primary must be listed")
	}
	self, err := selfName(p, hostname)
	if err != nil {
		return checked{}, err
	}
	c, err := membersOf(p, self)
	if err != nil {
		return checked{}, err
	}
	if c.link0, err = checkLinks(p, c.self); err != nil {
		return checked{}, err
	}
	if err := checkPeerKeys(p); err != nil {
		return checked{}, err
	}
	if err := checkOutsidePlay(p, c); err != nil {
		return checked{}, err
	}
	if p.WaitTimeout < 1 {
		return checked{}, fmt.Errorf("wait_timeout: must be at least 1 second, got %d", p.WaitTimeout)
	}
	if p.JoinMethod == "api" && p.Form && !c.isPrimary() {
		if err := checkAPIJoin(p); err != nil {
			return checked{}, err
		}
	}
	return c, nil
}

// selfName is this node's name: the node option, else the hostname.
func selfName(p params, hostname func() (string, error)) (string, error) {
	if p.Node != "" {
		return p.Node, nil
	}
	h, err := hostname()
	if err != nil {
		return "", fmt.Errorf("node: not given, and the hostname cannot be read: %w", err)
	}
	return h, nil
}

// membersOf checks nodes (PVE node names, distinct, at distinct IP
// addresses) and finds the primary and this node (self) among them.
func membersOf(p params, self string) (checked, error) {
	c := checked{index: -1}
	seenAddr := map[string]string{}
	for i, n := range p.Nodes {
		if !nodeNameRe.MatchString(n.Name) || len(n.Name) > 63 {
			return c, fmt.Errorf("nodes[%d].name: %q is not a PVE node name", i, n.Name)
		}
		ip := net.ParseIP(n.Address)
		if ip == nil {
			return c, fmt.Errorf("nodes[%d].address: %q is not an IP address (%s)", i, n.Address, n.Name)
		}
		if other, dup := seenAddr[ip.String()]; dup {
			return c, fmt.Errorf("nodes[%d].address: %s is also the address of %s", i, n.Address, other)
		}
		seenAddr[ip.String()] = n.Name
		if slices.ContainsFunc(c.members, func(m hostssh.Member) bool { return m.Name == n.Name }) {
			return c, fmt.Errorf("nodes[%d].name: %s is listed twice", i, n.Name)
		}
		m := hostssh.Member{Name: n.Name, Address: ip.String()}
		c.members = append(c.members, m)
		if n.Name == p.Primary {
			c.primary = m
		}
		if n.Name == self {
			c.self, c.index = m, i
		}
	}
	if c.primary.Name == "" {
		return c, fmt.Errorf("primary: %q is not in nodes (%s)", p.Primary, strings.Join(c.names(), ", "))
	}
	if c.index < 0 {
		return c, fmt.Errorf("node: this node is %q, which is not in nodes (%s); node names must be the PVE node names, i.e. the hostnames (C8)", self, strings.Join(c.names(), ", "))
	}
	return c, nil
}

func (c checked) names() []string {
	names := make([]string, len(c.members))
	for i, m := range c.members {
		names[i] = m.Name
	}
	return names
}

// checkLinks checks the corosync links and returns link0: the asked one,
// else this node's address.
func checkLinks(p params, self hostssh.Member) (string, error) {
	link0 := p.Link0
	if link0 == "" {
		link0 = self.Address
	}
	for _, l := range []struct{ name, v string }{{"link0", link0}, {"link1", p.Link1}} {
		if l.v != "" && net.ParseIP(l.v) == nil {
			return "", fmt.Errorf("%s: %q is not an IP address", l.name, l.v)
		}
	}
	return link0, nil
}

func checkPeerKeys(p params) error {
	for name, key := range p.PeerKeys {
		if key == "" {
			continue
		}
		if _, err := hostssh.KeyOf(key); err != nil {
			return fmt.Errorf("peer_keys.%s: %w", name, err)
		}
	}
	return nil
}

// checkOutsidePlay: the peers outside the play are other members.
func checkOutsidePlay(p params, c checked) error {
	for i, name := range p.OutsidePlay {
		switch {
		case !slices.Contains(c.names(), name):
			return fmt.Errorf("peers_outside_play[%d]: %q is not in nodes (%s)", i, name, strings.Join(c.names(), ", "))
		case name == c.self.Name:
			return fmt.Errorf("peers_outside_play[%d]: %q is this node, which runs in this play", i, name)
		}
	}
	return nil
}

// checkAPIJoin checks what a join through the API needs: this node's root
// password and well-formed fingerprints.
func checkAPIJoin(p params) error {
	if p.APIPassword == "" {
		return errors.New("api_password: required with join_method=api (root@pam password of this node; PVE refuses API tokens for a join)")
	}
	for _, f := range []struct{ name, v string }{{"api_fingerprint", p.APIFingerprint}, {"primary_api_fingerprint", p.PrimaryAPIFP}} {
		if f.v != "" && !fingerprintRe.MatchString(f.v) {
			return fmt.Errorf("%s: %q is not a SHA-256 fingerprint (AA:BB:… , 32 bytes)", f.name, f.v)
		}
	}
	return nil
}

func shortHostname() (string, error) {
	h, err := os.Hostname()
	if err != nil {
		return "", err
	}
	short, _, _ := strings.Cut(h, ".")
	return short, nil
}
