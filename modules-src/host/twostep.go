package host

import (
	"bytes"
	"context"
	"fmt"
	"time"
)

// ActError is the failure of the second half of WriteThenAct: the file was
// written, the action that makes it take effect failed. Undone tells
// whether the file was put back as it was before.
type ActError struct {
	Path    string
	Err     error // the action's error
	Undone  bool
	UndoErr error // why the file could not be put back, when !Undone
}

func (e *ActError) Error() string {
	if e.Undone {
		return fmt.Sprintf("%v (%s put back as it was, so the next run redoes both steps)", e.Err, e.Path)
	}
	return fmt.Sprintf("%v; putting %s back as it was also failed: %v", e.Err, e.Path, e.UndoErr)
}

func (e *ActError) Unwrap() error { return e.Err }

// WriteThenAct makes a change whose effect is split across two actions:
// write a file (ApplyFile, compare-and-swap), then act on it — restart the
// service that reads it, rebuild the initramfs that embeds it. A file left
// written with the action not done would look converged to every later run,
// and the action would never happen. So when act fails, the write is
// undone: the file gets its old content back (or is removed if it did not
// exist), again compare-and-swap against what was written, so a concurrent
// edit is never overwritten. The error is then an *ActError.
//
// The undo can fail too (or the process be killed between the two steps);
// modules whose action leaves a trace (a service's start time older than
// the file) should also detect the pending action on the next run.
func (r Root) WriteThenAct(ctx context.Context, c *FileChange, now time.Time, act func(ctx context.Context) error) (backup string, err error) {
	backup, err = r.ApplyFile(ctx, c, now)
	if err != nil {
		return backup, err
	}
	actErr := act(ctx)
	if actErr == nil {
		return backup, nil
	}
	written, err := r.ReadFile(c.Path)
	if err != nil {
		return backup, &ActError{Path: c.Path, Err: actErr, UndoErr: err}
	}
	if !written.Exists || !bytes.Equal(written.Content, c.After) {
		return backup, &ActError{Path: c.Path, Err: actErr, UndoErr: fmt.Errorf("it no longer holds what was written (changed by another process)")}
	}
	if !c.Before.Exists {
		if err := r.Remove(ctx, written.Target); err != nil {
			return backup, &ActError{Path: c.Path, Err: actErr, UndoErr: err}
		}
		return backup, &ActError{Path: c.Path, Err: actErr, Undone: true}
	}
	undo := &FileChange{Path: c.Path, Before: written, After: c.Before.Content, Mode: c.Before.Mode}
	if _, err := r.ApplyFile(ctx, undo, now); err != nil {
		return backup, &ActError{Path: c.Path, Err: actErr, UndoErr: err}
	}
	return backup, &ActError{Path: c.Path, Err: actErr, Undone: true}
}
