package host

import (
	"context"
	"errors"
	"sync"
)

// Memo remembers the answers of read-only commands for one run, so a run
// that changes nothing asks the node each fact once: a module's plan and
// its report read the same things, and every command on a node costs a
// process start (issue 24 §3: a no-op pve_zfs run went from 13 commands to
// the few distinct ones). Reads are made through Runner.
//
// The promise of the project is that what a task reports was read back
// from the node after it changed anything, so the memo only serves the
// reads made before the first change: Stop, which a module calls before any
// Apply, empties it and turns it off for good. Every read after that,
// Verify's and the final report's, runs on the node. A command through
// Runner that is not read-only (ReadOnlyCommand) stops the memo too, before
// it runs, so a write that bypassed the module's own Stop still cannot
// leave an answer behind that it made stale.
type Memo struct {
	mu      sync.Mutex
	stopped bool
	answers map[string]memoAnswer
}

type memoAnswer struct {
	res Result
	err error
}

// NewMemo returns an empty, running memo.
func NewMemo() *Memo { return &Memo{answers: map[string]memoAnswer{}} }

// Stop forgets every answer and makes every later read go to the node.
// It is final: a memo that could restart after a change would hand Verify
// an answer read before that change.
func (m *Memo) Stop() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopped = true
	m.answers = nil
}

// Runner returns inner with its read-only commands answered by the memo
// (inner itself when m is nil). Its Log is inner's.
func (m *Memo) Runner(inner Runner) Runner {
	if m == nil {
		return inner
	}
	return memoRunner{m: m, inner: inner}
}

type memoRunner struct {
	m     *Memo
	inner Runner
}

func (r memoRunner) Run(ctx context.Context, cmd Command) (Result, error) {
	if !ReadOnlyCommand(cmd) {
		r.m.Stop()
		return r.inner.Run(ctx, cmd)
	}
	if cmd.Stdin != nil || len(cmd.Env) > 0 {
		// the key is the command line: input or an environment would
		// make two different reads look the same
		return r.inner.Run(ctx, cmd)
	}
	return r.m.run(ctx, r.inner, cmd)
}

func (r memoRunner) Log() []Result {
	if l, ok := r.inner.(Logger); ok {
		return l.Log()
	}
	return nil
}

// run answers cmd from the memo, or runs it and remembers what the node
// said. Only real answers are kept (success, or an exit code the command
// chose, such as "no such pool"); a command that could not start, was
// killed, or ran out of time is never remembered. Reads of different
// commands may run at the same time (a module's prefetch).
func (m *Memo) run(ctx context.Context, r Runner, cmd Command) (Result, error) {
	key := cmd.String()
	m.mu.Lock()
	a, ok := m.answers[key]
	stopped := m.stopped
	m.mu.Unlock()
	if ok {
		return a.res, a.err
	}
	res, err := r.Run(ctx, cmd)
	if stopped || ctx.Err() != nil || !answered(res, err) {
		return res, err
	}
	m.mu.Lock()
	if !m.stopped { // Stop may have come while the command ran
		m.answers[key] = memoAnswer{res, err}
	}
	m.mu.Unlock()
	return res, err
}

// answered tells whether the command ran to an exit of its own.
func answered(res Result, err error) bool {
	if err == nil {
		return true
	}
	var ce *CommandError
	return errors.As(err, &ce) && res.ExitCode >= 0 && res.Signal == ""
}
