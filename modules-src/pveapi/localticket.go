package pveapi

import (
	"bufio"
	"bytes"
	"context"
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
)

// Local mode with a minted ticket: root on a PVE node can do what PVE's own
// daemons do when they issue a login ticket, sign "PVE:root@pam:<time>"
// with the cluster's /etc/pve/priv/authkey.key, and then talk to the
// node's own pveproxy over HTTPS like any client: one request per call,
// nothing on a command line, secrets in the request body. pvesh (one Perl
// process per call, parameters on argv) stays the fallback (Connect).
//
// Followed from PVE's code:
//   - pve-common src/PVE/Ticket.pm assemble_rsa_ticket: plain
//     "PVE:<user>:<%08X unix time>" (the user uri_escape'd for ':'),
//     ticket = plain + "::" + base64(rsa_priv->sign(plain)) (MIME::Base64
//     with no line breaks, so padded standard base64).
//   - Crypt::OpenSSL::RSA's sign, called with the library's defaults (PVE
//     never sets a hash or padding on the key): SHA-1 (make_rsa_obj's
//     hashMode NID_sha1) with PKCS#1 v1.5, in 0.33 (Debian 12, PVE 8) and in
//     0.35 (Debian 13, PVE 9), whose default OAEP padding OpenSSL refuses
//     for a signature, leaving v1.5. Measured with Debian's packages (the
//     signature verifies with `openssl dgst -sha1`, not -sha256, not as
//     PSS) and held to them by TestTicketsAsPerlSignsThem, which runs
//     Perl's sign and verify against MintTicket and VerifyTicket on both
//     releases. Should a node still refuse the ticket (a library that was
//     told otherwise), Connect tries the other plausible form, SHA-256,
//     once, and says so in a warning; then pvesh.
//   - pve-access-control src/PVE/AccessControl.pm: the key pair is
//     priv/authkey.key + authkey.pub (+ authkey.pub.old after a rotation);
//     verify_ticket accepts a ticket from -5 min (auth_graceperiod) to 2 h
//     (ticket_lifetime) old, and once the public key is older than 24 h
//     (authkey_lifetime) a quorate cluster refuses tickets younger than
//     the key's excess age (get_ticket_age_range): a fresh ticket signed
//     with a key due for rotation is refused, so mintable() refuses to mint
//     with one. pvestatd rotates the key (rotate_authkeys) as soon as it is
//     due, and the old public key keeps verifying tickets signed before the
//     rotation, so a run that spans a rotation keeps working.
//   - CSRF (AccessControl.pm assemble_csrf_prevention_token, Ticket.pm):
//     secret = hmac_sha256_base64(contents of /etc/pve/pve-www.key) (Perl's
//     Digest::SHA takes the last argument as the key, so this is the HMAC of
//     the empty message keyed with the file), token = "<%08X time>:" +
//     hmac_sha256_base64("<time>:<user>", secret); Digest::SHA's base64 is
//     unpadded. pveproxy demands it on every request that is not a GET.

const (
	localUser        = "root@pam"
	authkeyLifetime  = 24 * time.Hour
	ticketReissueAge = time.Hour // well inside PVE's 2 h ticket lifetime
)

// localFiles says where local mode finds the node's own keys and name
// (tests point them at a lab node's files or a temporary directory).
type localFiles struct {
	etcPve   string // /etc/pve
	hosts    string // /etc/hosts
	nodename string // PVE's nodename: the short host name
}

func (o Options) localFiles() (localFiles, error) {
	lf := localFiles{etcPve: o.EtcPve, hosts: o.HostsFile, nodename: o.Nodename}
	if lf.etcPve == "" {
		lf.etcPve = "/etc/pve"
	}
	if lf.hosts == "" {
		lf.hosts = "/etc/hosts"
	}
	if lf.nodename == "" {
		h, err := os.Hostname()
		if err != nil {
			return lf, fmt.Errorf("cannot read the host name: %w", err)
		}
		// PVE::INotify::nodename: the host name up to the first dot.
		lf.nodename, _, _ = strings.Cut(h, ".")
	}
	return lf, nil
}

// ticketMinter signs root@pam tickets and CSRF tokens with the node's keys.
type ticketMinter struct {
	priv   *rsa.PrivateKey
	pub    *rsa.PublicKey // authkey.pub: what the node verifies with
	wwwKey []byte
	now    func() time.Time

	mu     sync.Mutex
	hash   TicketHash
	ticket string
	csrf   string
	at     time.Time
}

// loadMinter reads the keys; an error says why minting is not possible
// (the reason the fallback's warning gives).
func loadMinter(lf localFiles, now func() time.Time, hash TicketHash) (*ticketMinter, error) {
	privPEM, err := os.ReadFile(filepath.Join(lf.etcPve, "priv", "authkey.key"))
	if err != nil {
		return nil, fmt.Errorf("cannot read the cluster's auth key: %w", err)
	}
	priv, err := parseRSAPrivateKey(privPEM)
	if err != nil {
		return nil, fmt.Errorf("%s/priv/authkey.key: %w", lf.etcPve, err)
	}
	pubPath := filepath.Join(lf.etcPve, "authkey.pub")
	pubPEM, err := os.ReadFile(pubPath)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", pubPath, err)
	}
	pub, err := parseRSAPublicKey(pubPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pubPath, err)
	}
	// Between the two writes of a rotation, or after a hand-made mess, a
	// ticket signed now would be refused: PVE verifies with authkey.pub.
	// The pair is compared, not tried with a signature: an RSA key signs
	// what its public half verifies exactly when modulus and exponent are
	// equal, and a 2048-bit signature costs about 1.6 ms of a no-op
	// task's CPU on the node (issue 24 §3). Every ticket minted is still
	// verified with authkey.pub before it is sent (sign).
	if !priv.PublicKey.Equal(pub) {
		return nil, fmt.Errorf("%s/priv/authkey.key does not belong to %s (a key rotation in progress?)", lf.etcPve, pubPath)
	}
	st, err := os.Stat(pubPath)
	if err != nil {
		return nil, err
	}
	if age := now().Sub(st.ModTime()); age >= authkeyLifetime {
		return nil, fmt.Errorf("the auth key is %s old, due for rotation (PVE refuses new tickets signed with a key older than %s while the cluster is quorate)",
			age.Round(time.Minute), authkeyLifetime)
	}
	www, err := os.ReadFile(filepath.Join(lf.etcPve, "pve-www.key"))
	if err != nil {
		return nil, fmt.Errorf("cannot read the CSRF key: %w", err)
	}
	return &ticketMinter{priv: priv, pub: pub, wwwKey: www, now: now, hash: hash}, nil
}

func parseRSAPrivateKey(b []byte) (*rsa.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("not a PEM key")
	}
	// `openssl genrsa` (pve-cluster gen_auth_key) writes PKCS#8, Perl's
	// get_private_key_string (rotate_authkey) PKCS#1.
	if k, err := x509.ParsePKCS1PrivateKey(blk.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("not an RSA private key: %w", err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, errors.New("not an RSA private key")
	}
	return rk, nil
}

func parseRSAPublicKey(b []byte) (*rsa.PublicKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("not a PEM key")
	}
	if k, err := x509.ParsePKCS1PublicKey(blk.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("not an RSA public key: %w", err)
	}
	rk, ok := k.(*rsa.PublicKey)
	if !ok {
		return nil, errors.New("not an RSA public key")
	}
	return rk, nil
}

// TicketHash is the digest a ticket's RSA signature (PKCS#1 v1.5) is
// made over.
type TicketHash int

const (
	// TicketSHA1 is what PVE's Perl signs and verifies:
	// Crypt::OpenSSL::RSA's default.
	TicketSHA1 TicketHash = iota
	// TicketSHA256 is the other plausible form, tried once when a node
	// refuses TicketSHA1.
	TicketSHA256
)

func (h TicketHash) String() string {
	if h == TicketSHA256 {
		return "SHA-256/PKCS#1 v1.5"
	}
	return "SHA-1/PKCS#1 v1.5"
}

func (h TicketHash) sum(msg string) (crypto.Hash, []byte) {
	if h == TicketSHA256 {
		d := sha256.Sum256([]byte(msg))
		return crypto.SHA256, d[:]
	}
	d := sha1.Sum([]byte(msg))
	return crypto.SHA1, d[:]
}

// MintTicket signs a PVE login ticket for user at time now as PVE's Perl
// signs it (SHA-1, PKCS#1 v1.5; exported for the lab's tests, which check
// the simulator against it).
func MintTicket(priv *rsa.PrivateKey, user string, now time.Time) (string, error) {
	return MintTicketHash(priv, user, now, TicketSHA1)
}

// MintTicketHash is MintTicket with the signature's digest chosen.
func MintTicketHash(priv *rsa.PrivateKey, user string, now time.Time, h TicketHash) (string, error) {
	plain := fmt.Sprintf("PVE:%s:%08X", strings.ReplaceAll(user, ":", "%3A"), now.Unix())
	alg, sum := h.sum(plain)
	sig, err := rsa.SignPKCS1v15(rand.Reader, priv, alg, sum)
	if err != nil {
		return "", err
	}
	return plain + "::" + base64.StdEncoding.EncodeToString(sig), nil
}

// Ticket.pm verify_rsa_ticket's shapes for the prefix "PVE".
var (
	ticketRe      = regexp.MustCompile(`^(PVE:\S+)::([^:\s]+)$`)
	ticketPlainRe = regexp.MustCompile(`^PVE:(?:(\S+):)?([A-Z0-9]{8})$`)
)

// VerifyTicket is verify_rsa_ticket without the age window (the caller
// judges the time): the ticket's shape and its signature by pub, made as
// h says; the user and the time it was signed for. Local mode checks every
// ticket it mints with it against authkey.pub, as the node will.
func VerifyTicket(pub *rsa.PublicKey, ticket string, h TicketHash) (user string, at time.Time, err error) {
	m := ticketRe.FindStringSubmatch(ticket)
	if m == nil {
		return "", time.Time{}, errors.New("not a PVE ticket")
	}
	sig, err := base64.StdEncoding.DecodeString(m[2])
	if err != nil {
		return "", time.Time{}, fmt.Errorf("the ticket's signature is not base64: %w", err)
	}
	alg, sum := h.sum(m[1])
	if err := rsa.VerifyPKCS1v15(pub, alg, sum, sig); err != nil {
		return "", time.Time{}, fmt.Errorf("the ticket's %s signature does not verify: %w", h, err)
	}
	pm := ticketPlainRe.FindStringSubmatch(m[1])
	if pm == nil || pm[1] == "" {
		return "", time.Time{}, errors.New("the ticket names no user")
	}
	ts, err := strconv.ParseInt(pm[2], 16, 64)
	if err != nil {
		return "", time.Time{}, err
	}
	if user, err = url.PathUnescape(pm[1]); err != nil { // uri_unescape
		return "", time.Time{}, err
	}
	return user, time.Unix(ts, 0), nil
}

// CSRFToken is PVE's CSRFPreventionToken for user at time now, keyed with
// the contents of /etc/pve/pve-www.key.
func CSRFToken(wwwKey []byte, user string, now time.Time) string {
	secret := hmacB64(wwwKey, nil)
	ts := fmt.Sprintf("%08X", now.Unix())
	return ts + ":" + hmacB64([]byte(secret), []byte(ts+":"+user))
}

// hmacB64 is Digest::SHA's hmac_sha256_base64(msg, key): unpadded base64.
func hmacB64(key, msg []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return base64.RawStdEncoding.EncodeToString(m.Sum(nil))
}

// sign puts the ticket (and, on writes, the CSRF token) on a request,
// minting a new pair when the last one is an hour old: a long run never
// meets PVE's 2 h limit.
func (m *ticketMinter) sign(req *http.Request) error {
	m.mu.Lock()
	now := m.now()
	if m.ticket == "" || now.Sub(m.at) >= ticketReissueAge {
		t, err := MintTicketHash(m.priv, localUser, now, m.hash)
		if err != nil {
			m.mu.Unlock()
			return fmt.Errorf("minting a ticket: %w", err)
		}
		if _, _, err := VerifyTicket(m.pub, t, m.hash); err != nil {
			m.mu.Unlock()
			return fmt.Errorf("the minted ticket does not verify with authkey.pub: %w", err)
		}
		m.ticket, m.csrf, m.at = t, CSRFToken(m.wwwKey, localUser, now), now
	}
	ticket, csrf := m.ticket, m.csrf
	m.mu.Unlock()
	req.Header.Del("Cookie")
	req.AddCookie(&http.Cookie{Name: "PVEAuthCookie", Value: ticket})
	if req.Method != http.MethodGet {
		req.Header.Set("CSRFPreventionToken", csrf)
	}
	return nil
}

// setHash makes the minter sign with h from the next request on.
func (m *ticketMinter) setHash(h TicketHash) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hash != h {
		m.hash, m.ticket = h, ""
	}
}

// ownAddress is the address the node's name has in /etc/hosts.
//
// Why this address and not localhost: pveproxy listens on every address
// of the node, so on a real node localhost:8006 and <own address>:8006 are
// the same API. In the lab, nodes share the host's network namespace
// (docs/lab.md), so localhost there is not the node's API, while each
// node's simulated pveproxy listens on the node's own address. The
// address /etc/hosts gives the nodename is the one PVE itself takes as the
// node's IP (pve-cluster requires the nodename to resolve, and
// gen_pve_ssl_cert puts that IP and the nodename in pve-ssl.pem's SANs),
// so it is right on both, without a lab-only switch; the certificate is
// still verified for the nodename.
func ownAddress(lf localFiles) (string, error) {
	f, err := os.Open(lf.hosts)
	if err != nil {
		return "", fmt.Errorf("cannot read %s to find this node's address: %w", lf.hosts, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) < 2 || net.ParseIP(fields[0]) == nil {
			continue
		}
		for _, name := range fields[1:] {
			if name == lf.nodename || strings.HasPrefix(name, lf.nodename+".") {
				return fields[0], nil
			}
		}
	}
	return "", fmt.Errorf("%s has no address for this node's name %q (PVE needs one)", lf.hosts, lf.nodename)
}

// localTLS trusts what pveproxy of this node presents: its own custom
// certificate when one is installed (nodes/<node>/pveproxy-ssl.pem, which
// pveproxy serves instead of pve-ssl.pem; pinned, since an ACME
// certificate names the FQDN and chains to a public CA), else a
// certificate for the nodename signed by the cluster CA.
func localTLS(lf localFiles) (*tls.Config, error) {
	custom := filepath.Join(lf.etcPve, "nodes", lf.nodename, "pveproxy-ssl.pem")
	if b, err := os.ReadFile(custom); err == nil {
		blk, _ := pem.Decode(b)
		if blk == nil {
			return nil, fmt.Errorf("%s holds no certificate", custom)
		}
		want := blk.Bytes
		return &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true,
			VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
				if len(raw) == 0 || !bytes.Equal(raw[0], want) {
					return &pinError{got: "another certificate", want: custom}
				}
				return nil
			}}, nil
	}
	caPath := filepath.Join(lf.etcPve, "pve-root-ca.pem")
	ca, err := os.ReadFile(caPath)
	if err != nil {
		return nil, fmt.Errorf("cannot read the cluster CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%s holds no certificate", caPath)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, ServerName: lf.nodename}, nil
}

// localTransport is local mode's HTTPS transport. A join gives the node
// the cluster's /etc/pve: another auth key (every ticket signed before is
// refused) and a certificate from another CA. So when the node answers
// 401, or its certificate no longer verifies, the keys and CA are read
// again and the request is sent once more: both failures happen before
// PVE acts (authentication precedes every handler, the TLS handshake
// precedes the request), so nothing can have been done twice.
type localTransport struct {
	conn Connection
	o    Options
	now  func() time.Time

	mu   sync.Mutex
	cur  *builtTicket
	hash TicketHash // the form of ticket the node takes (Connect's probe)
}

// builtTicket is what one reading of the node's files gives.
type builtTicket struct {
	*httpTransport
	m        *ticketMinter
	id       string // what it was built from (see buildTicketTransport)
	nodename string // PVE's name for this node
	addr     string // its address in hosts
	hosts    string // the hosts file that gave it
}

func (t *localTransport) current() *builtTicket {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cur
}

// setHash signs with h from now on (also after a rebuild).
func (t *localTransport) setHash(h TicketHash) {
	t.mu.Lock()
	t.hash = h
	cur := t.cur
	t.mu.Unlock()
	cur.m.setHash(h)
}

func (t *localTransport) do(ctx context.Context, method, path string, params url.Values) (json.RawMessage, error) {
	cur := t.current()
	raw, err := cur.do(ctx, method, path, params)
	if k := KindOf(err); k != KindAuth && k != KindTLS {
		return raw, err
	}
	t.mu.Lock()
	hash := t.hash
	t.mu.Unlock()
	fresh, rerr := buildTicketTransport(t.conn, t.o, t.now, hash)
	t.mu.Lock()
	same := rerr != nil || fresh.id == t.cur.id
	if !same {
		t.cur = fresh
	}
	t.mu.Unlock()
	if same {
		return nil, err // nothing changed on the node: the answer stands
	}
	return fresh.do(ctx, method, path, params)
}

// newTicketTransport builds the HTTPS transport of local mode, or says why
// it cannot.
func newTicketTransport(conn Connection, o Options, now func() time.Time) (*localTransport, error) {
	cur, err := buildTicketTransport(conn, o, now, TicketSHA1)
	if err != nil {
		return nil, err
	}
	return &localTransport{conn: conn, o: o, now: now, cur: cur}, nil
}

// buildTicketTransport reads the node's keys, address and CA; id sums up
// what it read, so a rebuild from unchanged files is recognised.
func buildTicketTransport(conn Connection, o Options, now func() time.Time, hash TicketHash) (*builtTicket, error) {
	lf, err := o.localFiles()
	if err != nil {
		return nil, err
	}
	m, err := loadMinter(lf, now, hash)
	if err != nil {
		return nil, err
	}
	addr, err := ownAddress(lf)
	if err != nil {
		return nil, err
	}
	tc, err := localTLS(lf)
	if err != nil {
		return nil, err
	}
	sum := sha256.New()
	sum.Write(m.priv.N.Bytes())
	sum.Write(m.wwwKey)
	sum.Write([]byte(addr))
	for _, rel := range []string{"pve-root-ca.pem", filepath.Join("nodes", lf.nodename, "pveproxy-ssl.pem")} {
		b, _ := os.ReadFile(filepath.Join(lf.etcPve, rel))
		sum.Write(b)
	}
	port := conn.Port
	if port == 0 {
		port = DefaultPort
	}
	timeout := time.Duration(conn.Timeout) * time.Second
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	// Never a proxy: this is the node talking to itself.
	hc := &http.Client{Timeout: timeout, Transport: capturingRoundTripper{next: &http.Transport{
		TLSClientConfig: tc, TLSHandshakeTimeout: 10 * time.Second, IdleConnTimeout: 30 * time.Second,
	}}}
	base := "https://" + net.JoinHostPort(addr, strconv.Itoa(port))
	pc := proxmox.NewClient(base+"/api2/json", proxmox.WithHTTPClient(hc), proxmox.WithLogger(silentLogger{}),
		proxmox.WithUserAgent("gopve.proxmox"), proxmox.WithRequestInterceptor(m.sign))
	return &builtTicket{httpTransport: &httpTransport{base: base, pc: pc}, m: m, id: fmt.Sprintf("%x", sum.Sum(nil)),
		nodename: lf.nodename, addr: addr, hosts: lf.hosts}, nil
}

// wrongNodeError is a write local mode did not send: the pveproxy at the
// address /etc/hosts gives this node is not this node's, or that could not
// be confirmed.
type wrongNodeError struct {
	method, path string
	msg          string
	err          error
}

func (e *wrongNodeError) Error() string {
	s := fmt.Sprintf("%s %s: not sent: %s", e.method, e.path, e.msg)
	if e.err != nil {
		s += ": " + e.err.Error()
	}
	return s
}
func (e *wrongNodeError) Unwrap() error { return e.err }

// confirmLocalNode is local mode's check before its first write: a stale
// /etc/hosts line would make it talk to another node's pveproxy, which
// accepts the cluster's ticket (and, with a certificate every node shares,
// passes TLS). PVE's GET /cluster/status (pve-manager API2/Cluster.pm
// get_status) marks the answering node with local: 1, in a cluster as on
// a standalone node (its one faked entry).
func (c *Client) confirmLocalNode(ctx context.Context, method, path string) error {
	lt, ok := c.t.(*localTransport)
	if !ok {
		return nil
	}
	c.confirmMu.Lock()
	defer c.confirmMu.Unlock()
	if c.confirmed {
		return nil
	}
	cur := lt.current()
	var status []struct {
		Type  string `json:"type"`
		Name  string `json:"name"`
		Local bool   `json:"local"` // 0/1 (Decode's boolean hook)
	}
	if err := c.Get(ctx, "/cluster/status", nil, &status); err != nil {
		return &wrongNodeError{method: method, path: path, err: err,
			msg: "local mode could not confirm that " + cur.base + " is this node's API"}
	}
	var local []string
	for _, e := range status {
		if e.Type == "node" && e.Local {
			local = append(local, e.Name)
		}
	}
	if len(local) == 1 && local[0] == cur.nodename {
		c.confirmed = true
		return nil
	}
	who := "no node as the one answering"
	if len(local) > 0 {
		who = "node " + strings.Join(local, ", ") + " as the one answering"
	}
	return &wrongNodeError{method: method, path: path,
		msg: fmt.Sprintf("%s gives this node (%s) the address %s, but the pveproxy there names %s (GET /cluster/status, local: 1): a stale line in %s? local mode writes only through this node's own API",
			cur.hosts, cur.nodename, cur.addr, who, cur.hosts)}
}
