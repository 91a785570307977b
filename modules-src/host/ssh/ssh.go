// Package ssh is the node-side SSH and name-resolution preparation a
// cluster needs, shared by the modules that make nodes trust each other:
//
//   - Hosts: `/etc/hosts` lines `IP FQDN SHORT` for every member (C1),
//     merged into the file without duplicating or fighting lines that
//     already name those addresses or names.
//   - KeyPair: root's ed25519 key pair, generated in Go (no ssh-keygen).
//   - AuthorizedKeys: public keys merged into authorized_keys, key by key.
//   - KnownHosts: peers' host keys, fetched with golang.org/x/crypto/ssh
//     and written with x/crypto/ssh/knownhosts as one exact line per host,
//     no comments, no duplicates (C3), so a second run changes nothing.
//
// Every function computes the desired content from the current one and
// returns a host.FileChange (nil: nothing to do); writing is host.Root's
// ApplyFile, which writes through symbolic links. On a PVE cluster member
// /root/.ssh/authorized_keys leads to /etc/pve/priv/authorized_keys: the
// link is kept and the cluster-wide file is what changes (C7).
package ssh

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/host"
	xssh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Paths of root's SSH files and of the hosts file.
const (
	HostsFile      = "/etc/hosts"
	PrivateKey     = "/root/.ssh/id_ed25519"
	PublicKey      = "/root/.ssh/id_ed25519.pub"
	AuthorizedKeys = "/root/.ssh/authorized_keys"
	KnownHosts     = "/root/.ssh/known_hosts"
)

// Member is one cluster node as the other nodes must know it.
type Member struct {
	Name    string // short name, the PVE node name
	Address string // IP address
}

// FQDN is the member's full name in domain ("" gives the short name).
func (m Member) FQDN(domain string) string {
	if domain == "" {
		return m.Name
	}
	return m.Name + "." + strings.TrimPrefix(domain, ".")
}

// HostsLine is the line a member gets: IP FQDN SHORT (IP SHORT without a domain).
func HostsLine(m Member, domain string) string {
	if domain == "" {
		return m.Address + " " + m.Name
	}
	return m.Address + " " + m.FQDN(domain) + " " + m.Name
}

// MergeHosts returns the hosts file with one line per member. A line that
// already maps the member's address to exactly its names (in any order,
// extra aliases allowed) is kept; any other line that mentions the
// member's address, FQDN or short name is replaced by the member's line
// (the first one in place, the others dropped), because two lines for one
// name resolve by accident of order. Comments and unrelated lines stay.
func MergeHosts(current string, members []Member, domain string) string {
	lines := splitLines(current)
	for _, m := range members {
		names := []string{m.Name}
		if domain != "" {
			names = append(names, m.FQDN(domain))
		}
		want := HostsLine(m, domain)
		var out []string
		placed := false
		for _, l := range lines {
			addr, aliases := hostsFields(l)
			if addr == "" {
				out = append(out, l)
				continue
			}
			mentions := addr == m.Address || slices.ContainsFunc(aliases, func(a string) bool { return slices.Contains(names, a) })
			if !mentions {
				out = append(out, l)
				continue
			}
			good := addr == m.Address && !slices.ContainsFunc(names, func(n string) bool { return !slices.Contains(aliases, n) })
			switch {
			case placed:
				// a second line for this member: dropped
			case good:
				out, placed = append(out, l), true
			default:
				out, placed = append(out, want), true
			}
		}
		if !placed {
			out = append(out, want)
		}
		lines = out
	}
	return joinLines(lines)
}

// hostsFields returns the address and names of a hosts line ("" for
// comments and blank lines); a trailing comment is ignored.
func hostsFields(line string) (string, []string) {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	f := strings.Fields(line)
	if len(f) < 2 {
		return "", nil
	}
	return f[0], f[1:]
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// PlanHosts plans /etc/hosts (mode kept).
func PlanHosts(r host.Root, members []Member, domain string) (*host.FileChange, error) {
	cur, err := r.ReadFile(HostsFile)
	if err != nil {
		return nil, err
	}
	return host.PlanFrom(cur, []byte(MergeHosts(string(cur.Content), members, domain)), 0), nil
}

// NewKeyPair generates an ed25519 key pair: the private key in OpenSSH's
// PEM format and the public key as an authorized_keys line with comment.
func NewKeyPair(comment string) (private, public []byte, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate ed25519 key: %w", err)
	}
	block, err := xssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return nil, nil, fmt.Errorf("encode ed25519 key: %w", err)
	}
	spub, err := xssh.NewPublicKey(pub)
	if err != nil {
		return nil, nil, err
	}
	line := strings.TrimSpace(string(xssh.MarshalAuthorizedKey(spub)))
	if comment != "" {
		line += " " + comment
	}
	return pem.EncodeToMemory(block), []byte(line + "\n"), nil
}

// ReadKeyPair reads root's key pair: the public key line, or "" when
// there is no usable pair. A private key without a matching public key
// file is an error naming the files (the module does not overwrite a key
// it did not make).
func ReadKeyPair(r host.Root) (public string, err error) {
	priv, err := r.ReadFile(PrivateKey)
	if err != nil {
		return "", err
	}
	pub, err := r.ReadFile(PublicKey)
	if err != nil {
		return "", err
	}
	switch {
	case !priv.Exists && !pub.Exists:
		return "", nil
	case !priv.Exists || !pub.Exists:
		return "", fmt.Errorf("only one of %s and %s exists; remove or complete it by hand, the module does not replace a key it did not make", PrivateKey, PublicKey)
	}
	signer, err := xssh.ParsePrivateKey(priv.Content)
	if err != nil {
		return "", fmt.Errorf("%s: %w (a passphrase-protected key cannot be used by pvecm)", PrivateKey, err)
	}
	k, _, _, _, err := xssh.ParseAuthorizedKey(pub.Content)
	if err != nil {
		return "", fmt.Errorf("%s: %w", PublicKey, err)
	}
	if !bytes.Equal(k.Marshal(), signer.PublicKey().Marshal()) {
		return "", fmt.Errorf("%s does not hold the public key of %s", PublicKey, PrivateKey)
	}
	return strings.TrimSpace(string(pub.Content)), nil
}

// KeyOf returns the key part (type and base64) of an authorized_keys line
// with options or comment, or an error naming what is wrong.
func KeyOf(line string) (xssh.PublicKey, error) {
	k, _, _, _, err := xssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		return nil, fmt.Errorf("not an SSH public key: %w", err)
	}
	return k, nil
}

// MergeAuthorizedKeys returns authorized_keys with every key of add
// present once; a key already there (with any options or comment) is left
// as it is, and nothing is ever removed: on a cluster member the file is
// shared by every node (C7).
func MergeAuthorizedKeys(current string, add []string) (string, []string, error) {
	have := map[string]bool{}
	for _, l := range splitLines(current) {
		if k, _, _, _, err := xssh.ParseAuthorizedKey([]byte(l)); err == nil {
			have[string(k.Marshal())] = true
		}
	}
	lines := splitLines(current)
	var added []string
	for _, a := range add {
		k, err := KeyOf(a)
		if err != nil {
			return "", nil, err
		}
		if have[string(k.Marshal())] {
			continue
		}
		have[string(k.Marshal())] = true
		lines = append(lines, strings.TrimSpace(a))
		added = append(added, strings.TrimSpace(a))
	}
	return joinLines(lines), added, nil
}

// PlanAuthorizedKeys plans root's authorized_keys (0600; written through
// the /etc/pve/priv link on a cluster member).
func PlanAuthorizedKeys(r host.Root, add []string) (*host.FileChange, []string, error) {
	cur, err := r.ReadFile(AuthorizedKeys)
	if err != nil {
		return nil, nil, err
	}
	next, added, err := MergeAuthorizedKeys(string(cur.Content), add)
	if err != nil {
		return nil, nil, err
	}
	mode := cur.Mode
	if !cur.Exists {
		mode = 0o600
	}
	return host.PlanFrom(cur, []byte(next), mode), added, nil
}

// HostKey is one peer's key, for the names it must be known by.
type HostKey struct {
	Names []string // address first, then names (knownhosts.Normalize form)
	Key   xssh.PublicKey
}

// Line is the exact known_hosts line of the key.
func (h HostKey) Line() string { return knownhosts.Line(h.Names, h.Key) }

// FetchHostKey connects to addr (host:port) and returns the host key the
// server presents for the given algorithm (e.g. ssh-ed25519), without
// authenticating: it is what ssh-keyscan does, minus its comment lines (C3).
func FetchHostKey(ctx context.Context, addr, algorithm string, timeout time.Duration) (xssh.PublicKey, error) {
	var got xssh.PublicKey
	errStop := errors.New("host key received")
	cfg := &xssh.ClientConfig{
		User:              "root",
		HostKeyAlgorithms: []string{algorithm},
		HostKeyCallback: func(_ string, _ net.Addr, key xssh.PublicKey) error {
			got = key
			return errStop
		},
		Timeout: timeout,
	}
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fetch the SSH host key of %s: %w", addr, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(time.Now().Add(timeout))
	}
	_, _, _, err = xssh.NewClientConn(conn, addr, cfg)
	if got != nil {
		return got, nil
	}
	return nil, fmt.Errorf("fetch the SSH host key of %s: %w", addr, err)
}

// MergeKnownHosts returns known_hosts with exactly one line per key of
// want: a plain (unhashed) line of the same key type that names any of
// the host's names is replaced by the exact line (first in place, others
// dropped); hashed lines, comments, markers and other hosts stay. A host
// whose key changed (reinstalled node) gets the new key; the replaced
// lines are returned so a caller can report them.
func MergeKnownHosts(current string, want []HostKey) (string, []string) {
	lines := splitLines(current)
	var replaced []string
	for _, h := range want {
		line := h.Line()
		var out []string
		placed := false
		for _, l := range lines {
			hosts, keyType, ok := knownHostsFields(l)
			if !ok || keyType != h.Key.Type() || !slices.ContainsFunc(hosts, func(x string) bool { return slices.Contains(h.Names, x) }) {
				out = append(out, l)
				continue
			}
			if l != line {
				replaced = append(replaced, l)
			}
			if !placed {
				out, placed = append(out, line), true
			}
		}
		if !placed {
			out = append(out, line)
		}
		lines = out
	}
	return joinLines(lines), replaced
}

// knownHostsFields reads a plain known_hosts line: its host patterns and
// key type; ok is false for comments, markers (@cert-authority, @revoked)
// and hashed entries, which are never touched.
func knownHostsFields(line string) ([]string, string, bool) {
	f := strings.Fields(line)
	if len(f) < 3 || strings.HasPrefix(f[0], "#") || strings.HasPrefix(f[0], "@") || strings.HasPrefix(f[0], "|") {
		return nil, "", false
	}
	return strings.Split(f[0], ","), f[1], true
}

// HostKeyFile is the node's own ed25519 host key, as sshd presents it.
const HostKeyFile = "/etc/ssh/ssh_host_ed25519_key.pub"

// ReadHostKey reads the node's own ed25519 host key ("" when it has none):
// what a peer must record in known_hosts for it, read over the connection
// that runs the module rather than by an unauthenticated handshake.
func ReadHostKey(r host.Root) (string, error) {
	st, err := r.ReadFile(HostKeyFile)
	if err != nil || !st.Exists {
		return "", err
	}
	k, _, _, _, err := xssh.ParseAuthorizedKey(st.Content)
	if err != nil {
		return "", fmt.Errorf("%s: %w", HostKeyFile, err)
	}
	return strings.TrimSpace(string(xssh.MarshalAuthorizedKey(k))), nil
}

// RecordedKeys returns the keys of type keyType that known_hosts content
// records, in plain lines, for any of names (the lines, and the keys).
func RecordedKeys(current string, names []string, keyType string) (lines []string, keys []xssh.PublicKey) {
	for _, l := range splitLines(current) {
		hosts, t, ok := knownHostsFields(l)
		if !ok || t != keyType || !slices.ContainsFunc(hosts, func(x string) bool { return slices.Contains(names, x) }) {
			continue
		}
		_, _, k, _, _, err := xssh.ParseKnownHosts([]byte(l))
		if err != nil {
			continue
		}
		lines, keys = append(lines, l), append(keys, k)
	}
	return lines, keys
}

// PlanKnownHosts plans root's known_hosts (0644 when created).
func PlanKnownHosts(r host.Root, want []HostKey) (*host.FileChange, error) {
	cur, err := r.ReadFile(KnownHosts)
	if err != nil {
		return nil, err
	}
	next, _ := MergeKnownHosts(string(cur.Content), want)
	mode := cur.Mode
	if !cur.Exists {
		mode = 0o644
	}
	return host.PlanFrom(cur, []byte(next), mode), nil
}

// Names is the known_hosts host list of a member: address, FQDN, short
// name, normalised as knownhosts writes them (a port other than 22 is
// bracketed).
func Names(m Member, domain string, port int) []string {
	var out []string
	for _, n := range []string{m.Address, m.FQDN(domain), m.Name} {
		if port != 0 && port != 22 {
			n = net.JoinHostPort(n, fmt.Sprint(port))
		}
		n = knownhosts.Normalize(n)
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
