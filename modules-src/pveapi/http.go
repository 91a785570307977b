package pveapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/gopve/proxmox/modules-src/internal/cost"
)

// httpTransport sends requests through go-proxmox (auth headers, ticket
// login) over our own http.Client, whose RoundTripper keeps what
// go-proxmox throws away: the status, PVE's message and its `errors`.
type httpTransport struct {
	base string // https://host:port
	pc   *proxmox.Client
}

// capture is where the RoundTripper leaves the error answer of the request
// whose context carries it.
type capture struct{ err *Error }

type captureKey struct{}

type capturingRoundTripper struct{ next http.RoundTripper }

func (rt capturingRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	// Every request that leaves, and every connection opened for one, is
	// counted for the run (issue 24 §3: one keep-alive connection per task).
	ctx := req.Context()
	cost.Request(ctx)
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) {
			if !i.Reused {
				cost.Connection(ctx)
			}
		},
	}))
	res, err := rt.next.RoundTrip(req)
	if err != nil || res.StatusCode < 400 {
		return res, err
	}
	cp, _ := req.Context().Value(captureKey{}).(*capture)
	if cp == nil {
		return res, nil
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(body))
	var env struct {
		Message string            `json:"message"`
		Errors  map[string]string `json:"errors"`
	}
	_ = json.Unmarshal(body, &env)
	msg := strings.TrimSpace(env.Message)
	if msg == "" {
		// PVE before libpve-http-server-perl 5.2 (early 8.x) sends the
		// message only as the reason phrase.
		msg = strings.TrimSpace(strings.TrimPrefix(res.Status, strconv.Itoa(res.StatusCode)))
	}
	cp.err = &Error{Status: res.StatusCode, Message: msg, Errors: env.Errors}
	return res, nil
}

func newHTTPTransport(ctx context.Context, conn Connection, o Options) (*httpTransport, error) {
	port := conn.Port
	if port == 0 {
		port = DefaultPort
	}
	host := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(conn.Host, "https://"), "http://"), "/")
	if host == "" || strings.ContainsAny(host, "/?#@ ") {
		return nil, fmt.Errorf("api_host: %q is not a host name or address", conn.Host)
	}
	base := "https://" + net.JoinHostPort(strings.Trim(host, "[]"), strconv.Itoa(port))

	hc := o.HTTPClient
	if hc == nil {
		tc, err := tlsConfig(conn)
		if err != nil {
			return nil, err
		}
		timeout := time.Duration(conn.Timeout) * time.Second
		if timeout <= 0 {
			timeout = 30 * time.Second
		}
		hc = &http.Client{Timeout: timeout, Transport: &http.Transport{
			Proxy: http.ProxyFromEnvironment, TLSClientConfig: tc,
			TLSHandshakeTimeout: 10 * time.Second, IdleConnTimeout: 30 * time.Second,
		}}
	} else {
		cp := *hc
		hc = &cp
	}
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	hc.Transport = capturingRoundTripper{next: next}

	opts := []proxmox.Option{proxmox.WithHTTPClient(hc), proxmox.WithLogger(silentLogger{}),
		proxmox.WithUserAgent("gopve.proxmox")}
	switch {
	case conn.TokenID != "" || conn.TokenSecret != "":
		id, err := FullTokenID(conn.User, conn.TokenID)
		if err != nil {
			return nil, err
		}
		if conn.TokenSecret == "" {
			return nil, errors.New("api_token_secret: required with api_token_id")
		}
		opts = append(opts, proxmox.WithAPIToken(id, conn.TokenSecret))
	case conn.Password != "":
		if !userRe.MatchString(conn.User) {
			return nil, fmt.Errorf("api_user: %q must be user@realm (e.g. root@pam) for password authentication", conn.User)
		}
		opts = append(opts, proxmox.WithCredentials(&proxmox.Credentials{Username: conn.User, Password: conn.Password}))
	default:
		return nil, errors.New("api_host is set but no credentials are: give api_token_id and api_token_secret, or api_user and api_password")
	}
	t := &httpTransport{base: base, pc: proxmox.NewClient(base+"/api2/json", opts...)}
	if conn.TokenID == "" {
		cp := &capture{}
		if err := t.pc.CreateSession(context.WithValue(ctx, captureKey{}, cp)); err != nil {
			e := t.toError(http.MethodPost, "/access/ticket", cp, err)
			if e.kind == KindAuth || errors.Is(err, proxmox.ErrNotAuthorized) {
				e.kind, e.Hint = KindAuth, fmt.Sprintf("PVE refused the login of %s: check api_user and api_password", conn.User)
			}
			return nil, e
		}
	}
	return t, nil
}

var (
	userRe    = regexp.MustCompile(`^[^\s:/!@]+@[A-Za-z][A-Za-z0-9.\-_]+$`)
	tokenName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9.\-_]+$`)
)

// FullTokenID accepts both spellings of a token id (K7): "user@realm!name",
// or "name" with the user in api_user. The full form passed where PVE
// expects the short one gives a 401 without explanation, so a mismatch is
// refused here, naming the options.
func FullTokenID(user, id string) (string, error) {
	if u, name, full := strings.Cut(id, "!"); full {
		if !userRe.MatchString(u) || !tokenName.MatchString(name) {
			return "", fmt.Errorf("api_token_id: %q is neither user@realm!name nor a bare token name", id)
		}
		if user != "" && user != u {
			return "", fmt.Errorf("api_token_id: the token belongs to %s but api_user is %s; drop api_user or give the short token name", u, user)
		}
		return id, nil
	}
	if !tokenName.MatchString(id) {
		return "", fmt.Errorf("api_token_id: %q is not a token name (letters, digits, . - _; or user@realm!name)", id)
	}
	if user == "" {
		return "", fmt.Errorf("api_token_id: the short form %q needs api_user (the token's owner, e.g. root@pam), or give user@realm!%s", id, id)
	}
	if !userRe.MatchString(user) {
		return "", fmt.Errorf("api_user: %q must be user@realm (e.g. root@pam)", user)
	}
	return user + "!" + id, nil
}

func (t *httpTransport) do(ctx context.Context, method, path string, params url.Values) (json.RawMessage, error) {
	cp := &capture{}
	cctx := context.WithValue(ctx, captureKey{}, cp)
	var body []byte
	p := path
	if len(params) > 0 {
		if method == http.MethodGet || method == http.MethodDelete {
			p += "?" + params.Encode()
		} else {
			// PVE reads JSON bodies (pve-http-server AnyEvent.pm); every
			// value goes as a string, which its type checks accept.
			m := make(map[string]string, len(params))
			for k, v := range params {
				m[k] = strings.Join(v, ",")
			}
			body, _ = json.Marshal(m)
		}
	}
	var raw json.RawMessage
	err := t.pc.Req(cctx, method, p, body, &raw)
	// go-proxmox returns nil for statuses it does not know (424, 503, 595…):
	// the captured answer decides, not its error.
	if err != nil || cp.err != nil {
		return nil, t.toError(method, path, cp, err)
	}
	if raw == nil {
		raw = json.RawMessage("null")
	}
	return raw, nil
}

// toError turns what go-proxmox returned into our error: the captured
// answer when there was one, else the transport error.
func (t *httpTransport) toError(method, path string, cp *capture, err error) *Error {
	if cp.err != nil {
		return newError(method, path, cp.err.Status, cp.err.Message, cp.err.Errors, nil)
	}
	var uerr *url.Error
	if errors.As(err, &uerr) || isNetError(err) {
		return newError(method, path, 0, "", nil, err)
	}
	// A 2xx answer go-proxmox could not decode.
	return newError(method, path, 0, "unexpected answer: "+stripURL(err), nil, nil)
}

func isNetError(err error) bool {
	var nerr net.Error
	return errors.As(err, &nerr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// notSent is true when the request cannot have reached PVE (the connection
// was never opened), so even a write may be sent again.
func notSent(e *Error) bool {
	var oerr *net.OpError
	return e.Status == 0 && e.Err != nil && errors.As(e.Err, &oerr) && oerr.Op == "dial"
}

// tlsConfig implements validate_certs, ca_path and api_fingerprint.
func tlsConfig(conn Connection) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case conn.Fingerprint != "":
		want, err := parseFingerprint(conn.Fingerprint)
		if err != nil {
			return nil, err
		}
		// Pinning replaces chain and name checks: exactly this certificate.
		tc.InsecureSkipVerify = true
		tc.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return &pinError{got: "none", want: Fingerprint(want)}
			}
			sum := sha256.Sum256(raw[0])
			if !bytes.Equal(sum[:], want) {
				return &pinError{got: Fingerprint(sum[:]), want: Fingerprint(want)}
			}
			return nil
		}
	case !conn.ValidateCerts:
		tc.InsecureSkipVerify = true
	}
	if conn.CAPath != "" {
		pem, err := os.ReadFile(conn.CAPath)
		if err != nil {
			return nil, fmt.Errorf("ca_path: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_path: %s holds no PEM certificate", conn.CAPath)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

func parseFingerprint(s string) ([]byte, error) {
	clean := strings.ToLower(strings.NewReplacer(":", "", " ", "").Replace(strings.TrimSpace(s)))
	b, err := hex.DecodeString(clean)
	if err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("api_fingerprint: %q is not a SHA-256 fingerprint (32 hex bytes, AA:BB:… as `pvenode cert info` prints it)", s)
	}
	return b, nil
}

// silentLogger keeps go-proxmox quiet: its debug lines include bodies.
type silentLogger struct{}

func (silentLogger) Errorf(string, ...interface{}) {}
func (silentLogger) Warnf(string, ...interface{})  {}
func (silentLogger) Infof(string, ...interface{})  {}
func (silentLogger) Debugf(string, ...interface{}) {}
