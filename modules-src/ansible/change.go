package ansible

import (
	"context"
	"errors"
)

// Change is one planned modification of the target.
type Change struct {
	// ID is a stable short name, unique within the run, e.g.
	// "repo:pve-no-subscription".
	ID string
	// Summary is the human text listed under `changes` in the result, e.g.
	// "enable pve-no-subscription".
	Summary string
	// Diff is shown in diff mode; nil when a diff is not meaningful.
	Diff *Diff
	// Apply makes the change. Never called in check mode. Once Apply has
	// been called the change counts as made (the task reports changed, even
	// when Apply or Verify then fails), unless Apply returns an error built
	// with NothingChanged: its promise that it left the target exactly as it
	// found it (it failed before touching anything, or rolled back).
	Apply func(ctx context.Context) error
	// Verify reads back what Apply promised and returns an error describing
	// what it found if that is not the promised state. Required: a change
	// that cannot be verified cannot be reported as done.
	Verify func(ctx context.Context) error
	// Predict records in the World what the target looks like once this
	// change is made, for the stages after this one (check mode only; see
	// World). nil when no later stage reads anything this change affects.
	Predict func(w *World)
	// Pending, when set, names the parts of the change that are written
	// but not in force yet, and what puts them in force: a running VM's
	// config keys PVE keeps for its next start ("cores", "memory"; until
	// "the VM's next start"). The runtime asks it after Verify proved the
	// change (in check mode after Predict, as a prediction) and never calls
	// those parts applied: the message names them as pending, a warning
	// says what they wait for, and the change's diff header does too.
	// Nothing pending: no parts.
	Pending func() (parts []string, until string)

	// predictedOnly marks a change built by PredictedOnly.
	predictedOnly bool
}

// PredictedOnly is a change that exists only as a prediction of check
// mode: a step that depends on the predicted result of an earlier one (the
// keys a check run predicts another task will create, the member a
// predicted join adds), so a real run can never plan it — there it would
// be planned from what the earlier step really did. It is listed like any
// other planned change in check mode; it has no Apply or Verify, and the
// driver rejects it, as a bug in the module, in a run that is not check
// mode.
func PredictedOnly(id, summary string, predict func(w *World)) Change {
	return Change{ID: id, Summary: summary, Predict: predict, predictedOnly: true}
}

// IsPredictedOnly tells whether c was built by PredictedOnly.
func (c Change) IsPredictedOnly() bool { return c.predictedOnly }

// Diff is one entry of the result's `diff` list. Before and After are
// strings (text diffs) or maps (structured diffs the callback renders).
type Diff struct {
	Before       any    `json:"before"`
	After        any    `json:"after"`
	BeforeHeader string `json:"before_header,omitempty"`
	AfterHeader  string `json:"after_header,omitempty"`
}

// TextDiff is the usual diff of a file: before and after contents with the
// path as header on both sides. A missing file is the empty string.
func TextDiff(path, before, after string) *Diff {
	return &Diff{Before: before, After: after, BeforeHeader: path, AfterHeader: path}
}

// StageFunc observes (reads only) and returns the changes it wants made.
// w is the world as the earlier stages leave it: in check mode it holds
// what their planned changes predicted (World).
type StageFunc func(ctx context.Context, w *World) ([]Change, error)

// nothingChanged marks an Apply error after which the target is as it was.
type nothingChanged struct{ err error }

func (e *nothingChanged) Error() string { return e.err.Error() }
func (e *nothingChanged) Unwrap() error { return e.err }

// NothingChanged wraps an error returned by Apply to declare that Apply left
// nothing behind: it failed before its first write, or it undid what it had
// done and the undo succeeded. The change is then reported as not made
// (`changes_not_run`), and does not make the task changed. Only an Apply
// that can guarantee this may say it; when in doubt, return the error as
// is and the change counts as made but unverified.
func NothingChanged(err error) error {
	if err == nil {
		return nil
	}
	return &nothingChanged{err: err}
}

// IsNothingChanged reports whether err (or an error it wraps) was built by
// NothingChanged.
func IsNothingChanged(err error) bool {
	var nc *nothingChanged
	return errors.As(err, &nc)
}
