package core

import (
	"errors"
	"time"
)

// Work on a node is serialised by flocks, as PVE does (a guest's config
// lock, /var/lock/qemu-server/lock-<vmid>.conf, is pvesim/guests'; a
// storage's allocation lock is pvesim/volumes'; storage.cfg's cfs lock is
// a key of the same table). The table is pvesim/flocktable's (Sim.Flocks,
// under Mu); core keeps the wait, which needs the Sim: a task worker's
// (Acquire) and the router's for a synchronous handler (runHandlerLocked,
// LockWait).

// Acquire waits up to d for a lock without holding s.Mu (task workers).
// It reports false on timeout or when the simulator closes.
func (s *Sim) Acquire(key string, shared bool, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		s.Mu.Lock()
		ok := s.Flocks.TryLock(key, shared)
		s.Mu.Unlock()
		if ok {
			return true
		}
		if time.Now().After(deadline) || !s.Sleep(10*time.Millisecond) {
			return false
		}
	}
}

// Release releases a lock Acquire took.
func (s *Sim) Release(key string, shared bool) {
	s.Mu.Lock()
	s.Flocks.Unlock(key, shared)
	s.Mu.Unlock()
}

// LockWait is what a synchronous handler returns when the lock it needs is
// busy: runHandlerLocked waits for it outside the state lock, then runs the
// handler again, or answers the timeout.
type LockWait struct {
	Key     string
	Timeout time.Duration
	Msg     string // the error after the timeout
}

func (e *LockWait) Error() string { return e.Msg }

// runHandlerLocked runs h; a handler that needs a busy flock is re-run once
// the lock is free, as a PVE worker blocks in flock (caller holds s.Mu).
func (s *Sim) runHandlerLocked(h Handler, rc *Req) (any, error) {
	var deadline time.Time
	for {
		data, err := h(rc)
		var lw *LockWait
		if !errors.As(err, &lw) {
			return data, err
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(lw.Timeout)
		}
		if time.Now().After(deadline) {
			return nil, ErrStatus(500, "%s", lw.Msg)
		}
		s.Mu.Unlock()
		alive := s.Sleep(10 * time.Millisecond)
		s.Mu.Lock()
		if !alive {
			return nil, ErrStatus(500, "%s", lw.Msg)
		}
	}
}
