package ansible

import "context"

// Change is one planned modification of the target.
type Change struct {
	// ID is a stable short name, unique within the run, e.g.
	// "repo:pve-no-subscription". Later stages look pending changes up by ID.
	ID string
	// Summary is the human text listed under `changes` in the result, e.g.
	// "enable pve-no-subscription".
	Summary string
	// Diff is shown in diff mode; nil when a diff is not meaningful.
	Diff *Diff
	// Apply makes the change. Never called in check mode.
	Apply func(ctx context.Context) error
	// Verify reads back what Apply promised and returns an error describing
	// what it found if that is not the promised state. Required: a change
	// that cannot be verified cannot be reported as done.
	Verify func(ctx context.Context) error
}

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

// Pending lists the changes earlier stages planned but that were not applied
// because the run is in check mode. In a real run it is empty: every earlier
// change has been applied and verified before the next stage observes.
type Pending []Change

// Has reports whether a change with this ID is pending.
func (p Pending) Has(id string) bool {
	_, ok := p.Get(id)
	return ok
}

// Get returns the pending change with this ID.
func (p Pending) Get(id string) (Change, bool) {
	for _, c := range p {
		if c.ID == id {
			return c, true
		}
	}
	return Change{}, false
}

// StageFunc observes (reads only) and returns the changes it wants made.
// pending holds the not-applied changes of earlier stages (check mode only).
type StageFunc func(ctx context.Context, pending Pending) ([]Change, error)
