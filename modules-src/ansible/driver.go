package ansible

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/go-viper/mapstructure/v2"

	"github.com/gopve/proxmox/modules-src/internal/cost"
	"github.com/gopve/proxmox/modules-src/internal/writes"
)

// reservedKeys are the result keys the runtime owns.
var reservedKeys = map[string]bool{
	"changed": true, "failed": true, "diff": true, "invocation": true, "warnings": true,
	"deprecations": true, "changes": true, "skipped": true, "exception": true,
	"changes_verified": true, "changes_unverified": true, "changes_not_run": true, "not_yet": true,
	costKey: true,
}

// costKey is the result key of the run's cost at -vvv (internal/cost):
// processes started, API requests sent, connections opened.
const costKey = "gopve_cost"

func reservedKey(k string) bool { return reservedKeys[k] || strings.HasPrefix(k, "_ansible_") }

// newRun validates the invocation and prepares a Run. If validation fails,
// the returned result is the final (failed) result and the Run is nil.
func newRun(parent context.Context, m *Module, inv *Invocation, env Env, stderr io.Writer) (*Run, context.CancelFunc, map[string]any) {
	params := deepCopy(inv.Params).(map[string]any)
	v := validateParams(m.fullSpec(), params, env, inv.IgnoreUnknownOpts)
	r := &Run{
		module:  m,
		inv:     inv,
		params:  params,
		result:  map[string]any{},
		secrets: newSecretSet(),
		stderr:  stderr,
		world:   newWorld(),
		writes:  &writes.Counter{},
		cost:    &cost.Counter{},
	}
	for _, s := range v.secrets {
		r.secrets.add(s)
	}
	r.warnings = append(r.warnings, v.warnings...)
	if len(v.errors) > 0 {
		msg := v.errors[0]
		if rest, ok := strings.CutPrefix(msg, unsupportedPrefix); ok {
			msg = fmt.Sprintf("Unsupported parameters for (%s) module: %s", m.Name, rest)
		}
		return nil, func() {}, r.buildResult(errors.New(msg))
	}
	if f, ok := pyNumber(params[TimeoutOption]); ok && f < 0 {
		return nil, func() {}, r.buildResult(fmt.Errorf("timeout: %v is negative; give the task's deadline in seconds, or 0 for none", params[TimeoutOption]))
	}
	if err := checkStorageTypes(params); err != nil {
		return nil, func() {}, r.buildResult(err)
	}
	parent = context.WithValue(parent, runKey{}, r)
	// Every write pveapi or host sends under the run's context is noted
	// here (issue 23 §2): the Apply that sent one cannot end "nothing
	// changed".
	parent = writes.With(parent, r.writes)
	parent = cost.With(parent, r.cost)
	var cancel context.CancelFunc
	if timeout, ok := m.deadline(params); ok {
		r.timeout = timeout
		r.ctx, cancel = context.WithTimeout(parent, timeout)
	} else {
		r.ctx, cancel = context.WithCancel(parent)
	}
	return r, cancel, nil
}

func execute(ctx context.Context, m *Module, inv *Invocation, env Env, stderr io.Writer) map[string]any {
	r, cancel, res := newRun(ctx, m, inv, env, stderr)
	defer cancel()
	if res != nil {
		return res
	}
	return r.runModule()
}

// runModule calls the module, turning a panic into a failure whose message
// carries the panic value (the stack goes to stderr only).
func (r *Run) runModule() (res map[string]any) {
	defer func() {
		if p := recover(); p != nil {
			r.logf("panic in module %s: %v\n%s", r.module.Name, p, debug.Stack())
			res = r.buildResult(fmt.Errorf("module %s crashed (panic: %v) while %s; this is a bug in gopve, please report it with the task's stderr", r.module.Name, p, r.currentStep()))
		}
	}()
	if r.module.Run == nil {
		return r.buildResult(fmt.Errorf("module %s has no code (Module.Run is nil); this is a bug in gopve", r.module.Name))
	}
	err := r.module.Run(r)
	r.mu.Lock()
	if err == nil {
		err = r.failure // a stage failed but the module did not return it
	}
	r.mu.Unlock()
	if err != nil && r.ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
		err = r.timeoutError(err)
	}
	return r.buildResult(err)
}

func (r *Run) timeoutError(cause error) error {
	msg := fmt.Sprintf("timed out after %s while %s", r.timeout, r.currentStep())
	if cause != nil && cause.Error() != context.DeadlineExceeded.Error() {
		msg += ": " + cause.Error()
	}
	return errors.New(msg)
}

func (r *Run) currentStep() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.step == "" {
		return "starting"
	}
	return r.step
}

func (r *Run) stage(name string, plan StageFunc) error {
	r.mu.Lock()
	if r.failure != nil {
		defer r.mu.Unlock()
		return r.failure
	}
	r.mu.Unlock()

	fail := func(err error) error {
		if r.ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
			err = r.timeoutError(err)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.failure == nil {
			r.failure = err
		}
		return r.failure
	}
	if err := r.ctx.Err(); err != nil {
		return fail(r.timeoutError(err))
	}

	r.Step("observing (" + name + ")")
	changes, err := plan(r.ctx, r.world)
	if err != nil {
		return fail(err)
	}
	if err := r.checkChanges(name, changes); err != nil {
		return fail(err)
	}
	first := r.record(changes)
	if r.inv.CheckMode {
		for i, c := range changes {
			if c.Predict != nil {
				c.Predict(r.world)
			}
			r.askPending(first+i, c)
		}
		r.setStatus(first, len(changes), statusPlanned)
		return nil
	}
	for i, c := range changes {
		r.Step("applying " + c.Summary)
		// From the call on, the change counts as made (also for a watchdog
		// reporting while Apply still runs) until Verify proves it, or
		// Apply declares it left nothing behind.
		r.setStatus(first+i, 1, statusUnverified)
		before := r.writes.Count()
		applyErr := c.Apply(r.ctx)
		if applyErr != nil && IsNothingChanged(applyErr) {
			if sent := r.writes.Since(before); len(sent) > 0 {
				// The runtime's rule, not the module's: a write went out,
				// so "nothing changed" is a claim no read can prove.
				return fail(sentAnyway(c.Summary, applyErr, sent))
			}
			r.setStatus(first+i, 1, statusNotRun)
			return fail(fmt.Errorf("could not %s (nothing was changed): %w", c.Summary, applyErr))
		}
		if applyErr != nil {
			if r.ctx.Err() != nil && errors.Is(applyErr, context.DeadlineExceeded) {
				return fail(r.timeoutError(applyErr)) // the step already names the change
			}
			return fail(fmt.Errorf("could not %s: %w", c.Summary, applyErr))
		}
		r.Step("verifying " + c.Summary)
		if err := c.Verify(r.ctx); err != nil {
			return fail(fmt.Errorf("applied %q, but reading it back does not show the promised state: %w", c.Summary, err))
		}
		r.setStatus(first+i, 1, statusVerified)
		r.askPending(first+i, c)
	}
	return nil
}

// sentAnyway is an Apply that declared NothingChanged after the write
// layers noted writes it sent: the change stays made, unverified, and the
// message says why (the error is not a NothingChanged any more).
func sentAnyway(summary string, err error, sent []string) error {
	what := fmt.Sprintf("%d writes had been sent (%s)", len(sent), strings.Join(sent, "; "))
	if len(sent) == 1 {
		what = fmt.Sprintf("a write had been sent (%s)", sent[0])
	}
	return fmt.Errorf("could not %s: %v; %s before this failure, so the change is not reported as \"nothing was changed\" whatever the failure says: it counts as made, unverified", summary, err, what)
}

// askPending records what a proved (or, in check mode, predicted) change
// leaves pending, and warns about it once.
func (r *Run) askPending(i int, c Change) {
	if c.Pending == nil {
		return
	}
	parts, until := c.Pending()
	if len(parts) == 0 {
		return
	}
	if until == "" {
		until = "a later event"
	}
	r.mu.Lock()
	r.changes[i].waiting, r.changes[i].until = append([]string(nil), parts...), until
	r.mu.Unlock()
	verb := "is written but not in force"
	if r.inv.CheckMode {
		verb = "would be written but not in force"
	}
	r.Warn(fmt.Sprintf("%s: %s %s until %s; it is pending, not applied", c.Summary, strings.Join(parts, ", "), verb, until))
}

// pendingNote is how a change's pending parts read after its summary.
func pendingNote(c changeRecord) string {
	if len(c.waiting) == 0 {
		return ""
	}
	return fmt.Sprintf(" (pending until %s: %s)", c.until, strings.Join(c.waiting, ", "))
}

// record adds planned changes (not run yet) and returns the index of the
// first one.
func (r *Run) record(changes []Change) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	first := len(r.changes)
	for _, c := range changes {
		r.changes = append(r.changes, changeRecord{Change: c, status: statusNotRun})
	}
	return first
}

func (r *Run) setStatus(from, n int, s changeStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := from; i < from+n; i++ {
		r.changes[i].status = s
	}
}

// checkChanges rejects changes a module should never produce: they are
// bugs, reported as such rather than run.
func (r *Run) checkChanges(stage string, changes []Change) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for _, c := range r.changes {
		seen[c.ID] = true
	}
	for _, c := range changes {
		var problem string
		switch {
		case c.ID == "":
			problem = "has no ID"
		case seen[c.ID]:
			problem = "has an ID already used in this run"
		case c.Summary == "":
			problem = "has no Summary"
		case c.predictedOnly && !r.inv.CheckMode:
			problem = "exists only as a prediction of check mode (PredictedOnly) but this is a real run, where nothing was predicted; it was not applied"
		case c.predictedOnly && (c.Apply != nil || c.Verify != nil):
			problem = "is PredictedOnly but has an Apply or Verify"
		case c.predictedOnly:
		case c.Apply == nil:
			problem = "has no Apply"
		case c.Verify == nil:
			problem = "has no Verify (a change that cannot be read back cannot be reported as done)"
		}
		if problem != "" {
			return fmt.Errorf("stage %s planned change %q that %s; this is a bug in gopve module %s", stage, c.ID, problem, r.module.Name)
		}
		seen[c.ID] = true
	}
	return nil
}

// made returns the changes that count for `changed` and `changes`: planned
// ones in check mode, those whose Apply was called (verified or not) in a
// real run. Caller holds r.mu.
func (r *Run) made() []changeRecord {
	var out []changeRecord
	for _, c := range r.changes {
		switch c.status {
		case statusPlanned, statusVerified, statusUnverified:
			out = append(out, c)
		}
	}
	return out
}

// summaries returns the summaries of the changes with status s, never nil.
// Caller holds r.mu.
func (r *Run) summaries(s changeStatus) []any {
	out := []any{}
	for _, c := range r.changes {
		if c.status == s {
			out = append(out, c.Summary)
		}
	}
	return out
}

// buildResult assembles the result object: module data, then the keys the
// runtime owns, then masking. err nil means success.
func (r *Run) buildResult(failure error) map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := map[string]any{}
	for k, v := range r.result {
		res[k] = v
	}
	made := r.made()
	changes := make([]any, 0, len(made))
	var diffs []any
	for _, c := range made {
		changes = append(changes, c.Summary)
		if c.Diff != nil {
			d := c.Diff
			if note := pendingNote(c); note != "" {
				dd := *d // the module's diff is left as it is
				dd.AfterHeader += note
				d = &dd
			}
			diffs = append(diffs, d)
		}
	}
	res["changed"] = len(made) > 0
	res["changes"] = changes
	if r.inv.Diff && len(diffs) > 0 {
		res["diff"] = diffs
	}
	if len(r.warnings) > 0 {
		res["warnings"] = append([]string(nil), r.warnings...)
	}
	if len(r.notYet) > 0 {
		res["not_yet"] = r.notYetResult()
	}
	if r.inv.Verbosity >= 3 {
		c := r.cost.Read()
		res[costKey] = map[string]any{"processes": c.Processes, "api_requests": c.APIRequests, "connections": c.Connections}
	}
	if len(r.deprecs) > 0 {
		res["deprecations"] = append([]map[string]any(nil), r.deprecs...)
	}
	if failure != nil {
		res["failed"] = true
		res["msg"] = failure.Error()
		if !r.inv.CheckMode {
			res["changes_verified"] = r.summaries(statusVerified)
			res["changes_unverified"] = r.summaries(statusUnverified)
			res["changes_not_run"] = r.summaries(statusNotRun)
		}
	} else if _, ok := res["msg"]; !ok {
		res["msg"] = r.defaultMsg(made)
	}

	secrets := r.secrets.list()
	var encErr error
	normalized, encErr := toJSONShape(res)
	if encErr != nil {
		normalized = map[string]any{
			"failed":  true,
			"changed": len(made) > 0,
			"changes": changes,
			"msg":     fmt.Sprintf("module %s returned data that cannot be sent to Ansible as JSON (%v); this is a bug in gopve", r.module.Name, encErr),
		}
	}
	out := maskValue(normalized, secrets, reservedOrKnown).(map[string]any)
	for k, v := range r.revealed {
		out[k] = v
	}
	if r.inv.InjectInvocation == nil || *r.inv.InjectInvocation {
		args, err := toJSONShape(r.params)
		if err != nil {
			args = map[string]any{}
		}
		out["invocation"] = map[string]any{"module_args": maskValue(args, secrets, nil)}
	}
	return out
}

// reservedOrKnown are top-level keys masking must not rename.
var reservedOrKnown = map[string]bool{
	"changed": true, "failed": true, "diff": true, "invocation": true, "warnings": true,
	"deprecations": true, "changes": true, "skipped": true, "exception": true, "msg": true,
	"changes_verified": true, "changes_unverified": true, "changes_not_run": true, "not_yet": true,
	costKey: true,
}

// defaultMsg says what the run did, naming every change, so that a task's
// one-line output answers "what changed?" without -v (the `changes` key holds
// the same summaries as a list).
//
// Only what is in force is called applied: a change with pending parts
// (Change.Pending) is listed with them, and the verb says some of it waits.
func (r *Run) defaultMsg(made []changeRecord) string {
	n := len(made)
	if n == 0 {
		return "nothing to change"
	}
	what := "change"
	if n > 1 {
		what = "changes"
	}
	summaries := make([]string, n)
	pending := false
	for i, c := range made {
		summaries[i] = c.Summary + pendingNote(c)
		pending = pending || len(c.waiting) > 0
	}
	verb := "applied and verified"
	switch {
	case r.inv.CheckMode && pending:
		verb = "would be made (check mode), not all of it in force at once"
	case r.inv.CheckMode:
		verb = "would be made (check mode)"
	case pending:
		verb = "written and verified, not all of it in force yet"
	}
	return fmt.Sprintf("%d %s %s: %s", n, what, verb, strings.Join(summaries, "; "))
}

// toJSONShape round-trips v through encoding/json so that module data of
// any Go type (structs, typed slices) becomes the runtime's value shapes,
// which masking can walk.
func toJSONShape(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out, err := decodeJSONValue(data)
	if err != nil {
		return nil, err
	}
	m, ok := out.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("result is a JSON %s, not an object", jsonKind(out))
	}
	return m, nil
}

func decodeParams(params map[string]any, out any) error {
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		TagName: "ansible",
		Result:  out,
		// Values the spec typed are already coerced; weak typing only
		// matters inside raw/dict values (e.g. {a: 1} into map[string]string).
		WeaklyTypedInput: true,
		Squash:           true,
	})
	if err != nil {
		return fmt.Errorf("internal error preparing to decode parameters: %w", err)
	}
	if err := dec.Decode(params); err != nil {
		return fmt.Errorf("could not decode the module parameters: %w", err)
	}
	return nil
}

func (r *Run) logf(format string, args ...any) {
	if r.stderr == nil {
		return
	}
	line := r.secrets.maskString(fmt.Sprintf(format, args...))
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.stderr, "[%s] %s\n", r.module.Name, strings.TrimRight(line, "\n"))
}
