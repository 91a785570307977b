package core

import (
	"fmt"
	"path"
	"strings"
	"sync"
	"time"
)

// FaultKind names what an injected fault does to a matching request.
type FaultKind string

// Fault kinds. Request-level kinds act before the request is handled; task
// kinds act on the task the request starts.
const (
	// FaultLatency delays the request by Delay, then handles it normally.
	FaultLatency FaultKind = "latency"
	// FaultError answers Status (default 500) with Message, PVE-style.
	FaultError FaultKind = "error"
	// FaultReset closes the TCP connection with a reset, no answer.
	FaultReset FaultKind = "reset"
	// FaultHang never answers until the client gives up or the lab closes.
	FaultHang FaultKind = "hang"
	// FaultLock answers 500 "can't lock file '<LockFile>' - got timeout"
	// after Delay (default: the lab's LockTimeout).
	FaultLock FaultKind = "lock"
	// FaultTaskFail lets the request start its task, which then ends with
	// ExitStatus ("WARNINGS: 2" still applies the change, as in PVE).
	FaultTaskFail FaultKind = "task-fail"
	// FaultSlowConfig lets the task end OK but applies its change Delay
	// later: the "config does not exist yet" window (K4).
	FaultSlowConfig FaultKind = "slow-config"
)

// Fault is one injected misbehaviour. Empty Node/Method match all; Path is
// a path.Match glob over the API path without /api2/json
// ("/cluster/config/join", "/nodes/*/tasks/*/status", "*" for any single
// segment, "/**" for everything). Count > 0 limits how often it fires.
type Fault struct {
	ID         int           `json:"id"`
	Node       string        `json:"node,omitempty"`
	Method     string        `json:"method,omitempty"`
	Path       string        `json:"path"`
	Kind       FaultKind     `json:"kind"`
	Delay      time.Duration `json:"delay,omitempty"`
	Status     int           `json:"status,omitempty"`
	Message    string        `json:"message,omitempty"`
	LockFile   string        `json:"lock_file,omitempty"`
	ExitStatus string        `json:"exitstatus,omitempty"`
	Count      int           `json:"count,omitempty"`
	Fired      int           `json:"fired"`
	// Before, when set (Go tests only: it is no part of the lab's JSON
	// control API), runs each time the fault fires, before its kind acts
	// and before the request is handled: what another client does just
	// then, e.g. a concurrent edit landing between a module's read and its
	// write (issue 23 §5). It may send requests to the lab itself.
	Before func() `json:"-"`
}

// Faults is the lab's fault table; safe for concurrent use.
type Faults struct {
	mu     sync.Mutex
	next   int
	faults []*Fault
}

func newFaults() *Faults { return &Faults{next: 1} }

// Add installs f and returns its id.
func (fs *Faults) Add(f Fault) (int, error) {
	switch f.Kind {
	case FaultLatency, FaultError, FaultReset, FaultHang, FaultLock, FaultTaskFail, FaultSlowConfig, FaultLostAnswer, FaultSlowLocked, FaultMigrateAbort, FaultMigrateProblems:
	case FaultFinishJoin:
		if f.Node == "" {
			return 0, fmt.Errorf("finish-join fault needs the joining node")
		}
		f.Path = "-" // not a request fault (join.go)
	default:
		return 0, fmt.Errorf("unknown fault kind %q (use latency, error, reset, hang, lock, task-fail, slow-config, lost-answer, slow-locked, migrate-abort, migrate-problems, finish-join)", f.Kind)
	}
	if f.Path == "" {
		return 0, fmt.Errorf("fault needs a path pattern such as /cluster/config/join or /**")
	}
	if _, err := path.Match(f.Path, "/"); err != nil {
		return 0, fmt.Errorf("fault path pattern %q: %w", f.Path, err)
	}
	if f.Kind == FaultTaskFail && f.ExitStatus == "" {
		return 0, fmt.Errorf("task-fail fault needs an exitstatus")
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f.ID, f.Fired = fs.next, 0
	fs.next++
	fs.faults = append(fs.faults, &f)
	return f.ID, nil
}

// Remove deletes one fault; Clear deletes all.
func (fs *Faults) Remove(id int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, f := range fs.faults {
		if f.ID == id {
			fs.faults = append(fs.faults[:i], fs.faults[i+1:]...)
			return
		}
	}
}

// Clear removes every fault.
func (fs *Faults) Clear() {
	fs.mu.Lock()
	fs.faults = nil
	fs.mu.Unlock()
}

// List returns a copy of the installed faults with their fire counts.
func (fs *Faults) List() []Fault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := make([]Fault, 0, len(fs.faults))
	for _, f := range fs.faults {
		out = append(out, *f)
	}
	return out
}

// take returns the first fault matching the request and counts it; an
// exhausted count-limited fault is dropped.
func (fs *Faults) take(node, method, p string) *Fault {
	return fs.takeFirst(func(f *Fault) bool {
		return (f.Node == "" || f.Node == node) &&
			f.Kind != FaultFinishJoin && // taken by the join itself (takeKind)
			(f.Method == "" || strings.EqualFold(f.Method, method)) &&
			matchPath(f.Path, p)
	})
}

// takeKind returns the first fault of kind for node and counts it, as take.
func (fs *Faults) takeKind(node string, kind FaultKind) *Fault {
	return fs.takeFirst(func(f *Fault) bool { return f.Kind == kind && f.Node == node })
}

// takeFirst fires the first fault match accepts: counts it, drops it once
// its count is used up, and returns a copy as it was when it fired.
func (fs *Faults) takeFirst(match func(*Fault) bool) *Fault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, f := range fs.faults {
		if !match(f) {
			continue
		}
		f.Fired++
		c := *f
		if f.Count > 0 && f.Fired >= f.Count {
			fs.faults = append(fs.faults[:i], fs.faults[i+1:]...)
		}
		return &c
	}
	return nil
}

func matchPath(pattern, p string) bool {
	if pattern == "/**" || pattern == "**" {
		return true
	}
	if prefix, ok := strings.CutSuffix(pattern, "/**"); ok {
		return p == prefix || strings.HasPrefix(p, prefix+"/")
	}
	ok, _ := path.Match(pattern, p)
	return ok
}

// FaultSlowLocked makes a handler slow inside its lock: the request is
// handled normally, but the work PVE does between taking the lock and
// writing the configuration takes Delay. Only POST /storage honours it
// today (pvesim/storagesim, storagecfglock.go): pve-storage
// src/PVE/API2/Storage/Config.pm create takes lock_storage_config, checks
// the ID is free, runs the plugin's on_add_hook (a PBS login, a CIFS
// credentials file) and activate_storage (the NFS or CIFS mount, which can
// take seconds on a slow server), and only then write_config — so a read during those seconds says "absent"
// although the create is under way, and a second create waits for the
// lock. Combined with a short client timeout it loses the answer of a
// create that then happens ("unanswered but done", issue 15 item 3).
const FaultSlowLocked FaultKind = "slow-locked"

// Migration faults: the qmigrate worker fails half-way, leaving what PVE
// leaves.
const (
	// FaultMigrateAbort: the worker copies the VM's local volumes to the
	// target, then fails with Message (default "storage migration failed")
	// and cleans up as QemuMigrate.pm phase1_cleanup does: the copies on
	// the target are freed, the migrate lock removed, the VM stays on its
	// node; the task ends "migration aborted".
	FaultMigrateAbort FaultKind = "migrate-abort"
	// FaultMigrateProblems: the VM is moved (its config is on the target),
	// then the source's cleanup fails with Message (phase3_cleanup sets
	// $self->{errors}): the task ends "migration problems", the VM is on
	// the target and its old volumes stay on the source.
	FaultMigrateProblems FaultKind = "migrate-problems"
)
