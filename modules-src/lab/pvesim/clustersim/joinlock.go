package clustersim

import (
	"sync"
	"time"
)

// joinLocks are the locks a join takes (C4): the joiner's own
// /var/lock/pvecm.lock ("local:<node>") and, on the member, pvecm.lock with
// the corosync.conf cfs lock (ClusterConfig.pm config_change_lock around
// addnode), by the cluster's DB ID. Only joins take them, so they are this
// backend's, not core's.
type joinLocks struct {
	mu sync.Mutex
	m  map[string]*sync.Mutex
}

// joinLock returns the named lock.
func (s *backend) joinLock(key string) *sync.Mutex {
	s.joins.mu.Lock()
	defer s.joins.mu.Unlock()
	if s.joins.m[key] == nil {
		s.joins.m[key] = &sync.Mutex{}
	}
	return s.joins.m[key]
}

// lockWithTimeout tries to take m within d.
func (s *backend) lockWithTimeout(m *sync.Mutex, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if m.TryLock() {
			return true
		}
		if time.Now().After(deadline) || !s.Sleep(20*time.Millisecond) {
			return false
		}
	}
}
