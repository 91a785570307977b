package ansible

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// NotYet (site-wide check runs, K15: check mode tells the truth about what it cannot make yet): in check mode a missing prerequisite is
// assumed made by an earlier task — one warning per object naming the
// option, listed in not_yet, and the run predicts on; in a real run the
// module's own error comes back before any change is applied, so the task
// fails with changed=false.
func TestNotYetPrerequisite(t *testing.T) {
	applied := 0
	missing := errors.New("node: no such cluster node 'pve02' (the cluster has pve01)")
	run := func(r *Run) error {
		return r.Stage("vm", func(context.Context, *World) ([]Change, error) {
			p := Prerequisite{Option: "node", Object: "cluster node pve02", Predicts: "the clone on pve02"}
			for range 2 { // two checks meeting the same object warn once
				if err := r.NotYet(p, missing); err != nil {
					return nil, err
				}
			}
			return []Change{{ID: "vm:clone", Summary: "clone VM 201 on pve02",
				Apply:  func(context.Context) error { applied++; return nil },
				Verify: func(context.Context) error { return nil }}}, nil
		})
	}
	check := exec1(t, testModule(run), &Invocation{CheckMode: true})
	warnings := fmt.Sprint(check["warnings"])
	if check["failed"] == true || check["changed"] != true || applied != 0 {
		t.Fatalf("check mode: applied %d, %v", applied, check)
	}
	if strings.Count(warnings, "does not exist yet") != 1 ||
		!strings.Contains(warnings, "node: cluster node pve02 does not exist yet; check mode assumes an earlier task of this run creates it and predicts the clone on pve02; a real run fails unless an earlier task creates it by then (node: no such cluster node 'pve02'") {
		t.Errorf("check mode warnings: %s", warnings)
	}
	if got := fmt.Sprint(check["not_yet"]); got != "[map[object:cluster node pve02 option:node]]" {
		t.Errorf("not_yet = %s", got)
	}
	real := exec1(t, testModule(run), &Invocation{})
	if real["failed"] != true || real["changed"] != false || applied != 0 || real["msg"] != missing.Error() ||
		real["not_yet"] != nil || real["warnings"] != nil {
		t.Errorf("real run: applied %d, %v", applied, real)
	}
}

// A module that handles the absence itself in a real run (pve_storage
// leaves a non-member out) passes no error: the real run goes on, and the
// check run's warning says what the real run does instead.
func TestNotYetHandledByTheModule(t *testing.T) {
	run := func(r *Run) error {
		if err := r.NotYet(Prerequisite{Option: "nodes", Object: "cluster node pve03",
			RealRun: "leaves out every node that is still not a member"}, nil); err != nil {
			return err
		}
		r.Set("went_on", true)
		return nil
	}
	check := exec1(t, testModule(run), &Invocation{CheckMode: true})
	if w := fmt.Sprint(check["warnings"]); check["went_on"] != true ||
		!strings.HasSuffix(w, "nodes: cluster node pve03 does not exist yet; check mode assumes an earlier task of this run creates it; a real run leaves out every node that is still not a member]") {
		t.Errorf("check: %v", check)
	}
	if real := exec1(t, testModule(run), &Invocation{}); real["went_on"] != true || real["warnings"] != nil {
		t.Errorf("real: %v", real)
	}
}
