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
	// Unreadable, given instead of Settle, says why no read can show
	// whether the write took effect (a password: PVE shows none). A lost
	// answer, or a failure PVE answered after the handler may have acted,
	// is then reported unverified at once with this reason: never sent
	// again, never polled for.
	Unreadable string
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
	// Needs names the privileges (and paths) PVE checks for the call, for
	// the message of a 403 that names none: a schema check of the form
	// "one of these or that" fails with a bare "Permission check failed"
	// (RPCEnvironment's raise_perm_exc without detail), which leaves the
	// user guessing which privilege is missing.
	Needs string

	// Proof reads the object a task write creates and says whether it is
	// this write's own (the new VMID's config carries the name this write
	// sent). A task found in the node's list only says that someone with
	// our principal started a task of that type and id: for a clone the id
	// is the template's, and another run with the same token clones the
	// same template. So a creating task write (Creates, or a task type
	// that creates a guest: CreateTaskTypes) is settled as made only when
	// Proof shows the object is ours; Dispatch refuses such a write
	// without Proof as a bug, so no module can opt out.
	Proof func(ctx context.Context) (Evidence, error)

	// prior are the matching tasks of our principal that were there
	// before the write was sent (Dispatch reads them for a Proof write).
	prior []string
}

// Evidence is what a Proof read found of the object a write creates.
type Evidence struct {
	// Ours: the object shows this write's own values.
	Ours bool
	// Other, when set, says the object exists and is not this write's
	// (another name at the new VMID): this write did not make it.
	Other string
	// Read says in a few words what was read, for messages.
	Read string
}

// CreateTaskTypes are the workers that create a guest (qemu-server
// API2/Qemu.pm create_vm, clone_vm; pve-container API2/LXC.pm
// create_vm, clone_vm). A task write of one of them must carry a Proof.
var CreateTaskTypes = []string{"qmcreate", "qmclone", "vzcreate", "vzclone"}

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
	if w.Task != nil && w.Proof != nil && !c.readOnly {
		// The tasks of ours that match before the write is sent are not
		// its own: noted, so that a settle read cannot take one of them
		// (another clone of the same template a moment ago, within the
		// clock slack) for the task this write started. A failed read
		// leaves the Proof alone to decide.
		if prior, err := w.waiter(c).findTasks(ctx, *w.Task, start, c.principal); err == nil {
			w.prior = prior
		} else {
			c.logf("%s: reading the task list before sending failed (%v); settling a lost answer relies on the proof alone", w.What, err)
		}
	}
	var raw json.RawMessage
	err = c.send(ctx, w.Method, w.Path, w.Params, &raw)
	if err != nil && w.Needs != "" {
		needsHint(err, w.Needs)
	}
	if err == nil {
		out := &Outcome{Data: raw}
		if w.Task == nil {
			return out, nil
		}
		var upid string
		if err := Decode(raw, &upid); err != nil || upid == "" {
			return out, &UnverifiedError{What: w.What, Answered: true, Cause: fmt.Errorf("%s %s with %s, not a task id", w.Method, w.Path, raw)}
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

// needsHint replaces the permission hint of a 403 whose message names no
// privilege with what the call needs (Write.Needs).
func needsHint(err error, needs string) {
	var e *Error
	if errors.As(err, &e) && e.kind == KindPermission && !strings.Contains(e.Message, "(") {
		e.Hint = "PVE names no privilege; this call needs " + needs +
			"; a token with privilege separation only has the rights granted to the token itself"
	}
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
	case w.Settle == nil && w.Task == nil && w.Unreadable == "":
		return fmt.Errorf("bug: Write %q has neither Settle nor Task: a lost answer could not be settled", w.What)
	case w.Task != nil && (w.Task.Node == "" || len(w.Task.Types) == 0):
		return fmt.Errorf("bug: Write %q: a task write needs the task's node and type", w.What)
	case w.Task != nil && w.Proof == nil && (w.Creates || slices.ContainsFunc(w.Task.Types, func(t string) bool { return slices.Contains(CreateTaskTypes, t) })):
		return fmt.Errorf("bug: Write %q creates through a task but has no Proof: a task found in the node's list cannot show that the object it made is this write's", w.What)
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
	if w.Unreadable != "" {
		return nil, &UnverifiedError{What: w.What, Cause: cause, Answered: true, Read: w.Unreadable}
	}
	found, miss, err := c.settleRead(ctx, w, start)
	switch {
	case err != nil:
		return nil, &UnverifiedError{What: w.What, Cause: cause, Answered: true, Read: "reading back to learn whether it happened failed: " + err.Error()}
	case found == nil && (w.Creates || w.Task != nil):
		// The object is as it was before (absent, or another's), or no task
		// of ours was started: PVE died before acting.
		return nil, &notDoneError{err: cause, read: "reading back shows it was not made: " + miss.read}
	case found == nil:
		return nil, &UnverifiedError{What: w.What, Cause: cause, Answered: true, Read: "reading back does not show it in place (" + miss.read + "), but cannot tell whether part of it was made"}
	}
	return c.settled(ctx, w, found, cause, true)
}

// settle polls until the write shows, the settle time ends, or ctx does.
// A Proof that shows the object is another's ends it at once: this write
// did not make it, and it is not sent again.
func (c *Client) settle(ctx context.Context, w Write, start time.Time, cause error) (*Outcome, error) {
	if w.Unreadable != "" {
		return nil, &UnverifiedError{What: w.What, Cause: cause, Read: w.Unreadable}
	}
	within := w.SettleWithin
	if within <= 0 {
		within = DefaultSettle
	}
	sctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	last := ""
	for {
		found, miss, err := c.settleRead(sctx, w, start)
		switch {
		case err == nil && found != nil:
			return c.settled(ctx, w, found, cause, false)
		case err == nil && miss.notOurs:
			return nil, &UnverifiedError{What: w.What, Cause: cause, Read: miss.read, NotOurs: true}
		case err == nil:
			last = "reading back did not show it (" + miss.read + ")"
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

// settled is the write shown to have happened: its task is waited out.
// When several tasks of our principal match (two runs with one token
// cloning one template), which one is ours cannot be read from the list:
// each is waited out, and the Proof read again decides.
func (c *Client) settled(ctx context.Context, w Write, found *settleFind, cause error, answered bool) (*Outcome, error) {
	how := fmt.Sprintf("the answer to %q was lost (%v)", w.What, cause)
	if answered {
		how = fmt.Sprintf("PVE answered %q with a failure (%v)", w.What, cause)
	}
	out := &Outcome{Lost: how + "; reading back shows it happened, so it was not sent again"}
	if found.proof != "" {
		out.Lost = how + "; reading back shows it happened (" + found.proof + "), so it was not sent again"
	}
	switch len(found.upids) {
	case 0:
		return out, nil
	case 1:
		var err error
		out.Task, err = w.waiter(c).WaitTask(ctx, found.upids[0])
		var te *TaskError
		if errors.As(err, &te) {
			te.Found = true
		}
		return out, err
	}
	var ok []*TaskResult
	for _, upid := range found.upids {
		res, err := w.waiter(c).WaitTask(ctx, upid)
		if err == nil {
			ok = append(ok, res)
		} else if ctx.Err() != nil {
			return nil, &UnverifiedError{What: w.What, Cause: cause, Answered: answered, Read: fmt.Sprintf("%d tasks of %s match and the deadline passed while waiting for them: %v", len(found.upids), c.principal, err)}
		}
	}
	ev, err := w.Proof(ctx)
	if err != nil || !ev.Ours {
		read := ev.Read
		if err != nil {
			read = err.Error()
		}
		return nil, &UnverifiedError{What: w.What, Cause: cause, Answered: answered, Read: fmt.Sprintf("%d tasks of %s matched; once they ended, reading back does not show it as this write's (%s)", len(found.upids), c.principal, read)}
	}
	if len(ok) == 1 {
		out.Task = ok[0]
	}
	out.Lost += fmt.Sprintf("; %d tasks of %s matched, which of them was this write's cannot be told, so their warnings are not shown", len(found.upids), c.principal)
	if len(ok) == 1 {
		out.Lost = strings.TrimSuffix(out.Lost, ", so their warnings are not shown")
	}
	return out, nil
}

// settleFind is a settle read that shows the write happened: the tasks
// that may be its own (a task write; oldest first) and what the Proof read.
type settleFind struct {
	upids []string
	proof string
}

// settleMiss is a settle read that does not show it: what was read, and
// whether the object is there as another's (notOurs).
type settleMiss struct {
	read    string
	notOurs bool
}

// settleRead is one read of the write's effect: nil when it does not show.
//
// A task write is shown by a task in the node's list of its type and id,
// started since the write was sent, whose user is this client's principal
// (PVE records the authenticated user in the UPID: the token id
// user@realm!name for a token, pve-manager PVE/HTTPServer.pm "the
// token-ID is the user for token based authentication", handed to
// RESTEnvironment::fork_worker by the handler; root@pam for pvesh,
// RPCEnvironment::setup_default_cli_env). A write that creates must also
// be shown by its Proof: the object itself carries this write's values.
func (c *Client) settleRead(ctx context.Context, w Write, start time.Time) (*settleFind, settleMiss, error) {
	if w.Task != nil {
		upids, err := w.waiter(c).findTasks(ctx, *w.Task, start, c.principal)
		upids = slices.DeleteFunc(upids, func(u string) bool { return slices.Contains(w.prior, u) })
		none := fmt.Sprintf("no %s task of %s on %s since %s", strings.Join(w.Task.Types, "/"), c.principalOrUnknown(), w.Task.Node, start.Format(time.TimeOnly))
		if err != nil {
			return nil, settleMiss{read: none}, err
		}
		if w.Proof == nil {
			if len(upids) == 0 {
				return nil, settleMiss{read: none}, nil
			}
			return &settleFind{upids: upids[:1]}, settleMiss{}, nil
		}
		ev, err := w.Proof(ctx)
		switch {
		case err != nil:
			return nil, settleMiss{read: none}, err
		case ev.Other != "":
			return nil, settleMiss{notOurs: true, read: "reading back shows the object is not this write's (" + ev.Other + "), so this write did not make it; whether it changed anything else no read can prove, so the change is reported unverified"}, nil
		case !ev.Ours:
			return nil, settleMiss{read: joinRead(none, ev.Read, len(upids))}, nil
		case len(upids) == 0:
			return nil, settleMiss{read: none + ", although " + ev.Read}, nil
		}
		return &settleFind{upids: upids, proof: ev.Read}, settleMiss{}, nil
	}
	ok, err := w.Settle(ctx)
	if err != nil || !ok {
		return nil, settleMiss{read: "not there"}, err
	}
	return &settleFind{}, settleMiss{}, nil
}

func joinRead(none, proof string, tasks int) string {
	if tasks == 0 {
		return none + "; " + proof
	}
	return fmt.Sprintf("%d matching task(s), but %s", tasks, proof)
}

func (c *Client) principalOrUnknown() string {
	if c.principal == "" {
		return "this client (whose principal is unknown)"
	}
	return c.principal
}

// findTasks lists the tasks a write may have started in its node's task
// list: running or ended (source=all), of one of its types and its id,
// started since the write was sent (less the clock slack), by principal;
// oldest first. An unknown principal matches nothing: no task is then
// proven ours.
func (c *Client) findTasks(ctx context.Context, t TaskWrite, start time.Time, principal string) ([]string, error) {
	if principal == "" {
		return nil, nil
	}
	since := start.Add(-taskClockSlack)
	q := TaskQuery{Source: "all", Since: since}
	if n, err := strconv.Atoi(t.ID); err == nil && n >= 100 {
		q.VMID = n // PVE filters by vmid only for guest ids
	}
	var found []TaskEntry
	for _, typ := range t.Types {
		q.TypeFilter = typ
		list, err := ListTasks(ctx, c, t.Node, q)
		if err != nil {
			return nil, err
		}
		for _, e := range list {
			if e.Type != typ || e.ID != t.ID || e.StartTime < since.Unix() || taskUser(e) != principal {
				continue
			}
			found = append(found, e)
		}
	}
	slices.SortStableFunc(found, func(a, b TaskEntry) int { return int(a.StartTime - b.StartTime) })
	upids := make([]string, len(found))
	for i, e := range found {
		upids[i] = e.UPID
	}
	return upids, nil
}

// taskUser is the user a task ran as, as its UPID carries it (a token's
// full id: the list's and the status's user field may show the token
// apart, read_task_status's `tokenid`), else the list's user field.
func taskUser(e TaskEntry) string {
	if u, err := ParseUPID(e.UPID); err == nil && u.User != "" {
		return u.User
	}
	return e.User
}
