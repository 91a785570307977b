package ansible

import (
	"context"
	"github.com/gopve/proxmox/modules-src/internal/cost"
	"github.com/gopve/proxmox/modules-src/internal/writes"
	"io"
	"sync"
	"time"
)

// Run is what a module sees of one invocation: its parameters, the modes
// Ansible asked for, and the ways to report back.
// Its methods are safe for concurrent use.
type Run struct {
	ctx    context.Context
	module *Module
	inv    *Invocation
	params map[string]any

	mu       sync.Mutex
	step     string
	result   map[string]any
	warnings []string
	notYet   []Prerequisite // check mode: prerequisites assumed made by earlier tasks (NotYet)
	deprecs  []map[string]any
	secrets  *secretSet
	revealed map[string]string // result keys that carry a secret on purpose (SetRevealed)
	changes  []changeRecord    // every planned change, in order, with what became of it
	world    *World            // predictions of planned changes (check mode)
	failure  error             // first stage failure; sticks
	stderr   io.Writer
	timeout  time.Duration
	critical int // Uninterruptible sections running now
	// criticalEnd is when the last Uninterruptible section ended: the
	// watchdog's grace starts again from it (criticalWait).
	criticalEnd time.Time
	// writes counts the writes pveapi and host send under ctx (issue 23
	// §2); stage compares it around each Apply.
	writes *writes.Counter
	// cost counts the processes and API requests of the run (issue 24 §3),
	// reported at -vvv.
	cost *cost.Counter
}

// changeStatus is what became of a planned change.
type changeStatus int

const (
	statusNotRun     changeStatus = iota // planned, Apply not called (or it changed nothing)
	statusPlanned                        // check mode: would be made
	statusUnverified                     // Apply called; not (yet) read back as promised
	statusVerified                       // applied and read back
)

type changeRecord struct {
	Change
	status changeStatus
	// waiting are the parts Change.Pending named, and until what.
	waiting []string
	until   string
}

// Context is the run's context; it carries the module deadline.
func (r *Run) Context() context.Context { return r.ctx }

// CheckMode reports whether Ansible runs the task with --check.
func (r *Run) CheckMode() bool { return r.inv.CheckMode }

// DiffMode reports whether Ansible runs the task with --diff.
func (r *Run) DiffMode() bool { return r.inv.Diff }

// Verbosity is the number of -v flags.
func (r *Run) Verbosity() int { return r.inv.Verbosity }

// AnsibleVersion is the controller's ansible-core version ("2.14.18").
func (r *Run) AnsibleVersion() string { return r.inv.AnsibleVersion }

// ModuleName is the module name being run (short form, e.g. "pve_base").
func (r *Run) ModuleName() string { return r.module.Name }

// Params returns a copy of the validated parameters (with defaults), keyed
// by canonical option name.
func (r *Run) Params() map[string]any { return deepCopy(r.params).(map[string]any) }

// Decode stores the validated parameters into out (a pointer to a struct)
// using mapstructure with the struct tag `ansible`, e.g.
//
//	type params struct {
//	    Name  string            `ansible:"name"`
//	    Count *int              `ansible:"count"` // nil when not set and no default
//	    Disks []disk            `ansible:"disks"`
//	    Extra map[string]string `ansible:"labels"`
//	}
//
// The struct must match the spec both ways (every option has a field, every
// tagged field an option; sub-options of struct-typed fields too), else
// Decode fails as a bug. The runtime's own options (timeout) are not
// decoded.
func (r *Run) Decode(out any) error { return r.decodeChecked(out) }

// Warn adds a warning to the result (shown as [WARNING] by Ansible).
func (r *Run) Warn(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, msg)
}

// Deprecate adds a deprecation notice, removed in collection version version.
func (r *Run) Deprecate(msg, version string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deprecs = append(r.deprecs, map[string]any{"msg": msg, "version": version, "collection_name": "gopve.proxmox"})
}

// Log writes a line to stderr when Ansible runs with at least level -v
// flags. Secrets are masked. Ansible shows stderr only when a module fails.
func (r *Run) Log(level int, format string, args ...any) {
	if r.inv.Verbosity < level {
		return
	}
	r.logf(format, args...)
}

// AddSecret registers a value learnt at run time (e.g. a token read from a
// file) that must be masked like a no_log parameter.
func (r *Run) AddSecret(s string) { r.secrets.add(s) }

// Set adds a module-specific key to the result. Keys the runtime owns
// (changed, failed, diff, invocation, warnings, deprecations, changes,
// skipped, exception and any `_ansible_*` key) are rejected with a panic,
// which fails the task: that is a bug in the module. "msg" may be set.
func (r *Run) Set(key string, value any) {
	if reservedKey(key) {
		panic("ansible: module tried to set reserved result key " + key)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.result[key] = value
}

// SetRevealed returns to the user a secret the module obtained at run time
// (a key the server generated, that exists nowhere else the user can
// read). Only a task with no_log gets it, unmasked, under key only: for
// any other, Ansible prints the module's raw output at -vvv and its result
// at -v, before anything could hide it, so key holds the no_log
// placeholder. Either way the value is masked like a no_log value
// everywhere else (logs, msg, warnings, diff, other keys). It reports
// whether the value was returned, so the module can tell the user where
// else to find it.
func (r *Run) SetRevealed(key, value string) bool {
	if reservedKey(key) {
		panic("ansible: module tried to set reserved result key " + key)
	}
	r.secrets.add(value)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.revealed == nil {
		r.revealed = map[string]string{}
	}
	if !r.inv.NoLog {
		r.revealed[key] = noLogPlaceholder
		return false
	}
	r.revealed[key] = value
	return true
}

// Step names what the module is doing now, for timeout messages
// ("timed out after 30s while <step>"). The driver sets it itself around
// stages and changes.
func (r *Run) Step(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.step = name
}

// Stage runs one observe+plan stage and then, in a real run, applies and
// verifies each planned change in order; in check mode it calls each
// change's Predict instead, so later stages see the predicted World. It
// returns the first error (planning, apply or verify), which the module
// should return. After a failure the run is failed for good.
func (r *Run) Stage(name string, plan StageFunc) error { return r.stage(name, plan) }

// Changes returns the changes made so far (Apply called, verified or not)
// in a real run, the planned ones in check mode.
func (r *Run) Changes() []Change {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Change
	for _, c := range r.made() {
		out = append(out, c.Change)
	}
	return out
}

// World is the run's predicted world (see World): empty in a real run.
func (r *Run) World() *World { return r.world }
