package pveapi

import (
	"errors"
	"fmt"
)

// The errors Dispatch returns for a write whose outcome is not a plain
// success: unverified (a lost answer no read settled), written (PVE failed
// after its handler wrote), not done (PVE failed, and a read shows
// nothing changed), and a write refused by a read-only client.

// UnverifiedError is a write whose answer was lost and whose effect no
// read has shown within the settle time: it may have happened, or may
// still happen (a create still inside its lock). It was not sent again.
type UnverifiedError struct {
	What  string
	Cause error  // the lost answer, or PVE's answered failure
	Read  string // what the last settle read found
	// Answered is set when PVE did answer (a failure of the handler, an
	// answer that is not a task id): the message then says what PVE said,
	// never that the answer was lost.
	Answered bool
	// NotOurs is set when a read shows the object the write creates is
	// another's (Read says what it shows): this write did not make it, but
	// no read proves what else it did.
	NotOurs bool
}

func (e *UnverifiedError) Error() string {
	msg := fmt.Sprintf("%s: the answer was lost (%v) and the write may have happened; it was not sent again", e.What, e.Cause)
	switch {
	case e.NotOurs:
		msg = fmt.Sprintf("%s: the answer was lost (%v); it was not sent again", e.What, e.Cause)
	case e.Answered:
		msg = fmt.Sprintf("%s: PVE answered %v; the write may have changed something, and it was not sent again", e.What, e.Cause)
	}
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
