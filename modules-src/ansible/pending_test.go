package ansible

import (
	"context"
	"strings"
	"testing"
)

// Issue 23 §4: a change whose parts are written but not in force (a
// running VM's keys PVE keeps for its next start) is never called applied:
// the message names them as pending, a warning says what they wait for,
// and the diff's header too — in a real run after Verify, in check mode
// as the prediction. A change with nothing pending reads as before.
func TestPendingIsNeverApplied(t *testing.T) {
	for _, check := range []bool{false, true} {
		m := &Module{Name: "gopve_unit", Run: func(r *Run) error {
			return r.Stage("config", func(context.Context, *World) ([]Change, error) {
				mk := func(id string, parts ...string) Change {
					return Change{ID: id, Summary: "configure " + id, Diff: TextDiff("/etc/"+id, "a", "b"),
						Apply:   func(context.Context) error { return nil },
						Verify:  func(context.Context) error { return nil },
						Pending: func() ([]string, string) { return parts, "the VM's next start" }}
				}
				return []Change{mk("vm", "cores", "memory"), mk("other")}, nil
			})
		}}
		res := Execute(context.Background(), m, &Invocation{Params: map[string]any{}, CheckMode: check, Diff: true}, noEnv, nil)
		msg, _ := res["msg"].(string)
		want := "2 changes written and verified, not all of it in force yet: configure vm (pending until the VM's next start: cores, memory); configure other"
		if check {
			want = "2 changes would be made (check mode), not all of it in force at once: configure vm (pending until the VM's next start: cores, memory); configure other"
		}
		if msg != want || strings.Contains(msg, "applied") {
			t.Errorf("check=%v: msg %q", check, msg)
		}
		warns, _ := res["warnings"].([]any)
		if len(warns) != 1 || !strings.Contains(warns[0].(string), "configure vm: cores, memory ") || !strings.Contains(warns[0].(string), "until the VM's next start; it is pending, not applied") {
			t.Errorf("check=%v: warnings %v", check, res["warnings"])
		}
		diffs, _ := res["diff"].([]any)
		if len(diffs) != 2 || diffs[0].(map[string]any)["after_header"] != "/etc/vm (pending until the VM's next start: cores, memory)" ||
			diffs[1].(map[string]any)["after_header"] != "/etc/other" {
			t.Errorf("check=%v: diff %v", check, res["diff"])
		}
		if res["changed"] != true {
			t.Errorf("check=%v: changed %v", check, res["changed"])
		}
	}
}
