// Package pveansible is the glue between the pure API client (pveapi) and
// the Ansible runtime (ansible): the connection options every API module
// takes (names, environment fallbacks, docs), the client a Run gets (read
// only in check mode, logged at -vvv), the outcome of a dispatched write
// turned into what a Change's Apply returns, and what the guest modules
// (pve_clone, pve_container) plan alike for a VM and a CT (guest.go).
package pveansible

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
)

// Connection is the decoded connection options: embed it in a module's
// params struct (Decode squashes embedded structs).
type Connection struct {
	Host          string `ansible:"api_host"`
	Port          int    `ansible:"api_port"`
	User          string `ansible:"api_user"`
	Password      string `ansible:"api_password"`
	TokenID       string `ansible:"api_token_id"`
	TokenSecret   string `ansible:"api_token_secret"`
	ValidateCerts bool   `ansible:"validate_certs"`
	CAPath        string `ansible:"ca_path"`
	Fingerprint   string `ansible:"api_fingerprint"`
	Timeout       int    `ansible:"api_timeout"`
}

// API is the client's view of the options.
func (c Connection) API() pveapi.Connection { return pveapi.Connection(c) }

// Set describes one set of connection options a module takes: the full
// set of an API module (Set{}), or a prefixed subset for a second target
// (pve_cluster's primary_api_fingerprint: Set{Prefix: "primary_", Only:
// []string{"api_fingerprint"}}).
type Set struct {
	// Prefix goes before every name.
	Prefix string
	// Only limits the set to these options (unprefixed names); nil: all.
	Only []string
	// For opens every description ("join_method=api:"), saying when the
	// options matter.
	For string
	// Target is what the options reach, in descriptions; default "a PVE
	// node" ("the primary").
	Target string
	// Docs replaces the description of an option (unprefixed name) where
	// the module means something more specific than the generic text.
	Docs map[string][]string
	// Aliases gives options (unprefixed names) other accepted names,
	// e.g. an older name kept working.
	Aliases map[string][]string
	// NoEnv drops the environment fallbacks of the unprefixed set (a
	// module whose options name a node's root, not the controller's API
	// user).
	NoEnv bool
}

// Names are the connection options, unprefixed.
var Names = []string{"api_host", "api_port", "api_user", "api_password", "api_token_id", "api_token_secret",
	"validate_certs", "ca_path", "api_fingerprint", "api_timeout"}

// Options builds the set's option definitions (a fresh map each call).
// Environment fallbacks (community.proxmox's PROXMOX_*) belong to the
// unprefixed set only: one environment cannot name two targets.
func (s Set) Options() map[string]ansible.Option {
	target := s.Target
	if target == "" {
		target = "a PVE node"
	}
	all := baseOptions(target)
	out := map[string]ansible.Option{}
	for _, name := range Names {
		if s.Only != nil && !slices.Contains(s.Only, name) {
			continue
		}
		o := all[name]
		if d, ok := s.Docs[name]; ok {
			o.Description = slices.Clone(d)
		}
		if s.For != "" && len(o.Description) > 0 {
			o.Description = append([]string{s.For + " " + o.Description[0]}, o.Description[1:]...)
		}
		if s.Prefix != "" || s.NoEnv {
			o.EnvFallback = nil
		}
		o.Aliases = slices.Clone(s.Aliases[name])
		out[s.Prefix+name] = o
	}
	if s.Only != nil && len(out) != len(s.Only) {
		panic(fmt.Sprintf("pveansible: Set.Only names an option that is not a connection option: %v", s.Only))
	}
	return out
}

// ConnectionOptions is the full unprefixed set.
func ConnectionOptions() map[string]ansible.Option { return Set{}.Options() }

// Fragment documents the full unprefixed set once, as
// plugins/doc_fragments/api.py; every module taking that set as it is
// (With(spec, Set{})) references it instead of repeating the options. A
// set with a prefix, a subset or its own texts (pve_cluster's) stays in
// the module's own docs.
func Fragment() ansible.DocFragment {
	return ansible.DocFragment{Name: "api", What: "The PVE API connection options of gopve.proxmox's API modules (pveapi/pveansible).",
		Options: ConnectionOptions()}
}

// plain reports whether s is the full unprefixed set with the generic
// texts: exactly what Fragment documents.
func (s Set) plain() bool {
	return s.Prefix == "" && s.Only == nil && s.For == "" && s.Target == "" && len(s.Docs) == 0 && len(s.Aliases) == 0 && !s.NoEnv
}

// With returns spec with the sets' options merged in. A module that
// declares an option of the same name itself is a bug: it panics, and the
// registry test catches it.
func With(spec ansible.Spec, sets ...Set) ansible.Spec {
	opts := maps.Clone(spec.Options)
	if opts == nil {
		opts = map[string]ansible.Option{}
	}
	for _, s := range sets {
		add := s.Options()
		for _, name := range slices.Sorted(maps.Keys(add)) {
			if _, clash := opts[name]; clash {
				panic(fmt.Sprintf("pveansible: option %q declared twice (by the module or by two sets)", name))
			}
			opts[name] = add[name]
		}
		_, id := add[s.Prefix+"api_token_id"]
		_, secret := add[s.Prefix+"api_token_secret"]
		if id && secret {
			spec.RequiredTogether = append(slices.Clone(spec.RequiredTogether), []string{s.Prefix + "api_token_id", s.Prefix + "api_token_secret"})
		}
		if s.plain() {
			spec.Fragments = append(slices.Clone(spec.Fragments), Fragment())
		}
	}
	spec.Options = opts
	return spec
}

// WithConnection is With(spec, Set{}): the full unprefixed set.
func WithConnection(spec ansible.Spec) ansible.Spec { return With(spec, Set{}) }

// Declare gives the two constructors of one of the collection's API
// modules, built from its parts: module, as the binary registers it, and
// build, with client options o (tests point them at a simulator with short
// retries and polls). about gives the documentation, spec the module's own
// options, params the struct its arguments decode into, timeout the run's
// deadline. Each call builds afresh (about and spec return new maps).
//
// Every API module gets the same completion: the connection options added
// to its spec, the API action group, check runs that may assume what
// created_earlier names (ansible.NotYet), and its run given o.
func Declare(about func() ansible.Module, spec func() ansible.Spec, params any, timeout time.Duration,
	run func(*ansible.Run, pveapi.Options) error) (module func() ansible.Module, build func(o pveapi.Options) ansible.Module) {
	build = func(o pveapi.Options) ansible.Module {
		m := about()
		m.Spec, m.Params, m.Timeout = WithConnection(spec()), params, timeout
		m.Return = versionReturn + m.Return
		m.ActionGroups = []string{ansible.GroupAPI}
		m.CreatedEarlier = true
		m.Run = func(r *ansible.Run) error { return run(r, o) }
		return m
	}
	return func() ansible.Module { return build(pveapi.Options{}) }, build
}

// versionReturn documents pve_version, which every API module returns
// (ReportVersion): written once so that the five modules cannot word it
// differently.
const versionReturn = `pve_version:
  description: Major version of the PVE node answering (8 or 9).
  returned: when the API was reached
  type: int
`

// ReportVersion sets pve_version, the major version of the node the run
// talked to, once it is known (0: the API was not reached).
func ReportVersion(r *ansible.Run, major int) {
	if major != 0 {
		r.Set("pve_version", major)
	}
}

// TaskLogReturn documents task_log, the tail of a failed task's log, for
// the modules that return it (a guest's create, clone and power tasks).
const TaskLogReturn = `task_log:
  description: The tail of a failed task's log.
  returned: when a task failed
  type: list
  elements: str
`

func baseOptions(target string) map[string]ansible.Option {
	return map[string]ansible.Option{
		"api_host": {Type: ansible.TypeStr, EnvFallback: []string{"PROXMOX_HOST"},
			Description: []string{
				"Name or address of " + target + " whose API (pveproxy) the module talks to.",
				"When unset and the module runs as root on a PVE node, it uses that node's own API (local mode): it signs a short-lived root@pam ticket with the cluster's /etc/pve/priv/authkey.key, as PVE does at a login, and calls the node's pveproxy over HTTPS, verified against /etc/pve/pve-root-ca.pem. No credentials are needed and secrets travel in the request body.",
				"When that is not possible (keys unreadable, the ticket refused), local mode falls back to pvesh with a warning saying why: one pvesh process (about half a second on a real node) per API call, and, since pvesh takes parameters only on its command line, which any user of the node can read, no secret (a storage password or encryption key) is ever sent then.",
			}},
		"api_port": {Type: ansible.TypeInt, Default: pveapi.DefaultPort, EnvFallback: []string{"PROXMOX_PORT"},
			Description: []string{"Port of the API."}},
		"api_user": {Type: ansible.TypeStr, EnvFallback: []string{"PROXMOX_USER"},
			Description: []string{"User with realm (root@pam) for password authentication, or the owner of a token given by its short name."}},
		"api_password": {Type: ansible.TypeStr, NoLog: true, EnvFallback: []string{"PROXMOX_PASSWORD"},
			Description: []string{"Password of api_user. The module logs in once per run (POST /access/ticket) and uses the ticket."}},
		"api_token_id": {Type: ansible.TypeStr, EnvFallback: []string{"PROXMOX_TOKEN_ID"},
			Description: []string{"API token id, either user@realm!name or only name (then api_user gives the user). Takes precedence over api_password."}},
		"api_token_secret": {Type: ansible.TypeStr, NoLog: true, EnvFallback: []string{"PROXMOX_TOKEN_SECRET"},
			Description: []string{"Secret (UUID) of the API token."}},
		"validate_certs": {Type: ansible.TypeBool, Default: true, EnvFallback: []string{"PROXMOX_VALIDATE_CERTS"},
			Description: []string{"Verify the node's TLS certificate. PVE signs node certificates with its own cluster CA: trust it with ca_path or pin the certificate with api_fingerprint rather than turning this off."}},
		"ca_path": {Type: ansible.TypePath,
			Description: []string{"PEM file of the CA to trust in addition to the system's, e.g. a copy of the cluster's /etc/pve/pve-root-ca.pem."}},
		"api_fingerprint": {Type: ansible.TypeStr,
			Description: []string{"SHA-256 fingerprint of the node's certificate (AA:BB:…, as `pvenode cert info` prints it). When set, exactly that certificate is accepted, whoever signed it. A cluster join gives the joining node a new certificate."}},
		"api_timeout": {Type: ansible.TypeInt, Default: 30,
			Description: []string{"Seconds to wait for one API answer. Reads that time out are retried; writes are re-checked by reading, never sent twice blindly."}},
	}
}

// ForRun connects for a module run: requests are logged at -vvv (method,
// path, outcome; never values) unless o.Log is set, switching verification
// off is warned about, and in check mode the client is read only: any
// write through it fails as a bug, before anything is sent.
func ForRun(r *ansible.Run, conn pveapi.Connection, o pveapi.Options) (*pveapi.Client, error) {
	if conn.Host != "" && !conn.ValidateCerts && conn.Fingerprint == "" {
		r.Warn("validate_certs is false: anyone between this host and " + conn.Host + " can read the API credentials; trust the cluster CA with ca_path or pin the node with api_fingerprint instead")
	}
	if o.Log == nil {
		o.Log = func(format string, args ...any) { r.Log(3, format, args...) }
	}
	if r.CheckMode() {
		o.ReadOnly = true
	}
	c, err := pveapi.Connect(r.Context(), conn, o)
	if err != nil {
		return nil, err
	}
	// Why local mode fell back to pvesh, for instance.
	for _, w := range c.Warnings() {
		r.Warn(w)
	}
	return c, nil
}

// ForRunSecret is ForRun for a run whose task gives the secret option
// secret (given: set, and the object is kept, not removed). When local
// mode fell back to pvesh, which would carry it on its command line,
// readable by any user of the node, such a run is refused
// (pveapi.LocalSecretError) before any request, even if the object is
// converged and no write would carry the secret this time: the same task
// must not pass or fail by the node's state.
func ForRunSecret(r *ansible.Run, conn pveapi.Connection, o pveapi.Options, secret string, given bool) (*pveapi.Client, error) {
	c, err := ForRun(r, conn, o)
	if err != nil {
		return nil, err
	}
	if c.Pvesh() && given {
		return nil, pveapi.LocalSecretError(secret)
	}
	return c, nil
}

// Dispatch sends w once through c (see pveapi.Client.Dispatch) and returns
// what a Change's Apply returns: nil when it was made (answered, or a lost
// answer settled by a read, which is warned about); an error built with
// ansible.NothingChanged when PVE refused before acting or a read proved
// nothing was done; any other error as it is, which the runtime reports as
// changed, unverified (a lost answer no read settled in time, a
// *pveapi.WrittenError: a failure PVE raised after writing). A DELETE
// answered "does not exist" that a read shows gone is made (warned).
func Dispatch(ctx context.Context, r *ansible.Run, c *pveapi.Client, w pveapi.Write) (*pveapi.Outcome, error) {
	out, err := c.Dispatch(ctx, w)
	if out != nil && out.Lost != "" {
		r.Warn(out.Lost)
	}
	if out != nil && out.Gone != "" {
		r.Warn(out.Gone)
	}
	if out != nil && out.Task != nil {
		for _, warn := range out.Task.Warnings {
			r.Warn(warn)
		}
	}
	if err != nil && pveapi.NothingDone(err) {
		return out, ansible.NothingChanged(err)
	}
	return out, err
}

// SchemaError words a refusal of the API schema (*apischema.Errors) in
// the module's terms: optionOf names the Ansible option behind each
// refused PVE parameter. Any other error is returned as it is.
func SchemaError(err error, optionOf func(param string) string) error {
	var e *apischema.Errors
	if !errors.As(err, &e) {
		return err
	}
	parts := make([]string, len(e.List))
	for i, p := range e.List {
		if p.Key != "" {
			parts[i] = fmt.Sprintf("%s: key '%s': %s", optionOf(p.Param), p.Key, p.Msg)
		} else {
			parts[i] = fmt.Sprintf("%s: %s", optionOf(p.Param), p.Msg)
		}
	}
	return fmt.Errorf("%s (refused by the PVE %d API schema before anything was sent)", strings.Join(parts, "; "), e.Version)
}

// SendChecked checks req against PVE major's API schema, then Sends it.
// A request the schema refuses is never sent: the refusal comes back as
// ansible.NothingChanged, worded by explain (nil: as apischema words it),
// so that a module can name its own options for the refused keys.
func SendChecked(ctx context.Context, r *ansible.Run, c *pveapi.Client, major int, req apischema.Request, w pveapi.Write, taskType string, explain func(error) error) (*pveapi.TaskResult, []string, error) {
	if err := req.Validate(major); err != nil {
		if explain != nil {
			err = explain(err)
		}
		return nil, nil, ansible.NothingChanged(err)
	}
	return Send(ctx, r, c, req, w, taskType)
}

// Send dispatches the schema-checked request req once (Dispatch), w
// carrying what the request does not say: what it does in words, how a
// read settles a lost answer, and for a create its proof. The task PVE
// starts is followed at the node and with the types req's hint names,
// narrowed to taskType when the caller knows which of them PVE picks
// (hastart for an HA guest). A failed task's log is returned with the
// error, for the result.
func Send(ctx context.Context, r *ansible.Run, c *pveapi.Client, req apischema.Request, w pveapi.Write, taskType string) (*pveapi.TaskResult, []string, error) {
	w.Method, w.Path, w.Params = req.Method, req.Path, req.Params
	if w.Needs == "" {
		w.Needs = req.Needs
	}
	if h := req.Task; h != nil && len(h.Types) > 0 {
		types := append([]string(nil), h.Types...)
		if taskType != "" {
			types = []string{taskType}
		}
		w.Task = &pveapi.TaskWrite{Node: h.Node, Types: types, ID: h.ID}
	}
	out, err := Dispatch(ctx, r, c, w)
	var log []string
	var te *pveapi.TaskError
	if errors.As(err, &te) {
		log = te.Log
	}
	if out != nil {
		return out.Task, log, err
	}
	return nil, log, err
}
