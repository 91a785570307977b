package ansible

import "fmt"

// Prerequisite is an object a task needs that another task creates: the
// node a join adds, the storage a storage task declares, the pool, the
// guest a clone makes. A check run of a whole site meets it before any of
// those tasks has run (nothing is written in check mode), so it is not
// there yet although the real run will have made it by the time it gets
// here.
type Prerequisite struct {
	// Option is the option that names the object ("node", "storage",
	// "nodes", "vmid"), as the warning and the error start with it.
	Option string
	// Object is what is missing, with its kind: "cluster node pve02",
	// "storage nvme-vm", "guest 202".
	Object string
	// Predicts says what check mode predicts in spite of it, e.g. "the
	// clone and its configuration on pve02". Optional.
	Predicts string
	// RealRun says what a real run does when the object is still missing
	// when it gets there; empty means it fails (with the error NotYet is
	// given).
	RealRun string
}

// NotYet is the one way a module treats a prerequisite that does not
// exist now:
//
//   - In check mode it is assumed to be created by an earlier task of this
//     run. The run warns once, in one format naming the option and the
//     object and saying what a real run does if it still does not exist;
//     the object is listed in the result's `not_yet`; NotYet returns nil
//     and the module goes on predicting as far as it can without the
//     object (a clone on a node that has not joined is still predicted,
//     disks on a storage not yet declared are named as PVE would).
//   - In a real run nothing is assumed: NotYet returns fail, the module's
//     own clear error (naming the option), which the module returns before
//     its first write. fail nil means the module handles the absence itself
//     in a real run (RealRun says how), and NotYet returns nil.
//
// A module calls it only where the object's absence is the whole problem:
// a refusal that holds whether or not the object will exist (a storage of
// the wrong type, a node that is offline) is returned as it is.
func (r *Run) NotYet(p Prerequisite, fail error) error {
	if !r.CheckMode() {
		return fail
	}
	real := p.RealRun
	if real == "" {
		real = "fails unless an earlier task creates it by then"
		if fail != nil {
			real += " (" + fail.Error() + ")"
		}
	}
	msg := fmt.Sprintf("%s: %s does not exist yet; check mode assumes an earlier task of this run creates it", p.Option, p.Object)
	if p.Predicts != "" {
		msg += " and predicts " + p.Predicts
	}
	msg += "; a real run " + real
	r.mu.Lock()
	defer r.mu.Unlock()
	key := p.Option + "\x00" + p.Object
	for _, seen := range r.notYet {
		if seen.Option+"\x00"+seen.Object == key {
			return nil // one warning per object, however many checks meet it
		}
	}
	r.notYet = append(r.notYet, p)
	r.warnings = append(r.warnings, msg)
	return nil
}

// notYetResult is the result's `not_yet`: what the check run assumed.
func (r *Run) notYetResult() []any {
	out := make([]any, 0, len(r.notYet))
	for _, p := range r.notYet {
		out = append(out, map[string]any{"option": p.Option, "object": p.Object})
	}
	return out
}
