// Package faults is the lab's fault injection: the table of misbehaviours
// (Fault) a test installs, through the Go API or the control API, for the
// requests, tasks and joins they match. It is the lab's own, no PVE
// component: its kinds reproduce what real clusters do (a reset
// connection, a lock that times out, a task that fails, a config written
// late), and a kind that follows a PVE code path names it in its doc. The
// table only stores, matches and counts; pvesim/core fires the faults (its
// request pipeline, tasks and joins) and the backends act on a task's
// fault (core.Req.Fault).
package faults

import (
	"fmt"
	"path"
	"strings"
	"sync"
	"time"
)

// Kind names what an injected fault does to a matching request.
type Kind string

// Fault kinds. Request-level kinds act before the request is handled; task
// kinds act on the task the request starts.
const (
	// Latency delays the request by Delay, then handles it normally.
	Latency Kind = "latency"
	// Error answers Status (default 500) with Message, PVE-style.
	Error Kind = "error"
	// Reset closes the TCP connection with a reset, no answer.
	Reset Kind = "reset"
	// Hang never answers until the client gives up or the lab closes.
	Hang Kind = "hang"
	// Lock answers 500 "can't lock file '<LockFile>' - got timeout"
	// after Delay (default: the lab's LockTimeout).
	Lock Kind = "lock"
	// TaskFail lets the request start its task, which then ends with
	// ExitStatus ("WARNINGS: 2" still applies the change, as in PVE).
	TaskFail Kind = "task-fail"
	// SlowConfig lets the task end OK but applies its change Delay
	// later: the "config does not exist yet" window (K4).
	SlowConfig Kind = "slow-config"
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
	Kind       Kind          `json:"kind"`
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

// Table is the lab's fault table; safe for concurrent use.
type Table struct {
	mu     sync.Mutex
	next   int
	faults []*Fault
}

// New returns an empty table.
func New() *Table { return &Table{next: 1} }

// Add installs f and returns its id.
func (fs *Table) Add(f Fault) (int, error) {
	switch f.Kind {
	case Latency, Error, Reset, Hang, Lock, TaskFail, SlowConfig, LostAnswer, SlowLocked, MigrateAbort, MigrateProblems:
	case FinishJoin:
		if f.Node == "" {
			return 0, fmt.Errorf("finish-join fault needs the joining node")
		}
		f.Path = "-" // not a request fault (clustersim's join.go)
	default:
		return 0, fmt.Errorf("unknown fault kind %q (use latency, error, reset, hang, lock, task-fail, slow-config, lost-answer, slow-locked, migrate-abort, migrate-problems, finish-join)", f.Kind)
	}
	if f.Path == "" {
		return 0, fmt.Errorf("fault needs a path pattern such as /cluster/config/join or /**")
	}
	if _, err := path.Match(f.Path, "/"); err != nil {
		return 0, fmt.Errorf("fault path pattern %q: %w", f.Path, err)
	}
	if f.Kind == TaskFail && f.ExitStatus == "" {
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
func (fs *Table) Remove(id int) {
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
func (fs *Table) Clear() {
	fs.mu.Lock()
	fs.faults = nil
	fs.mu.Unlock()
}

// List returns a copy of the installed faults with their fire counts.
func (fs *Table) List() []Fault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := make([]Fault, 0, len(fs.faults))
	for _, f := range fs.faults {
		out = append(out, *f)
	}
	return out
}

// Take returns the first fault matching the request and counts it; an
// exhausted count-limited fault is dropped.
func (fs *Table) Take(node, method, p string) *Fault {
	return fs.takeFirst(func(f *Fault) bool {
		return (f.Node == "" || f.Node == node) &&
			f.Kind != FinishJoin && // taken by the join itself (TakeKind)
			(f.Method == "" || strings.EqualFold(f.Method, method)) &&
			matchPath(f.Path, p)
	})
}

// TakeKind returns the first fault of kind for node and counts it, as Take.
func (fs *Table) TakeKind(node string, kind Kind) *Fault {
	return fs.takeFirst(func(f *Fault) bool { return f.Kind == kind && f.Node == node })
}

// takeFirst fires the first fault match accepts: counts it, drops it once
// its count is used up, and returns a copy as it was when it fired.
func (fs *Table) takeFirst(match func(*Fault) bool) *Fault {
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

// SlowLocked makes a handler slow inside its lock: the request is
// handled normally, but the work PVE does between taking the lock and
// writing the configuration takes Delay. Only POST /storage honours it
// today (pvesim/storagesim, storagecfglock.go): pve-storage
// src/PVE/API2/Storage/Config.pm create takes lock_storage_config, checks
// the ID is free, runs the plugin's on_add_hook (a PBS login, a CIFS
// credentials file) and activate_storage (the NFS or CIFS mount, which can
// take seconds on a slow server), and only then write_config — so a read
// during those seconds says "absent" although the create is under way,
// and a second create waits for the lock. Combined with a short client timeout it loses the answer of a
// create that then happens ("unanswered but done", issue 15 item 3).
const SlowLocked Kind = "slow-locked"

// Migration faults: the qmigrate worker fails half-way, leaving what PVE
// leaves.
const (
	// MigrateAbort: the worker copies the VM's local volumes to the
	// target, then fails with Message (default "storage migration failed")
	// and cleans up as QemuMigrate.pm phase1_cleanup does: the copies on
	// the target are freed, the migrate lock removed, the VM stays on its
	// node; the task ends "migration aborted".
	MigrateAbort Kind = "migrate-abort"
	// MigrateProblems: the VM is moved (its config is on the target),
	// then the source's cleanup fails with Message (phase3_cleanup sets
	// $self->{errors}): the task ends "migration problems", the VM is on
	// the target and its old volumes stay on the source.
	MigrateProblems Kind = "migrate-problems"
)

// LostAnswer lets the request be handled completely (the change is
// made, or refused by the handler, and logged) and then resets the
// connection instead of answering, whatever the answer was (with Delay,
// the request is handled only after that long, as behind a slow hop):
// the "did my create happen?" case a client must answer by re-reading, not
// by sending the request again. Added for pveapi's write-retry tests.
const LostAnswer Kind = "lost-answer"

// FinishJoin makes the joiner's finish_join fail half-way (pvesim/clustersim,
// join.go). Node is the joiner; Path is ignored (the fault applies to API
// and CLI joins alike); Message replaces the default error.
const FinishJoin Kind = "finish-join"
