package core

import (
	"errors"
	"fmt"
	"time"
)

// Work on a node is serialised by flocks, as PVE does (a guest's config
// lock, /var/lock/qemu-server/lock-<vmid>.conf, is pvesim/guests'; a
// storage's allocation lock is pvesim/volumes'; storage.cfg's cfs lock is
// a key of the same table). Core keeps the lock table and the wait, which
// the router runs synchronous handlers through (runHandlerLocked, LockWait).
//
// A busy lock fails "can't lock file '<file>' - got timeout" (pve-common
// Tools.pm lock_file_full) after the wait. Locks are not persisted: like
// flocks they die with the simulator's "processes".

// guestLock is one flock: exclusive or shared by several holders.
type guestLock struct {
	excl   bool
	shared int
}

func (s *Sim) lockOf(key string) *guestLock {
	if s.guestLocks == nil {
		s.guestLocks = map[string]*guestLock{}
	}
	l := s.guestLocks[key]
	if l == nil {
		l = &guestLock{}
		s.guestLocks[key] = l
	}
	return l
}

// TryLockLocked takes the lock if it is free (shared: free of an exclusive
// holder). The caller holds s.Mu.
func (s *Sim) TryLockLocked(key string, shared bool) bool {
	l := s.lockOf(key)
	switch {
	case l.excl:
		return false
	case shared:
		l.shared++
		return true
	case l.shared > 0:
		return false
	}
	l.excl = true
	return true
}

// UnlockLocked releases a lock TryLockLocked took. The caller holds s.Mu.
func (s *Sim) UnlockLocked(key string, shared bool) {
	l := s.lockOf(key)
	if shared {
		if l.shared > 0 {
			l.shared--
		}
		return
	}
	l.excl = false
}

// HeldExclusiveLocked tells whether someone holds the lock exclusively
// (storage.cfg's cfs lock, which pvesim/storagesim waits for). The caller
// holds s.Mu.
func (s *Sim) HeldExclusiveLocked(key string) bool { return s.lockOf(key).excl }

// ErrLockTimeout is lock_file_full's failure.
func ErrLockTimeout(file string) error {
	return fmt.Errorf("can't lock file '%s' - got timeout", file)
}

// Acquire waits up to d for a lock without holding s.Mu (task workers).
// It reports false on timeout or when the simulator closes.
func (s *Sim) Acquire(key string, shared bool, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		s.Mu.Lock()
		ok := s.TryLockLocked(key, shared)
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
	s.UnlockLocked(key, shared)
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
