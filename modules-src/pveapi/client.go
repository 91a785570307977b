package pveapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Client calls one PVE API: a node's pveproxy over HTTPS, or, in local
// mode, the node's own pveproxy with a ticket minted on the node (or pvesh
// when that is not possible). Methods are safe for concurrent use.
type Client struct {
	t      transport
	retry  RetryPolicy
	logf   func(format string, args ...any)
	target string
	local  bool
	pvesh  bool
	// warnings are what the connection wants the user to know (why local
	// mode fell back to pvesh); plain data, the module decides how to show
	// them.
	warnings []string

	taskPoll   time.Duration
	settlePoll time.Duration
	// readOnly refuses every write before sending (check mode).
	readOnly bool
	// principal is who PVE runs our requests as, as it writes it in a
	// task's UPID: the token id user@realm!name, the user of a password
	// login, root@pam in local mode (a minted root@pam ticket, or pvesh,
	// which runs the handlers as root@pam). A task found by a read is
	// ours only if it ran as principal.
	principal string

	calls atomic.Int64

	// confirmed: local mode's minted-ticket transport was shown to reach
	// this node's own pveproxy (confirmLocalNode, before the first write).
	confirmMu sync.Mutex
	confirmed bool

	versionOnce sync.Once
	version     Version
	versionErr  error
}

// transport sends one request and returns the raw `data` of the answer, or
// an *Error (classified) describing what went wrong.
type transport interface {
	do(ctx context.Context, method, path string, params url.Values) (json.RawMessage, error)
}

// Options are the knobs a module (or a test) may set besides the
// connection options.
type Options struct {
	// HTTPClient replaces the client built from the TLS options (tests,
	// proxies). Its transport is wrapped to capture PVE's error answers.
	HTTPClient *http.Client
	// Log receives one line per request (method, path, status, duration;
	// never a parameter value). Wire it to ansible.Run.Log at -vvv.
	Log func(format string, args ...any)
	// Retry overrides DefaultRetry (tests use short waits).
	Retry *RetryPolicy
	// Pvesh is the pvesh command of local mode's fallback; default "pvesh"
	// in PATH.
	Pvesh string
	// PveshGrace is the time pvesh gets after SIGTERM once the run's
	// deadline has passed; host.DefaultTermGrace when zero.
	PveshGrace time.Duration
	// LocalAllowed reports whether local mode is possible; default: running
	// as root.
	LocalAllowed func() bool
	// EtcPve, HostsFile and Nodename are where local mode finds the node's
	// keys (/etc/pve), its address (/etc/hosts) and PVE's name for it (the
	// short host name): tests point them elsewhere.
	EtcPve, HostsFile, Nodename string
	// NoTicket makes local mode use pvesh without trying a minted ticket
	// (the benchmark compares both).
	NoTicket bool
	// TaskPoll overrides DefaultTaskPoll (tests).
	TaskPoll time.Duration
	// SettlePoll overrides DefaultSettlePoll, the pause between reads
	// that settle a write whose answer was lost (tests).
	SettlePoll time.Duration
	// ReadOnly makes a client that refuses every write (Dispatch fails
	// with a *ReadOnlyError, nothing is sent): the client of check mode.
	ReadOnly bool
}

// Poll is how often a module polls a guest or a task itself: TaskPoll,
// or DefaultTaskPoll when it is unset (the client's own pace).
func (o Options) Poll() time.Duration {
	if o.TaskPoll == 0 {
		return DefaultTaskPoll
	}
	return o.TaskPoll
}

// Connect builds a client from the connection options. With a password it
// logs in at once (so the first real request does not pay pveproxy's 3 s
// delay on a 401); with a token nothing is sent yet.
func Connect(ctx context.Context, conn Connection, o Options) (*Client, error) {
	c := &Client{retry: DefaultRetry, logf: o.Log, taskPoll: DefaultTaskPoll, settlePoll: DefaultSettlePoll, readOnly: o.ReadOnly}
	if o.TaskPoll > 0 {
		c.taskPoll = o.TaskPoll
	}
	if o.SettlePoll > 0 {
		c.settlePoll = o.SettlePoll
	}
	if o.Retry != nil {
		c.retry = *o.Retry
	}
	if c.logf == nil {
		c.logf = func(string, ...any) {}
	}
	if conn.Host == "" {
		return c.connectLocal(ctx, conn, o)
	}
	ht, err := newHTTPTransport(ctx, conn, o)
	if err != nil {
		return nil, err
	}
	c.t, c.target = ht, ht.base
	c.principal = conn.User
	if conn.TokenID != "" {
		c.principal, _ = FullTokenID(conn.User, conn.TokenID) // checked by newHTTPTransport
	}
	return c, nil
}

// ReadOnlyClient returns a client of the same API and transport that
// refuses every write: what a module hands to a stage in check mode when
// it got its client from elsewhere (an Env a test filled).
func (c *Client) ReadOnlyClient() *Client {
	if c.readOnly {
		return c
	}
	return &Client{t: c.t, retry: c.retry, logf: c.logf, target: c.target, local: c.local,
		pvesh: c.pvesh, warnings: slices.Clone(c.warnings), principal: c.principal,
		taskPoll: c.taskPoll, settlePoll: c.settlePoll, readOnly: true}
}

// ReadOnly tells whether the client refuses writes (check mode).
func (c *Client) ReadOnly() bool { return c.readOnly }

// connectLocal is local mode: a ticket minted with the node's own auth key
// and HTTPS to the node's own pveproxy, checked by the first request
// (GET /version, which every module reads first anyway); pvesh when any of
// that is not possible, with a warning saying why.
func (c *Client) connectLocal(ctx context.Context, conn Connection, o Options) (*Client, error) {
	allowed := o.LocalAllowed
	if allowed == nil {
		allowed = func() bool { return os.Geteuid() == 0 }
	}
	if !allowed() {
		return nil, errors.New("api_host: required unless the module runs as root on a Proxmox VE node (local mode uses the node's own API)")
	}
	c.local = true
	c.principal = "root@pam" // the minted ticket's user, and pvesh's (setup_default_cli_env)
	why := "NoTicket is set"
	if !o.NoTicket {
		tt, err := newTicketTransport(conn, o, time.Now)
		if err == nil {
			perr := c.probe(ctx, tt)
			if KindOf(perr) == KindAuth {
				// Refused as PVE's Perl signs it: the other plausible
				// form, once (a 401 is answered before PVE acts).
				tt.setHash(TicketSHA256)
				if perr2 := c.probe(ctx, tt); perr2 == nil {
					c.warnings = append(c.warnings, fmt.Sprintf("local mode: this node's pveproxy (%s) refused a ticket signed %s, as PVE's Perl (Crypt::OpenSSL::RSA's default) signs it, and accepted one signed %s, which this run uses",
						tt.current().base, TicketSHA1, TicketSHA256))
					perr = nil
				} else {
					perr = fmt.Errorf("signed %s: %s; signed %s: %s", TicketSHA1, withoutHint(perr), TicketSHA256, withoutHint(perr2))
				}
			}
			if perr != nil {
				err = fmt.Errorf("the node's pveproxy (%s) did not answer a minted ticket: %s", tt.current().base, withoutHint(perr))
			}
		}
		if err == nil {
			c.t, c.target = tt, "local node ("+tt.current().base+", minted root@pam ticket)"
			return c, nil
		}
		why = err.Error()
	}
	bin := o.Pvesh
	if bin == "" {
		bin = "pvesh"
	}
	if _, err := exec.LookPath(bin); err != nil {
		return nil, fmt.Errorf("api_host: not set, and local mode cannot reach this node's API: no minted ticket (%s) and no pvesh (%v)", why, err)
	}
	c.t, c.pvesh, c.target = &pveshTransport{bin: bin, grace: o.PveshGrace}, true, "local node (pvesh)"
	if !o.NoTicket {
		c.warnings = append(c.warnings, "local mode uses pvesh (one process per API call, about half a second each on a real node, and no secrets) because a ticket could not be used: "+why)
	}
	return c, nil
}

// probe sends the first request through a minted-ticket transport and
// keeps its answer as the run's /version.
func (c *Client) probe(ctx context.Context, t transport) error {
	c.calls.Add(1)
	raw, err := t.do(ctx, http.MethodGet, "/version", nil)
	if err != nil {
		return err
	}
	var v Version
	if err := Decode(raw, &v); err != nil {
		return fmt.Errorf("GET /version: unexpected answer: %w", err)
	}
	c.versionOnce.Do(func() { c.version, c.versionErr = parseVersion(v) })
	return nil
}

// withoutHint words an error without its hint, which speaks of the
// connection options a local run does not have.
func withoutHint(err error) string {
	var e *Error
	if errors.As(err, &e) {
		cp := *e
		cp.Hint = ""
		return cp.Error()
	}
	return err.Error()
}

// Local tells whether the client talks to the node it runs on (no
// api_host), whichever way.
func (c *Client) Local() bool { return c.local }

// Pvesh tells whether requests go through pvesh, whose command line every
// user of the node can read: no secret may be sent then.
func (c *Client) Pvesh() bool { return c.pvesh }

// Warnings are what the connection wants the user to know (why local mode
// fell back to pvesh).
func (c *Client) Warnings() []string { return slices.Clone(c.warnings) }

// Target names what the client talks to, for messages ("https://h:8006").
func (c *Client) Target() string { return c.target }

// Calls is the number of API requests sent so far (retries included).
func (c *Client) Calls() int { return int(c.calls.Load()) }

// Get reads path and decodes `data` into out (see Decode). Temporary
// failures and lock contention are retried within the RetryPolicy.
func (c *Client) Get(ctx context.Context, path string, params url.Values, out any) error {
	return c.send(ctx, http.MethodGet, path, params, out)
}

// send sends one request with the retry policy; out may be nil. It is the
// only way a request leaves the client: Get for reads, Dispatch for
// writes. A read-only client refuses every write here, before sending.
func (c *Client) send(ctx context.Context, method, path string, params url.Values, out any) error {
	read := method == http.MethodGet
	if !read && c.readOnly && !login(method, path) {
		return &ReadOnlyError{Method: method, Path: path}
	}
	if !read {
		if err := c.confirmLocalNode(ctx, method, path); err != nil {
			return err
		}
	}
	var tries, lockTries int
	for {
		start := time.Now()
		c.calls.Add(1)
		raw, err := c.t.do(ctx, method, path, params)
		if err == nil {
			c.logf("%s %s -> ok (%s)", method, path, time.Since(start).Round(time.Millisecond))
			if out == nil {
				return nil
			}
			if derr := Decode(raw, out); derr != nil {
				return fmt.Errorf("%s %s: unexpected answer: %w", method, path, derr)
			}
			return nil
		}
		var e *Error
		if !errors.As(err, &e) {
			return err
		}
		c.logf("%s %s -> %s (%s)", method, path, err, time.Since(start).Round(time.Millisecond))
		var wait time.Duration
		switch {
		case e.kind == KindLocked && lockTries < c.retry.LockRetries:
			// PVE gave up waiting for a lock before changing anything.
			lockTries++
			wait = c.retry.LockWait
		case e.kind == KindTemporary && tries < c.retry.ReadRetries && (read || notSent(e)):
			tries++
			wait = c.retry.backoff(tries)
		default:
			if !read && (e.kind == KindTemporary || e.kind == KindUnknown) && e.Status != 400 {
				e.Unanswered = true
			}
			if tries+lockTries > 0 {
				e.Message = strings.TrimSpace(e.Message + fmt.Sprintf(" (after %d retries)", tries+lockTries))
			}
			return e
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return e
		}
		select {
		case <-ctx.Done():
			return e
		case <-time.After(wait):
		}
	}
}

// RetryPolicy bounds the retries of send.
type RetryPolicy struct {
	// ReadRetries is how often a GET is retried after a temporary failure
	// (also a write whose connection could not even be opened).
	ReadRetries int
	// Backoff is the first wait; it doubles up to MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// LockRetries is how often any request is retried after PVE's lock
	// timeout (PVE has already waited ~10 s for the lock each time).
	LockRetries int
	LockWait    time.Duration
}

// DefaultRetry: about 7 s of retries for a read, three more lock attempts.
var DefaultRetry = RetryPolicy{ReadRetries: 4, Backoff: 500 * time.Millisecond, MaxBackoff: 4 * time.Second,
	LockRetries: 3, LockWait: time.Second}

func (p RetryPolicy) backoff(n int) time.Duration {
	d := p.Backoff << (n - 1)
	if p.MaxBackoff > 0 && d > p.MaxBackoff {
		d = p.MaxBackoff
	}
	return d
}

// Version is GET /version.
type Version struct {
	Version string `json:"version"` // 9.2.5
	Release string `json:"release"` // 9.2
	RepoID  string `json:"repoid"`
	Major   int    `json:"-"`
}

// Version reads /version once per client (once per module run).
func (c *Client) Version(ctx context.Context) (Version, error) {
	c.versionOnce.Do(func() {
		var v Version
		if err := c.Get(ctx, "/version", nil, &v); err != nil {
			c.versionErr = err
			return
		}
		c.version, c.versionErr = parseVersion(v)
	})
	return c.version, c.versionErr
}

func parseVersion(v Version) (Version, error) {
	major, _, _ := strings.Cut(v.Version, ".")
	v.Major, _ = strconv.Atoi(major)
	if v.Major == 0 {
		return Version{}, fmt.Errorf("GET /version: cannot read a PVE version from %q", v.Version)
	}
	return v, nil
}

// Path builds an API path from a format whose %s verbs are path-escaped:
// Path("/nodes/%s/tasks/%s/status", node, upid).
func Path(format string, parts ...string) string {
	esc := make([]any, len(parts))
	for i, p := range parts {
		esc[i] = url.PathEscape(p)
	}
	return fmt.Sprintf(format, esc...)
}
