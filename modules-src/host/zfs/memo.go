package zfs

import (
	"context"
	"errors"
	"sync"

	"github.com/gopve/proxmox/modules-src/host"
)

// Memo remembers the answers of a Client's read commands for one run, so a
// run that changes nothing asks the node each fact once: its plan and its
// report read the same pool, status and properties, and every command on a
// node costs a process start (a no-op pve_zfs run went from 13 commands to
// the few distinct ones).
//
// The promise of the project is that what a task reports was read back
// from the node after it changed anything, so the memo only serves the
// reads made before the first change: Stop, which a module calls before any
// Apply, empties it and turns it off for good. Every read after that,
// Verify's and the final report's, runs on the node.
type Memo struct {
	mu      sync.Mutex
	stopped bool
	answers map[string]memoAnswer
}

type memoAnswer struct {
	res host.Result
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

// run answers cmd from the memo, or runs it and remembers what the node
// said. Only real answers are kept (success, or an exit code the command
// chose, such as "no such pool"); a command that could not start, was
// killed, or ran out of time is never remembered.
func (m *Memo) run(ctx context.Context, r host.Runner, cmd host.Command) (host.Result, error) {
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
func answered(res host.Result, err error) bool {
	if err == nil {
		return true
	}
	var ce *host.CommandError
	return errors.As(err, &ce) && res.ExitCode >= 0 && res.Signal == ""
}
