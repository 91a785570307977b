package aptrepo

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// EnterpriseHost answers 401 to every request, as the real enterprise
// repositories do for a node without a subscription key.
const EnterpriseHost = "enterprise.proxmox.com"

// Server answers for the repository hosts of a Repo. Nodes reach it as their
// apt proxy: plain http requests arrive with an absolute URL naming the real
// host, https ones as a CONNECT tunnel that the server terminates with a
// certificate from the lab's own CA. For people, the same trees are browsable
// at http://<server>/<host>/….
type Server struct {
	root  string
	hosts map[string]bool
	caPEM []byte
	tls   *tls.Config
	log   io.Writer

	mu   sync.Mutex
	http *http.Server
	// debDelay holds back every .deb answer (a slow mirror), until the
	// client gives up; 0: none.
	debDelay time.Duration
}

// SlowDebs makes every package download wait d before its first byte (a
// slow or stalled mirror), or until the client closes the connection; 0
// turns it off. Indexes (Release, Packages) are not slowed.
func (s *Server) SlowDebs(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.debDelay = d
}

// NewServer prepares a server for repo; log receives one line per request
// (nil: discarded).
func NewServer(repo *Repo, log io.Writer) (*Server, error) {
	if log == nil {
		log = io.Discard
	}
	entries, err := os.ReadDir(repo.Root)
	if err != nil {
		return nil, fmt.Errorf("reading the repository tree: %w", err)
	}
	s := &Server{root: repo.Root, hosts: map[string]bool{EnterpriseHost: true}, log: log}
	for _, e := range entries {
		if e.IsDir() {
			s.hosts[e.Name()] = true
		}
	}
	names := slices.Sorted(maps.Keys(s.hosts))
	cert, caPEM, err := newCertificate(names)
	if err != nil {
		return nil, err
	}
	s.caPEM = caPEM
	s.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	return s, nil
}

// CAPEM is the certificate nodes must trust for the https repositories.
func (s *Server) CAPEM() []byte { return s.caPEM }

// Serve answers on ln until Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	s.http = &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	srv := s.http
	s.mu.Unlock()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving the apt repositories: %w", err)
	}
	return nil
}

// Close stops the server and drops open connections.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.http == nil {
		return nil
	}
	return s.http.Close()
}

// ServeHTTP routes by the host a request is for.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		s.tunnel(w, r)
		return
	}
	host := hostOnly(r.Host)
	path := r.URL.Path
	if !s.hosts[host] && !r.URL.IsAbs() {
		// A direct request to the lab's address: /<host>/<path>.
		first, rest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
		host, path = first, "/"+rest
	}
	s.serveHost(w, r, host, path)
}

func (s *Server) serveHost(w http.ResponseWriter, r *http.Request, host, path string) {
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	defer func() { fmt.Fprintf(s.log, "apt %s %s%s %d\n", r.Method, host, path, rec.status) }()
	switch {
	case host == EnterpriseHost:
		rec.Header().Set("WWW-Authenticate", `Basic realm="Proxmox Enterprise Repository"`)
		http.Error(rec, "401 Unauthorized", http.StatusUnauthorized)
	case s.hosts[host]:
		s.mu.Lock()
		delay := s.debDelay
		s.mu.Unlock()
		if delay > 0 && strings.HasSuffix(path, ".deb") {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				rec.status = 499 // the client went away while waiting
				return
			}
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = path
		http.FileServer(http.Dir(filepath.Join(s.root, host))).ServeHTTP(rec, r2)
	default:
		http.Error(rec, fmt.Sprintf("gopve lab: %q is not a repository host the lab serves; lab nodes never reach the internet", host), http.StatusForbidden)
	}
}

// tunnel terminates an https CONNECT for a repository host with the lab's
// certificate and serves the requests that come through it.
func (s *Server) tunnel(w http.ResponseWriter, r *http.Request) {
	host := hostOnly(r.Host)
	if !s.hosts[host] {
		fmt.Fprintf(s.log, "apt CONNECT %s refused\n", r.Host)
		http.Error(w, fmt.Sprintf("gopve lab: %q is outside the lab", host), http.StatusForbidden)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "tunnel unsupported", http.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	if _, err := buf.WriteString("HTTP/1.1 200 Connection established\r\n\r\n"); err != nil || buf.Flush() != nil {
		conn.Close()
		return
	}
	tlsConn := tls.Server(conn, s.tls)
	inner := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.serveHost(w, r, host, r.URL.Path)
		}),
		ReadHeaderTimeout: 30 * time.Second,
	}
	_ = inner.Serve(newOneConnListener(tlsConn))
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// oneConnListener hands out a single connection, then blocks until that
// connection is closed, so http.Server.Serve returns when the tunnel ends.
type oneConnListener struct {
	conn net.Conn
	once sync.Once
	done chan struct{}
}

func newOneConnListener(c net.Conn) *oneConnListener {
	l := &oneConnListener{done: make(chan struct{})}
	l.conn = &notifyConn{Conn: c, closed: l.done}
	return l
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	var c net.Conn
	l.once.Do(func() { c = l.conn })
	if c != nil {
		return c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error   { return nil }
func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }

type notifyConn struct {
	net.Conn
	once   sync.Once
	closed chan struct{}
}

func (c *notifyConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// newCertificate creates a lab CA and a server certificate for hosts.
func newCertificate(hosts []string) (tls.Certificate, []byte, error) {
	fail := func(err error) (tls.Certificate, []byte, error) {
		return tls.Certificate{}, nil, fmt.Errorf("creating the repository TLS certificate: %w", err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fail(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gopve lab repository CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return fail(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return fail(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fail(err)
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: hosts[0]}, DNSNames: hosts,
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fail(err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return tls.Certificate{Certificate: [][]byte{leafDER, caDER}, PrivateKey: key}, caPEM, nil
}
