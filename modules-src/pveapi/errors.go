package pveapi

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"syscall"
)

// Kind is what a caller can do about an error: the one classification every
// API module uses, so "not found" or "locked" is decided in one place.
type Kind int

// Error kinds, from the most specific to Unknown.
const (
	KindUnknown    Kind = iota
	KindNotFound        // the object does not exist (404, or PVE's 500 "… does not exist")
	KindExists          // create of something already there
	KindLocked          // lock contention: `can't lock file … got timeout`, cfs-lock timeouts
	KindNoQuorum        // /etc/pve is read-only: the cluster has no quorum
	KindTemporary       // 5xx from a proxy or a dying handler, connection reset, timeout
	KindPermission      // 403: authenticated but not allowed (or a list emptied by missing rights, K19)
	KindAuth            // 401: credentials refused
	KindBadRequest      // 400: parameter verification failed (Errors names the parameters)
	KindTLS             // the server's certificate was not accepted
	KindModified        // the digest sent is not the config's any more: PVE refused before writing
)

var kindNames = map[Kind]string{
	KindUnknown: "unknown", KindNotFound: "not found", KindExists: "already exists", KindLocked: "locked",
	KindNoQuorum: "no quorum", KindTemporary: "temporary", KindPermission: "permission", KindAuth: "authentication",
	KindBadRequest: "bad request", KindTLS: "tls", KindModified: "modified",
}

func (k Kind) String() string { return kindNames[k] }

// Error is every failure of an API call: the request (method and path,
// never a credential), PVE's answer (status, message, per-parameter
// errors) or the transport error underneath.
type Error struct {
	Method string
	Path   string
	// Status is the HTTP status; 0 when no answer arrived (or in local mode,
	// where pvesh does not print one for most errors).
	Status  int
	Message string
	// Errors are PVE's per-parameter messages of a 400.
	Errors map[string]string
	// Err is the transport error when no answer arrived.
	Err error
	// Unanswered is true when a write may or may not have happened (the
	// connection broke after the request was sent, or a proxy answered
	// 5xx): the caller must re-read before deciding anything.
	Unanswered bool
	// Hint is a sentence telling the user what to do (TLS, auth, permissions).
	Hint string

	kind Kind
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: ", e.Method, e.Path)
	switch {
	case e.Err != nil && e.Status == 0:
		b.WriteString(describeTransport(e.Err))
	case e.Status != 0:
		fmt.Fprintf(&b, "%d %s", e.Status, e.Message)
	default:
		b.WriteString(e.Message)
	}
	if len(e.Errors) > 0 {
		keys := make([]string, 0, len(e.Errors))
		for k := range e.Errors {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "; %s: %s", k, strings.TrimSpace(e.Errors[k]))
		}
	}
	if e.Hint != "" {
		b.WriteString(" (" + e.Hint + ")")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Kind classifies the error (see KindOf).
func (e *Error) Kind() Kind { return e.kind }

// KindOf classifies any error returned by this package; errors from
// elsewhere are KindUnknown (a context deadline is not temporary: the run
// is out of time).
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.kind
	}
	return KindUnknown
}

// Is* are shorthands for KindOf(err) == Kind*.
func IsNotFound(err error) bool   { return KindOf(err) == KindNotFound }
func IsExists(err error) bool     { return KindOf(err) == KindExists }
func IsLocked(err error) bool     { return KindOf(err) == KindLocked }
func IsPermission(err error) bool { return KindOf(err) == KindPermission }

// IsModified tells whether PVE refused a write because the digest it was
// sent is not the config's any more: the config changed since it was read.
func IsModified(err error) bool { return KindOf(err) == KindModified }

// modifiedMessage is pve-common's assert_if_modified die (PVE/Tools.pm and
// PVE/SectionConfig.pm), which every digest-guarded handler calls under its
// lock before it writes anything (pve-storage API2/Storage/Config.pm
// update, pve-manager API2/ReplicationConfig.pm update, qemu-server
// update_vm, pve-ha-manager's config updates): such a refusal wrote nothing.
const modifiedMessage = "detected modified configuration - file changed by other user? Try again."

// IsUnanswered tells whether a write may have happened although it failed.
func IsUnanswered(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Unanswered
}

// classify decides the kind of e from its status and PVE's message. The
// texts are PVE's own (pve-common Tools.pm lock_file, pve-cluster
// Cluster.pm cfs_lock, pve-storage Config.pm, RPCEnvironment.pm), matched
// case-sensitively where PVE is consistent, like bpg's classifier.
func classify(e *Error) Kind {
	msg := e.Message
	switch {
	case e.Err != nil && e.Status == 0:
		if isTLSError(e.Err) {
			return KindTLS
		}
		if errors.Is(e.Err, context.Canceled) || errors.Is(e.Err, context.DeadlineExceeded) {
			return KindUnknown
		}
		return KindTemporary
	case e.Status == 401:
		return KindAuth
	case e.Status == 403 || strings.Contains(msg, "Permission check failed"):
		return KindPermission
	case strings.Contains(msg, modifiedMessage):
		return KindModified
	case strings.Contains(msg, "can't lock file") && strings.Contains(msg, "got timeout"),
		strings.Contains(msg, "cfs-lock") && strings.Contains(msg, "got lock request timeout"),
		strings.Contains(msg, "got lock timeout"):
		return KindLocked
	case strings.Contains(msg, "no quorum"):
		return KindNoQuorum
	case strings.Contains(msg, "already exists") || strings.Contains(msg, "already defined"):
		return KindExists
	case e.Status == 404, strings.Contains(msg, "does not exist"), strings.Contains(msg, "no such "):
		return KindNotFound
	case e.Status == 400,
		// PVE 9's answer to a group call once the groups are migrated, and
		// to a rule write before they are (pve-ha-manager API2/HA/Groups.pm,
		// Rules.pm): a 500 that no retry changes, and the one way to tell
		// the mechanism (ha.Detect) — retrying it cost every run seconds.
		strings.Contains(msg, "have been migrated to rules"), strings.Contains(msg, "have not been migrated yet"):
		return KindBadRequest
	case e.Status >= 500:
		// 500 is a handler's die (or an injected failure), 502-504 a proxy,
		// 595/596/599 pveproxy failing to reach another node: none of them
		// says the request is wrong, so reads try again.
		return KindTemporary
	}
	return KindUnknown
}

func newError(method, path string, status int, message string, errs map[string]string, cause error) *Error {
	e := &Error{Method: method, Path: path, Status: status, Message: strings.TrimRight(message, "\n"), Errors: errs, Err: cause}
	e.kind = classify(e)
	switch e.kind {
	case KindTLS:
		e.Hint = tlsHint(cause)
	case KindAuth:
		e.Hint = "check api_user/api_password or api_token_id/api_token_secret; a token id is user@realm!name, or name together with api_user"
	case KindPermission:
		e.Hint = "the user or token lacks a privilege; a token with privilege separation only has the rights granted to the token itself"
	case KindNoQuorum:
		e.Hint = "/etc/pve is read-only until the cluster is quorate again"
	}
	return e
}

func isTLSError(err error) bool {
	var (
		verr *tls.CertificateVerificationError
		uerr x509.UnknownAuthorityError
		herr x509.HostnameError
		cerr x509.CertificateInvalidError
		perr *pinError
		rerr tls.RecordHeaderError
	)
	return errors.As(err, &verr) || errors.As(err, &uerr) || errors.As(err, &herr) || errors.As(err, &cerr) ||
		errors.As(err, &perr) || errors.As(err, &rerr)
}

// tlsHint says how to make a self-signed PVE node trusted, quoting the
// fingerprint of the certificate that was presented so the user can compare
// it with `pvenode cert info` on the node before pinning it.
func tlsHint(err error) string {
	var perr *pinError
	if errors.As(err, &perr) {
		return "api_fingerprint does not match the node's certificate; a join or a new certificate changes it: read the current one with `pvenode cert info` on the node"
	}
	var verr *tls.CertificateVerificationError
	fp := ""
	if errors.As(err, &verr) && len(verr.UnverifiedCertificates) > 0 {
		sum := sha256.Sum256(verr.UnverifiedCertificates[0].Raw)
		fp = " (the node presented " + Fingerprint(sum[:]) + ")"
	}
	return "the node's certificate is not trusted; PVE signs it with its own cluster CA: trust that CA with ca_path (/etc/pve/pve-root-ca.pem), or pin the node's certificate with api_fingerprint" + fp +
		" after checking it with `pvenode cert info` on the node; validate_certs: false turns verification off"
}

// Fingerprint formats a SHA-256 sum the way PVE prints it (AA:BB:…).
func Fingerprint(sum []byte) string {
	parts := make([]string, len(sum))
	for i, b := range sum {
		parts[i] = fmt.Sprintf("%02X", b)
	}
	return strings.Join(parts, ":")
}

// describeTransport words a transport error for a user; the URL (which
// never holds credentials, but is noise) is left out.
func describeTransport(err error) string {
	var nerr net.Error
	var stopped *stoppedError
	var plost *pveshLost
	switch {
	case errors.As(err, &stopped):
		return stopped.Error()
	case errors.As(err, &plost):
		return plost.Error()
	case errors.Is(err, context.DeadlineExceeded):
		// before net.Error: the context's error also says Timeout()
		return "the task's deadline passed before an answer arrived"
	case errors.As(err, &nerr) && nerr.Timeout():
		return "no answer before api_timeout"
	case errors.Is(err, syscall.ECONNRESET):
		return "the connection was reset before an answer arrived"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection closed before an answer arrived"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused (is pveproxy running, and is api_port right?)"
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return "cannot resolve " + dnsErr.Name
	}
	return stripURL(err)
}

// stripURL removes the `Get "https://…": ` prefix of *url.Error.
func stripURL(err error) string {
	s := err.Error()
	if i := strings.Index(s, "\": "); i > 0 && strings.Contains(s[:i], "://") {
		return s[i+3:]
	}
	return s
}

// stoppedError is a local command (pvesh) stopped by the run's deadline.
type stoppedError struct {
	what  string
	cause error
}

func (e *stoppedError) Error() string { return e.what + ": " + e.cause.Error() }
func (e *stoppedError) Unwrap() error { return e.cause }

// pinError is a certificate that does not match api_fingerprint.
type pinError struct{ got, want string }

func (p *pinError) Error() string {
	return fmt.Sprintf("certificate fingerprint %s does not match api_fingerprint %s", p.got, p.want)
}

// NothingDone reports whether a failed write certainly changed nothing:
// PVE refused it before acting (parameters, permission, authentication, a
// lock or quorum it could not get, the object already there or missing), or
// the request never reached PVE. An unanswered write is never "nothing done".
func NothingDone(err error) bool {
	if _, written := IsWritten(err); written {
		return false // PVE raised it after writing (Write.RaisesAfterWrite)
	}
	var nd *notDoneError
	var wn *wrongNodeError
	if errors.As(err, &nd) || errors.As(err, &wn) {
		return true
	}
	var e *Error
	if !errors.As(err, &e) || e.Unanswered {
		return false
	}
	switch e.kind {
	case KindBadRequest, KindPermission, KindAuth, KindLocked, KindNoQuorum, KindExists, KindNotFound, KindTLS, KindModified:
		return true
	}
	return notSent(e)
}
