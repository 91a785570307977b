package ansible

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// TimeoutOption is the option the runtime gives every module: the deadline
// of the whole task, in seconds. Modules must not declare it themselves.
const TimeoutOption = "timeout"

// runtimeOptions are the options every module has without declaring them.
// Decode does not hand them to the module.
func (m *Module) runtimeOptions() map[string]Option {
	def := "no deadline"
	if m.Timeout > 0 {
		def = fmt.Sprintf("%g (%s)", m.Timeout.Seconds(), m.Timeout)
	}
	opts := map[string]Option{
		TimeoutOption: {Type: TypeFloat, Description: []string{
			"Deadline of the whole task in seconds; default " + def + ". 0 means no deadline.",
			"At the deadline a running command is sent SIGTERM (to its whole process group) and, if it has not exited after a grace period, SIGKILL; the task then fails naming the step it was in.",
			"APT/dpkg transactions (package installs and upgrades) are never interrupted by the deadline: they run to completion, and the task fails afterwards naming the step, so the package database is never left half-configured.",
		}},
	}
	if m.CreatedEarlier {
		opts[CreatedEarlierOption] = createdEarlierOption()
	}
	return opts
}

// RuntimeOptionNames are the names of the options the runtime gives m
// (timeout; created_earlier with Module.CreatedEarlier), sorted: what a
// role must pass through besides the module's own spec.
func (m *Module) RuntimeOptionNames() []string {
	return slices.Sorted(maps.Keys(m.runtimeOptions()))
}

// fullSpec is the module's spec plus the runtime's options: what arguments
// are validated against and what the documentation shows.
func (m *Module) fullSpec() Spec {
	s := m.Spec
	s.Options = maps.Clone(m.Spec.Options)
	if s.Options == nil {
		s.Options = map[string]Option{}
	}
	for k, o := range m.runtimeOptions() {
		if _, clash := s.Options[k]; !clash { // Check reports the clash
			s.Options[k] = o
		}
	}
	if m.CreatedEarlier {
		// One text in every module that assumes: documented once, as
		// plugins/doc_fragments/created_earlier.py.
		s.Fragments = append(slices.Clone(m.Spec.Fragments), createdEarlierFragment())
	}
	return s
}

// DocFragments are the fragments the module's docs extend: its spec's
// and the runtime's (created_earlier).
func (m *Module) DocFragments() []DocFragment { return m.fullSpec().Fragments }

// deadline is the task's timeout: the timeout option when given, else the
// module's default. ok is false when the run has no deadline.
func (m *Module) deadline(params map[string]any) (time.Duration, bool) {
	if f, ok := pyNumber(params[TimeoutOption]); ok {
		if f <= 0 {
			return 0, false
		}
		return time.Duration(f * float64(time.Second)), true
	}
	return m.Timeout, m.Timeout > 0
}

type runKey struct{}

// Uninterruptible runs fn to completion whatever the task's deadline: fn's
// context is not cancelled by it, and the watchdog waits for fn to return
// before reporting a timeout. It is for operations that must never be cut
// short (an APT/dpkg transaction: dpkg killed mid-way leaves packages
// half-configured). If the deadline passed while fn ran, the error returned
// says so (wrapping context.DeadlineExceeded), so the driver fails the task
// naming the step; fn's own error wins when it has one.
//
// ctx must be (derived from) a context the driver handed to a stage, Apply
// or Verify; with any other context fn simply runs detached from it.
func Uninterruptible(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	if r, ok := ctx.Value(runKey{}).(*Run); ok {
		r.mu.Lock()
		r.critical++
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			r.critical--
			r.criticalEnd = time.Now()
			r.mu.Unlock()
		}()
	}
	start := time.Now()
	err := fn(context.WithoutCancel(ctx))
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("%s was left to finish (took %s, never interrupted) but the deadline passed meanwhile: %w", what, time.Since(start).Round(time.Second), ctx.Err())
	}
	return err
}

// criticalWait is how much longer the watchdog must wait before it may
// report a timeout: a whole grace while an Uninterruptible section runs,
// and what is left of a grace counted from the end of the last one, so a
// module whose transaction ends just before the watchdog looks still gets
// the time to return on its own (0: none).
func (r *Run) criticalWait(grace time.Duration) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.critical > 0 {
		return grace
	}
	return max(0, grace-time.Since(r.criticalEnd)) // never a section: long ago
}
