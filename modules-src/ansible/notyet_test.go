package ansible

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func notYetModule(run func(r *Run) error) *Module {
	m := testModule(run)
	m.CreatedEarlier = true
	return m
}

func earlier(kind string, names ...any) map[string]any {
	return map[string]any{CreatedEarlierOption: map[string]any{kind: names}}
}

// NotYet (site-wide check runs, K15: check mode tells the truth about what
// it cannot make yet): in check mode a missing prerequisite that
// created_earlier names is assumed made by an earlier task — one warning
// per object naming the option, listed in not_yet, and the run predicts
// on; in a real run the module's own error comes back before any change is
// applied, so the task fails with changed=false.
func TestNotYetPrerequisite(t *testing.T) {
	applied := 0
	missing := errors.New("node: no such cluster node 'pve02' (the cluster has pve01)")
	run := func(r *Run) error {
		return r.Stage("vm", func(context.Context, *World) ([]Change, error) {
			p := Prerequisite{Option: "node", Kind: CreatedNode, Name: "pve02", Object: "cluster node pve02", Predicts: "the clone on pve02"}
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
	check := exec1(t, notYetModule(run), &Invocation{CheckMode: true, Params: earlier("nodes", "pve02")})
	warnings := fmt.Sprint(check["warnings"])
	if check["failed"] == true || check["changed"] != true || applied != 0 {
		t.Fatalf("check mode: applied %d, %v", applied, check)
	}
	if strings.Count(warnings, "does not exist yet") != 1 ||
		!strings.Contains(warnings, "node: cluster node pve02 does not exist yet; check mode assumes an earlier task of this run creates it (created_earlier.nodes names it) and predicts the clone on pve02; a real run fails unless an earlier task creates it by then (node: no such cluster node 'pve02'") {
		t.Errorf("check mode warnings: %s", warnings)
	}
	if got := fmt.Sprint(check["not_yet"]); got != "[map[object:cluster node pve02 option:node]]" {
		t.Errorf("not_yet = %s", got)
	}
	// A real run assumes nothing, created_earlier or not.
	for _, params := range []map[string]any{nil, earlier("nodes", "pve02")} {
		real := exec1(t, notYetModule(run), &Invocation{Params: params})
		if real["failed"] != true || real["changed"] != false || applied != 0 || real["msg"] != missing.Error() ||
			real["not_yet"] != nil || real["warnings"] != nil {
			t.Errorf("real run (%v): applied %d, %v", params, applied, real)
		}
	}
}

// K15 (typos): a missing prerequisite that created_earlier does not name
// fails the check run with exactly the real run's result — a typo (node
// pve0x) is not assumed away, whatever else the list names, and a module
// without the option assumes nothing at all.
func TestNotYetOnlyWhatCreatedEarlierNames(t *testing.T) {
	missing := errors.New("node: no such cluster node 'pve0x' (the cluster has pve01, pve02)")
	run := func(r *Run) error {
		return r.Stage("vm", func(context.Context, *World) ([]Change, error) {
			if err := r.NotYet(Prerequisite{Option: "node", Kind: CreatedNode, Name: "pve0x", Object: "cluster node pve0x"}, missing); err != nil {
				return nil, err
			}
			return []Change{{ID: "vm:clone", Summary: "clone", Apply: func(context.Context) error { return nil },
				Verify: func(context.Context) error { return nil }}}, nil
		})
	}
	real := exec1(t, notYetModule(run), &Invocation{})
	cases := map[string]struct {
		m      *Module
		params map[string]any
	}{
		"no created_earlier":          {notYetModule(run), nil},
		"another node listed":         {notYetModule(run), earlier("nodes", "pve03")},
		"the name in another kind":    {notYetModule(run), earlier("storages", "pve0x")},
		"a module without the option": {testModule(run), nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			check := exec1(t, c.m, &Invocation{CheckMode: true, Params: c.params})
			for _, k := range []string{"failed", "changed", "msg", "warnings", "not_yet"} {
				if fmt.Sprint(check[k]) != fmt.Sprint(real[k]) {
					t.Errorf("%s: check %v, real %v", k, check[k], real[k])
				}
			}
			if check["failed"] != true || check["msg"] != missing.Error() {
				t.Errorf("check: %v", check)
			}
		})
	}
	// The option is the runtime's: a module without CreatedEarlier refuses it.
	if res := exec1(t, testModule(run), &Invocation{CheckMode: true, Params: earlier("nodes", "pve0x")}); res["failed"] != true ||
		!strings.Contains(fmt.Sprint(res["msg"]), "created_earlier") {
		t.Errorf("a module without the option took it: %v", res)
	}
}

// created_earlier's guests take a VMID as a number or a string, or a name.
func TestCreatedEarlierGuests(t *testing.T) {
	var got []bool
	run := func(r *Run) error {
		for _, n := range []string{"9000", "debian-12", "9001"} {
			got = append(got, r.CreatedEarlier(CreatedGuest, n))
		}
		return nil
	}
	exec1(t, notYetModule(run), &Invocation{CheckMode: true, Params: earlier("guests", 9000, "debian-12")})
	if fmt.Sprint(got) != "[true true false]" {
		t.Errorf("CreatedEarlier(guests 9000, debian-12, 9001) = %v", got)
	}
	if res := exec1(t, notYetModule(run), &Invocation{Params: earlier("guest", "9000")}); res["failed"] != true {
		t.Errorf("an unknown kind (guest) was accepted: %v", res)
	}
}

// A module that handles the absence itself in a real run (pve_storage
// leaves a non-member out) asks Assume: true only for what created_earlier
// names, in check mode; NotYet without the real run's error is a bug.
func TestNotYetHandledByTheModule(t *testing.T) {
	run := func(r *Run) error {
		kept := []string{}
		for _, n := range []string{"pve03", "pve0x"} {
			if r.Assume(Prerequisite{Option: "nodes", Kind: CreatedNode, Name: n, Object: "cluster node " + n,
				RealRun: "leaves out every node that is still not a member"}, nil) {
				kept = append(kept, n)
			}
		}
		r.Set("kept", kept)
		return r.NotYet(Prerequisite{Option: "nodes", Object: "x"}, nil)
	}
	check := exec1(t, notYetModule(run), &Invocation{CheckMode: true, Params: earlier("nodes", "pve03")})
	if w := fmt.Sprint(check["warnings"]); fmt.Sprint(check["kept"]) != "[pve03]" ||
		!strings.HasSuffix(w, "nodes: cluster node pve03 does not exist yet; check mode assumes an earlier task of this run creates it (created_earlier.nodes names it); a real run leaves out every node that is still not a member]") {
		t.Errorf("check: %v", check)
	}
	if !strings.Contains(fmt.Sprint(check["msg"]), "this is a bug in gopve") {
		t.Errorf("NotYet without an error: %v", check["msg"])
	}
	if real := exec1(t, notYetModule(run), &Invocation{Params: earlier("nodes", "pve03")}); fmt.Sprint(real["kept"]) != "[]" || real["warnings"] != nil {
		t.Errorf("real: %v", real)
	}
}

// created_earlier.storage_types names a type PVE has, for a storage
// created_earlier.storages names; anything else is refused before the
// module runs, in check and real runs alike, naming the option.
func TestCreatedEarlierStorageTypesRefused(t *testing.T) {
	ran := 0
	run := func(r *Run) error { ran++; return nil }
	good := map[string]any{CreatedEarlierOption: map[string]any{"storages": []any{"newdir"}, "storage_types": map[string]any{"newdir": "dir"}}}
	if res := exec1(t, notYetModule(run), &Invocation{CheckMode: true, Params: good}); res["failed"] == true || ran != 1 {
		t.Fatalf("a declared dir storage: %v", res)
	}
	for _, c := range []struct {
		types map[string]any
		want  string
	}{
		{map[string]any{"newdir": "dri"}, "created_earlier.storage_types.newdir: dri is not a PVE storage type (dir, "},
		{map[string]any{"newdir": 5}, "created_earlier.storage_types.newdir: 5 is not a PVE storage type"},
		{map[string]any{"other": "dir"}, "created_earlier.storage_types.other: storage other is not in created_earlier.storages"},
	} {
		for _, check := range []bool{true, false} {
			params := map[string]any{CreatedEarlierOption: map[string]any{"storages": []any{"newdir"}, "storage_types": c.types}}
			res := exec1(t, notYetModule(run), &Invocation{CheckMode: check, Params: params})
			if msg, _ := res["msg"].(string); res["failed"] != true || res["changed"] != false || !strings.Contains(msg, c.want) || ran != 1 {
				t.Errorf("%v (check %v): ran %d, %v", c.types, check, ran, res)
			}
		}
	}
}
