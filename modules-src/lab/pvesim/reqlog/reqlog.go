// Package reqlog is the lab's request log: every API request the nodes
// answered (Request), with its parameters rendered with every secret
// hidden, and where a watched secret travelled (Carries), so a test can
// prove which requests carried a password or token and that no log shows
// one. It is the lab's own, no PVE component (which parameter names hold a
// secret follows pve-storage's sensitive properties where PVE lists them,
// secretKey). pvesim/core logs each request when its pipeline has answered
// it; the Go API shows the log (Sim.Requests, Sim.WatchSecret).
package reqlog

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// Request is one entry of the request log. Params never hold secrets:
// passwords, token secrets and tickets are replaced by "<redacted>".
type Request struct {
	Time     time.Time         `json:"time"`
	Node     string            `json:"node"`
	Method   string            `json:"method"`
	Path     string            `json:"path"` // without /api2/json
	Params   map[string]string `json:"params,omitempty"`
	Auth     string            `json:"auth,omitempty"` // "root@pam", "root@pam!lab" or ""
	Status   int               `json:"status"`
	Duration time.Duration     `json:"duration"`
	Fault    string            `json:"fault,omitempty"` // kind of injected fault, if any
	// Carries says where the request held a value given to Watch (the
	// Go API's WatchSecret), by its label, never the value: "<label> in
	// body:<param>", "… in query:<param>", "… in path", "… in
	// header:<name>", sorted. A test proves with it that a secret went
	// only where it must (the POST creating a storage, the login), not
	// just that the log shows none (the log redacts them all).
	Carries []string `json:"carries,omitempty"`
}

// Mutating is true for every method but GET: what check mode must never send.
func (r Request) Mutating() bool { return r.Method != "GET" && r.Method != "HEAD" }

// Log records every API request; safe for concurrent use.
type Log struct {
	mu      sync.Mutex
	entries []Request
	errs    []string
	watched []watchedSecret // Watch
}

// New returns an empty log.
func New() *Log { return &Log{} }

// Add logs r as it is; Record is for a request whose params it must hide.
func (l *Log) Add(r Request) {
	l.mu.Lock()
	l.entries = append(l.entries, r)
	l.mu.Unlock()
}

// AddError records an internal error (Errors).
func (l *Log) AddError(err error) {
	l.mu.Lock()
	l.errs = append(l.errs, err.Error())
	l.mu.Unlock()
}

// Entries returns a copy of the log, oldest first.
func (l *Log) Entries() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Request(nil), l.entries...)
}

// Record logs entry with params, as the request r brought them: rendered
// with secret-named keys and every value in secrets or watched hidden, and
// with where r held a watched value (Request.Carries).
func (l *Log) Record(entry Request, r *http.Request, params map[string]any, secrets []string) {
	watched := l.watchList()
	entry.Params = redactParams(params, append(secrets, values(watched)...))
	entry.Carries = carries(r, params, watched)
	l.Add(entry)
}

// Watch adds labelled values to look for in every request
// (Request.Carries).
func (l *Log) Watch(label, value string) {
	if value == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watched = append(l.watched, watchedSecret{label, value})
}

type watchedSecret struct{ label, value string }

func (l *Log) watchList() []watchedSecret {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]watchedSecret(nil), l.watched...)
}

func values(ws []watchedSecret) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.value
	}
	return out
}

// carries is Request.Carries for one request: params is what
// httpwire.ReadParams took from the body and the query together.
func carries(r *http.Request, params map[string]any, watched []watchedSecret) []string {
	var out []string
	for _, w := range watched {
		has := func(s string) bool { return strings.Contains(s, w.value) }
		at := func(loc string) { out = append(out, w.label+" in "+loc) }
		if has(r.URL.Path) || has(r.URL.RawPath) {
			at("path")
		}
		// ReadParams merged the query into params: a param the query
		// holds with the secret is the query's, any other the body's.
		query := r.URL.Query()
		for k, v := range params {
			switch {
			case slices.ContainsFunc(query[k], has):
				at("query:" + k)
			case has(k) || has(pvecommon.ParamString(v)):
				at("body:" + k)
			}
		}
		for k, vs := range query {
			if _, merged := params[k]; !merged && (has(k) || slices.ContainsFunc(vs, has)) {
				at("query:" + k)
			}
		}
		for name, vs := range r.Header {
			if slices.ContainsFunc(vs, has) {
				at("header:" + name)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Reset empties the log (e.g. between a check-mode run and its assertion).
func (l *Log) Reset() {
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
}

// Errors returns internal errors (failed state saves) seen while serving.
func (l *Log) Errors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.errs...)
}

const redacted = "<redacted>"

// secretKey tells whether a parameter carries a secret by its name.
func secretKey(k string) bool {
	k = strings.ToLower(k)
	switch k {
	case "ticket", "otp", "tfa-challenge", "csrfpreventiontoken":
		return true
	}
	// keyring and encryption-key are storage secrets (pve-storage
	// sensitive-properties); master-pubkey is a public key.
	return strings.Contains(k, "password") || strings.Contains(k, "secret") || k == "keyring" || k == "encryption-key"
}

// redactParams renders params as strings, hiding secret-named keys and any
// value that contains one of the known secrets (a password passed in an
// unexpected parameter is still hidden).
func redactParams(params map[string]any, secrets []string) map[string]string {
	if len(params) == 0 {
		return nil
	}
	out := make(map[string]string, len(params))
	for k, v := range params {
		s := pvecommon.ParamString(v)
		if secretKey(k) && !(k == "encryption-key" && s == "autogen") {
			s = redacted // "autogen" asks PVE for a key and is none
		}
		for _, sec := range secrets {
			if sec != "" && strings.Contains(s, sec) {
				s = redacted
			}
		}
		out[k] = s
	}
	return out
}
