package pvecluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	hostssh "github.com/gopve/proxmox/modules-src/host/ssh"
	xssh "golang.org/x/crypto/ssh"
)

// peerKey is the host key this node must record for one peer, and where it
// came from.
type peerKey struct {
	member hostssh.Member
	key    xssh.PublicKey
	from   string // "peer_host_keys", "known_hosts" or "fetched"
}

// hostKeyOf finds the ed25519 host key of peer (C2, C3), in order:
//
//  1. peer_host_keys: the key the peer's own first task read from its
//     /etc/ssh (the role passes every node's), over the connection Ansible
//     authenticated;
//  2. the line this node's known_hosts already records;
//  3. only when peer_host_keys is not given at all: the key the peer
//     presents to an unauthenticated handshake (trust on first use).
//
// nil with no error: no key can be had (the peer is unreachable and
// unrecorded); the caller decides whether that is fatal.
func (m *mod) hostKeyOf(ctx context.Context, peer hostssh.Member, known string) (*peerKey, error) {
	names := hostssh.Names(peer, m.p.Domain, 22)
	if line := m.p.PeerHostKeys[peer.Name]; line != "" {
		k, err := hostssh.KeyOf(line)
		if err != nil {
			return nil, fmt.Errorf("peer_host_keys.%s: %w", peer.Name, err)
		}
		if k.Type() != xssh.KeyAlgoED25519 {
			return nil, fmt.Errorf("peer_host_keys.%s: a %s key; give the node's ed25519 host key (%s)", peer.Name, k.Type(), hostssh.HostKeyFile)
		}
		return &peerKey{member: peer, key: k, from: "peer_host_keys"}, nil
	}
	if _, keys := hostssh.RecordedKeys(known, names, xssh.KeyAlgoED25519); len(keys) > 0 {
		return &peerKey{member: peer, key: keys[0], from: "known_hosts"}, nil
	}
	if m.p.PeerHostKeys != nil {
		return nil, nil
	}
	k, err := m.env.HostKey(ctx, peer.Address+":22")
	if err != nil {
		m.hostKeyErrs[peer.Name] = err
		return nil, nil
	}
	return &peerKey{member: peer, key: k, from: "fetched"}, nil
}

// gatherHostKeys finds every peer's host key before anything is written
// (stage 1), and refuses a key that differs from the one known_hosts
// records unless accept_changed_host_keys says so: a changed host key is
// either a reinstalled node or someone in between. A peer without a key is
// tolerated only when it is a member that is offline now (its key stays as
// recorded, or absent, with a warning).
//
// only limits the peers (none: every peer but this node).
func (m *mod) gatherHostKeys(ctx context.Context, cluster *Cluster, only ...string) error {
	cur, err := m.env.Root.ReadFile(hostssh.KnownHosts)
	if err != nil {
		return err
	}
	known := string(cur.Content)
	m.hostKeys, m.replacedHostKeys = nil, nil
	m.hostKeyErrs = map[string]error{}
	for _, peer := range m.c.members {
		if peer.Name == m.c.self.Name || len(only) > 0 && !slices.Contains(only, peer.Name) {
			continue
		}
		pk, err := m.hostKeyOf(ctx, peer, known)
		if err != nil {
			return err
		}
		if pk == nil {
			if mem := cluster.member(peer.Name); mem != nil && !mem.Online {
				m.r.Warn(fmt.Sprintf("known_hosts: no host key for %s, an offline member of cluster %q: left as recorded until it is back", peer.Name, cluster.Name))
				continue
			}
			if cluster.member(peer.Name) == nil && m.laterPeer(peer.Name) {
				// not a member, not in this play: its own run records the
				// primary's key on its side; the others learn its key in
				// the next run that reaches it
				m.r.Warn(fmt.Sprintf("known_hosts: no host key for %s, outside this play (peers_outside_play) and not a member yet: recorded by a later run that reaches it", peer.Name))
				continue
			}
			why := "peer_host_keys has no key for it (its first task did not run in this play?)"
			if e := m.hostKeyErrs[peer.Name]; e != nil {
				why = e.Error()
			}
			return fmt.Errorf("known_hosts: no SSH host key for %s (%s): %s; nothing was changed", peer.Name, peer.Address, why)
		}
		lines, keys := hostssh.RecordedKeys(known, hostssh.Names(peer, m.p.Domain, 22), xssh.KeyAlgoED25519)
		for i, k := range keys {
			if string(k.Marshal()) == string(pk.key.Marshal()) {
				continue
			}
			if !m.p.AcceptChanged {
				return fmt.Errorf("known_hosts: the SSH host key of %s changed: %s records %s, %s gives %s. A reinstalled node has a new key; anything else is someone in between. If %s was reinstalled, set accept_changed_host_keys: true for this run; nothing was changed",
					peer.Name, hostssh.KnownHosts, xssh.FingerprintSHA256(k), pk.from, xssh.FingerprintSHA256(pk.key), peer.Name)
			}
			m.replacedHostKeys = append(m.replacedHostKeys, lines[i])
		}
		m.hostKeys = append(m.hostKeys, *pk)
	}
	return nil
}

// knownLine is the known_hosts line of addr's gathered key ("" if none):
// the module's own SSH reads of a peer pin it, so they need no written
// known_hosts (they run before any write) and never trust a key blindly.
func (m *mod) knownLine(addr string) string {
	for _, pk := range m.hostKeys {
		if pk.member.Address == addr {
			return hostssh.HostKey{Names: []string{addr}, Key: pk.key}.Line()
		}
	}
	return ""
}

// planKnownHosts is stage 5 (C2, C3): every peer's gathered host key,
// exactly; replaced lines (accept_changed_host_keys) are reported.
func (m *mod) planKnownHosts(context.Context, *ansible.World) ([]ansible.Change, error) {
	var want []hostssh.HostKey
	var names []string
	for _, pk := range m.hostKeys {
		want = append(want, hostssh.HostKey{Names: hostssh.Names(pk.member, m.p.Domain, 22), Key: pk.key})
		names = append(names, pk.member.Name)
	}
	if len(m.replacedHostKeys) > 0 {
		m.r.Warn("known_hosts: changed host keys accepted (accept_changed_host_keys), these lines are replaced: " + strings.Join(m.replacedHostKeys, "; "))
	}
	if len(want) == 0 {
		return nil, nil
	}
	fc, err := hostssh.PlanKnownHosts(m.env.Root, want)
	if err != nil || fc == nil {
		return nil, err
	}
	return []ansible.Change{m.fileChange(prepKnownHosts, "trust the SSH host keys of "+strings.Join(names, ", ")+" in "+hostssh.KnownHosts, fc)}, nil
}
