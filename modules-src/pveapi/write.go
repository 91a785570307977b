package pveapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/internal/writes"
)

// Write is one mutating API call, named so that it is sent once and its
// outcome is known even when its answer is lost. Every POST, PUT and DELETE
// a module makes goes through Client.Dispatch with a Write; the client has
// no other way to send one.
type Write struct {
	Method string // POST, PUT or DELETE
	Path   string
	Params url.Values
	// What names the change for messages: "create storage nfs1".
	What string
	// Settle reads whether the write took effect (the storage exists, the
	// option has its new value, the rule is gone). It is called only when
	// the answer to the write was lost, to learn what happened without
	// sending it again. Required unless Task is set.
	Settle func(ctx context.Context) (bool, error)
	// Task is set when the write answers a task id (UPID): Dispatch then
	// waits the task out at the UPID's node, and a lost answer is settled
	// by looking for the task in that node's task list.
	Task *TaskWrite
	// Creates says the write creates an object that did not exist before
	// (a create is refused by PVE when it does). After PVE answered a
	// failure, a settle read that does not show the object then proves the
	// write left nothing; for other writes it only shows the change is not
	// in place, which is changed, unverified.
	Creates bool
	// SettleWithin bounds how long a lost answer is settled by polling
	// (default DefaultSettle), never past the context's deadline.
	SettleWithin time.Duration
	// RaisesAfterWrite is set for a handler that may answer a failure after
	// it wrote: it tells whether the answered error err is such a failure.
	// qemu-server's config update writes the new values to [PENDING],
	// applies them, and only then raises `400 Parameter verification
	// failed.` naming each key it could not apply (`hotplug problem - …`,
	// `unable to apply pending change …`; qemu.RaisedAfterWrite). Such an
	// answer is never "nothing done": Dispatch reads back once (Settle) and
	// returns a *WrittenError carrying PVE's answer. nil: every answered
	// refusal counts as taken before the handler changed anything.
	RaisesAfterWrite func(err error) bool
}

// A DELETE's goal is absence: a DELETE that PVE answers with "does not
// exist" (KindNotFound, or pve-ha-manager's `not HA managed`) is settled by
// one Settle read (the object gone is Settle's true), never taken as a
// failure by itself. Reads that show it gone: the write is done (Outcome.Gone
// says so, for a warning); reads that show it there: PVE's answer, nothing
// done. Every DELETE a module sends goes through this rule (Dispatch).

// TaskWrite says which task a write starts, so that it can be found in the
// node's task list (GET /nodes/{node}/tasks) when the UPID never arrived.
type TaskWrite struct {
	Node string // the node that runs the task (where the write is handled)
	// Types are the task types the write may start, PVE's worker names
	// (qmclone, clusterjoin…); several when PVE picks (qmstart, or
	// hastart for an HA guest).
	Types []string
	ID    string // the task's id: the VMID for guest tasks, "" for none
	// Via is the client that follows the task (default: the dispatching
	// one). pve_cluster's join follows it through the joiner's local API,
	// which survives the certificate change the join makes.
	Via *Client
}

// Outcome is what a dispatched write did.
type Outcome struct {
	// Data is the answer's data (nil when the answer was lost).
	Data json.RawMessage
	// Task is the finished task of a task write.
	Task *TaskResult
	// Lost is set when the answer never arrived and a read settled that the
	// write happened; it says what was lost, for a warning.
	Lost string
	// Gone is set when a DELETE was answered "does not exist" and a read
	// shows the object absent: the goal is met, by someone else or an
	// earlier attempt; it says so, for a warning.
	Gone string
}

// Decode stores the answer's data into out (see Decode).
func (o *Outcome) Decode(out any) error {
	if o == nil || o.Data == nil {
		return errors.New("the write's answer was lost; there is nothing to decode")
	}
	return Decode(o.Data, out)
}

// Defaults of the settle poll after a lost answer. DefaultSettle is
// pmxcfs's lock lifetime: PVE handlers write cluster configuration under
// cfs_lock_file, whose lock pmxcfs gives up after 120 s (pve-cluster
// src/PVE/Cluster.pm cfs_lock), so a locked write that has not shown
// after that is not going to. Reconstruction: the bound is taken from the
// lock's lifetime, not from a rule PVE states for clients.
const (
	DefaultSettle     = 120 * time.Second
	DefaultSettlePoll = time.Second
	// taskClockSlack is how much earlier than our clock a node may date a
	// task we started (clock skew between controller and node).
	taskClockSlack = 5 * time.Second
)

// UnverifiedError is a write whose answer was lost and whose effect no
// read has shown within the settle time: it may have happened, or may
// still happen (a create still inside its lock). It was not sent again.
type UnverifiedError struct {
	What  string
	Cause error  // the lost answer
	Read  string // what the last settle read found
}

func (e *UnverifiedError) Error() string {
	msg := fmt.Sprintf("%s: the answer was lost (%v) and the write may have happened; it was not sent again", e.What, e.Cause)
	if e.Read != "" {
		msg += "; " + e.Read
	}
	return msg
}

func (e *UnverifiedError) Unwrap() error { return e.Cause }

// IsUnverified tells whether err is a write that may have happened.
func IsUnverified(err error) bool {
	var u *UnverifiedError
	return errors.As(err, &u)
}

// notDoneError is a write PVE answered with a failure, after which a read
// shows it left nothing: NothingDone reports true.
type notDoneError struct {
	err  error
	read string
}

func (e *notDoneError) Error() string { return fmt.Sprintf("%v (%s)", e.err, e.read) }
func (e *notDoneError) Unwrap() error { return e.err }

// WrittenError is a failure PVE answered after its handler wrote (see
// Write.RaisesAfterWrite): part of the write is in place — in qemu-server's
// case every value is in the config, some live, the failed ones pending —
// so it is changed, never "nothing done". Cause is PVE's answer (a *Error
// with the per-key messages, or a *TaskError); InPlace is what the one
// read back found: whether Settle showed the whole write in place.
type WrittenError struct {
	What    string
	Cause   error
	InPlace bool
	Read    string // a few words on the read back, when it failed
}

func (e *WrittenError) Error() string {
	msg := fmt.Sprintf("%s: PVE wrote it, then answered a failure: %v", e.What, e.Cause)
	if e.Read != "" {
		msg += "; " + e.Read
	}
	return msg
}

func (e *WrittenError) Unwrap() error { return e.Cause }

// IsWritten tells whether err is a failure PVE raised after writing.
func IsWritten(err error) (*WrittenError, bool) {
	var w *WrittenError
	ok := errors.As(err, &w)
	return w, ok
}

// ReadOnlyError is a write attempted through a read-only client: in check
// mode, a bug in the module, never sent.
type ReadOnlyError struct{ Method, Path string }

func (e *ReadOnlyError) Error() string {
	return fmt.Sprintf("bug: %s %s attempted through the read-only API client of check mode; nothing was sent (this is a bug in gopve, please report it)", e.Method, e.Path)
}

// login is the one non-GET a read-only client sends: it changes nothing
// on the node (a ticket is a signed string, not state).
func login(method, path string) bool {
	return method == http.MethodPost && path == "/access/ticket"
}

// Dispatch sends w once and tells what happened:
//
//   - answered: the Outcome (for a task write, once the task ended well;
//     a failed task is a *TaskError);
//   - refused before acting (NothingDone(err)): the error; also a failure
//     PVE answered after which one read proves nothing was made (the
//     created object absent, no task started); after other answered
//     failures a read showing the change in place settles it as made, and
//     one that does not is an *UnverifiedError;
//   - answer lost: w.Settle (or the node's task list) is polled until it
//     shows the write happened (then an Outcome with Lost set, and the task
//     waited out), for at most SettleWithin and never past ctx's deadline;
//     if nothing shows, an *UnverifiedError: changed, unverified.
//
// A write is re-sent only when PVE said it could not take its lock (it
// takes the lock before changing anything) or the connection could not
// even be opened (nothing was sent); never after a lost answer.
func (c *Client) Dispatch(ctx context.Context, w Write) (_ *Outcome, err error) {
	if err := w.check(); err != nil {
		return nil, err
	}
	defer func() { noteWrite(ctx, w, err) }() // issue 23 §2: the runtime counts every write that may have acted
	start := time.Now()
	var raw json.RawMessage
	err = c.send(ctx, w.Method, w.Path, w.Params, &raw)
	if err == nil {
		out := &Outcome{Data: raw}
		if w.Task == nil {
			return out, nil
		}
		var upid string
		if err := Decode(raw, &upid); err != nil || upid == "" {
			return out, &UnverifiedError{What: w.What, Cause: fmt.Errorf("%s %s answered %s, not a task id", w.Method, w.Path, raw)}
		}
		out.Task, err = w.waiter(c).WaitTask(ctx, upid)
		if err != nil && w.RaisesAfterWrite != nil && w.RaisesAfterWrite(err) {
			return out, c.written(ctx, w, err)
		}
		return out, err
	}
	var ro *ReadOnlyError
	if errors.As(err, &ro) {
		return nil, err
	}
	if answered(err) && w.RaisesAfterWrite != nil && w.RaisesAfterWrite(err) {
		return nil, c.written(ctx, w, err)
	}
	if w.Method == http.MethodDelete && w.Settle != nil && absentAnswer(err) {
		return c.settleAbsent(ctx, w, err)
	}
	if NothingDone(err) {
		return nil, err
	}
	var e *Error
	if !errors.As(err, &e) {
		return nil, err // not a request error (a bug, a decode failure)
	}
	if !lostAnswer(e) {
		// PVE answered with a failure of the handler: one read tells
		// whether it left anything behind.
		return c.settleOnce(ctx, w, start, err)
	}
	return c.settle(ctx, w, start, err)
}

// noteWrite tells the runtime's write counter (internal/writes) that w
// was sent and may have acted: everything but a write PVE refused before
// acting or that one read proved left nothing (NothingDone), and one a
// read-only client never sent. After a noted write the Apply that sent it
// can no longer end "nothing changed".
func noteWrite(ctx context.Context, w Write, err error) {
	var ro *ReadOnlyError
	if err != nil && (NothingDone(err) || errors.As(err, &ro)) {
		return
	}
	writes.Note(ctx, w.What)
}

// answered tells whether err is PVE's own answer to the request (not a
// lost one, not a request that never left).
func answered(err error) bool {
	var e *Error
	return errors.As(err, &e) && !e.Unanswered && !lostAnswer(e) && !notSent(e)
}

// absentAnswer is the handler's own "it is not there" to a removal: not
// found, or pve-ha-manager's Resources.pm delete (`cannot delete service
// '<sid>', not HA managed!`). A handler's 500 counts (the write path marks
// it Unanswered, as any die may come after a change; this one says what it
// found), a proxy's or a lost answer does not.
func absentAnswer(err error) bool {
	var e *Error
	if !errors.As(err, &e) || lostAnswer(e) || notSent(e) {
		return false
	}
	return e.kind == KindNotFound || strings.Contains(e.Message, "not HA managed")
}

// written is a failure the handler raised after writing: one read back
// says whether the whole write shows; either way it is changed.
func (c *Client) written(ctx context.Context, w Write, cause error) error {
	we := &WrittenError{What: w.What, Cause: cause}
	if w.Settle == nil {
		return we
	}
	ok, err := w.Settle(ctx)
	switch {
	case err != nil:
		we.Read = "reading it back failed: " + err.Error()
	default:
		we.InPlace = ok
	}
	return we
}

// settleAbsent: a DELETE answered "does not exist"; one read decides.
func (c *Client) settleAbsent(ctx context.Context, w Write, cause error) (*Outcome, error) {
	gone, err := w.Settle(ctx)
	switch {
	case err != nil:
		// The read failed: PVE's answer stands (it changed nothing).
		return nil, cause
	case !gone:
		return nil, &notDoneError{err: cause, read: "reading back shows it is still there"}
	}
	return &Outcome{Gone: fmt.Sprintf("%s: PVE answered that it does not exist (%v); reading back shows it absent, which is the goal", w.What, cause)}, nil
}

func (w Write) check() error {
	switch {
	case w.Method != http.MethodPost && w.Method != http.MethodPut && w.Method != http.MethodDelete:
		return fmt.Errorf("bug: Write %q has method %q; only POST, PUT and DELETE are writes", w.What, w.Method)
	case w.What == "":
		return fmt.Errorf("bug: Write %s %s has no What", w.Method, w.Path)
	case w.Settle == nil && w.Task == nil:
		return fmt.Errorf("bug: Write %q has neither Settle nor Task: a lost answer could not be settled", w.What)
	case w.Task != nil && (w.Task.Node == "" || len(w.Task.Types) == 0):
		return fmt.Errorf("bug: Write %q: a task write needs the task's node and type", w.What)
	}
	return nil
}

func (w Write) waiter(c *Client) *Client {
	if w.Task != nil && w.Task.Via != nil {
		return w.Task.Via
	}
	return c
}

// lostAnswer tells whether the error leaves the write's fate open: no
// answer at all (timeout, reset, closed connection), or an answer from
// something between us and the handler (a proxy's 502-504, pveproxy's
// 595/596/599 when it could not reach the node that handles the call).
// A 500 is the handler's own die: it answered; so is a failure without
// status and without a transport error (pvesh printing PVE's die message,
// or pvesh that could not even start).
func lostAnswer(e *Error) bool {
	if e.Status == 0 {
		return e.Err != nil
	}
	return slices.Contains([]int{502, 503, 504, 595, 596, 599}, e.Status)
}

// settleOnce handles a failure PVE answered: the handler stopped, so one
// read shows what it left. Nothing → the failure, marked nothing done.
func (c *Client) settleOnce(ctx context.Context, w Write, start time.Time, cause error) (*Outcome, error) {
	found, read, err := c.settleRead(ctx, w, start)
	switch {
	case err != nil:
		return nil, &UnverifiedError{What: w.What, Cause: cause, Read: "reading back to learn whether it happened failed: " + err.Error()}
	case found == nil && (w.Creates || w.Task != nil):
		// The object is as it was before (absent), or no task was started:
		// PVE died before acting.
		return nil, &notDoneError{err: cause, read: "reading back shows it was not made: " + read}
	case found == nil:
		return nil, &UnverifiedError{What: w.What, Cause: cause, Read: "reading back does not show it in place (" + read + "), but cannot tell whether part of it was made"}
	}
	return c.settled(ctx, w, found, cause)
}

// settle polls until the write shows, the settle time ends, or ctx does.
func (c *Client) settle(ctx context.Context, w Write, start time.Time, cause error) (*Outcome, error) {
	within := w.SettleWithin
	if within <= 0 {
		within = DefaultSettle
	}
	sctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	last := ""
	for {
		found, read, err := c.settleRead(sctx, w, start)
		switch {
		case err == nil && found != nil:
			return c.settled(ctx, w, found, cause)
		case err == nil:
			last = "reading back did not show it (" + read + ")"
		case sctx.Err() == nil:
			last = "reading back failed: " + err.Error()
		}
		c.logf("%s: answer lost, settling: %s", w.What, last)
		select {
		case <-sctx.Done():
			return nil, &UnverifiedError{What: w.What, Cause: cause,
				Read: fmt.Sprintf("for %s %s", time.Since(start).Round(time.Second), last)}
		case <-time.After(c.settlePoll):
		}
	}
}

// settled is the write shown to have happened: a task is waited out.
func (c *Client) settled(ctx context.Context, w Write, found *settleFind, cause error) (*Outcome, error) {
	out := &Outcome{Lost: fmt.Sprintf("the answer to %q was lost (%v); reading back shows it happened, so it was not sent again", w.What, cause)}
	if found.upid == "" {
		return out, nil
	}
	var err error
	out.Task, err = w.waiter(c).WaitTask(ctx, found.upid)
	return out, err
}

type settleFind struct{ upid string }

// settleRead is one read of the write's effect: nil when it does not show,
// with a few words on what was read.
func (c *Client) settleRead(ctx context.Context, w Write, start time.Time) (*settleFind, string, error) {
	if w.Task != nil {
		upid, err := w.waiter(c).findTask(ctx, *w.Task, start)
		if err != nil || upid == "" {
			return nil, fmt.Sprintf("no %s task on %s since %s", strings.Join(w.Task.Types, "/"), w.Task.Node, start.Format(time.TimeOnly)), err
		}
		return &settleFind{upid: upid}, "", nil
	}
	ok, err := w.Settle(ctx)
	if err != nil || !ok {
		return nil, "not there", err
	}
	return &settleFind{}, "", nil
}

// findTask looks for the task a write started in its node's task list:
// running or ended (source=all), of one of its types and its id, started
// since the write was sent (less the clock slack). The oldest such task
// is it.
func (c *Client) findTask(ctx context.Context, t TaskWrite, start time.Time) (string, error) {
	since := start.Add(-taskClockSlack)
	q := TaskQuery{Source: "all", Since: since}
	if n, err := strconv.Atoi(t.ID); err == nil && n >= 100 {
		q.VMID = n // PVE filters by vmid only for guest ids
	}
	best := ""
	var bestStart int64
	for _, typ := range t.Types {
		q.TypeFilter = typ
		list, err := ListTasks(ctx, c, t.Node, q)
		if err != nil {
			return "", err
		}
		for _, e := range list {
			if e.Type != typ || e.ID != t.ID || e.StartTime < since.Unix() {
				continue
			}
			if best == "" || e.StartTime < bestStart {
				best, bestStart = e.UPID, e.StartTime
			}
		}
	}
	return best, nil
}
