// Package flocktable is the simulator's table of flocks: which lock files
// (by key) are held, exclusively or shared, as the flock(2) calls of
// pve-common's PVE::Tools lock_file_full leave them (src/PVE/Tools.pm:
// LOCK_EX, or LOCK_SH when shared). A busy lock fails with lock_file_full's
// message after its timeout (ErrTimeout).
//
// The table only answers and records; it never waits and is not safe for
// concurrent use: pvesim/core holds it under the Sim's lock and does the
// wait (core.Sim.Acquire, a handler's LockWait), which needs the Sim.
// Locks are not persisted: like flocks they die with the simulator's
// "processes".
package flocktable

import "fmt"

// Table is the flocks held, by key; its zero value is empty and ready.
type Table struct {
	locks map[string]*flock
}

// flock is one lock: exclusive or shared by several holders.
type flock struct {
	excl   bool
	shared int
}

func (t *Table) of(key string) *flock {
	if t.locks == nil {
		t.locks = map[string]*flock{}
	}
	l := t.locks[key]
	if l == nil {
		l = &flock{}
		t.locks[key] = l
	}
	return l
}

// TryLock takes the lock if it is free (shared: free of an exclusive
// holder), as flock with LOCK_NB would.
func (t *Table) TryLock(key string, shared bool) bool {
	l := t.of(key)
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

// Unlock releases a lock TryLock took.
func (t *Table) Unlock(key string, shared bool) {
	l := t.of(key)
	if shared {
		if l.shared > 0 {
			l.shared--
		}
		return
	}
	l.excl = false
}

// HeldExclusive tells whether someone holds the lock exclusively
// (storage.cfg's cfs lock, which pvesim/storagesim waits for).
func (t *Table) HeldExclusive(key string) bool { return t.of(key).excl }

// ErrTimeout is lock_file_full's failure once its timeout passed.
func ErrTimeout(file string) error {
	return fmt.Errorf("can't lock file '%s' - got timeout", file)
}
