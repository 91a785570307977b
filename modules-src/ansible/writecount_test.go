package ansible

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/host"
)

// The runtime rule of issue 23 §2: an Apply that sent a write can never
// end "nothing changed", whatever it returns. The writes are noted by the
// layers that send them (here host's runner and file writes; pveapi's
// Dispatch in pveansible's TestNothingChangedAfterAWrite), under any
// context of the run — the Apply's, the stage's it captured, Run.Context —
// so a module that lies, or forgets, cannot opt out (and no module can
// reach the counter or write around those layers:
// modules.TestNodeWritesOnlyThroughHost). Reads and refusals
// are not writes: NothingChanged still stands after them.
func TestNothingChangedAfterAWrite(t *testing.T) {
	lie := NothingChanged(errors.New("nothing was changed, honestly"))
	for _, c := range []struct {
		name  string
		apply func(t *testing.T, dir string, stageCtx, applyCtx context.Context, r *Run) error
		wrote string // the write the message must name; "" for none
	}{
		{"a command that is not read-only", func(t *testing.T, dir string, _, ctx context.Context, _ *Run) error {
			if _, err := (&host.ExecRunner{}).Run(ctx, host.Command{Name: "touch", Args: []string{filepath.Join(dir, "made")}}); err != nil {
				t.Fatal(err)
			}
			return lie
		}, "touch "},
		{"a command that failed after it started", func(t *testing.T, dir string, _, ctx context.Context, _ *Run) error {
			_, err := (&host.ExecRunner{}).Run(ctx, host.Command{Name: "sh", Args: []string{"-c", "touch " + filepath.Join(dir, "made") + "; exit 3"}})
			return NothingChanged(err)
		}, "sh -c "},
		{"a file written through the stage's context the Apply captured", func(t *testing.T, dir string, stageCtx, _ context.Context, _ *Run) error {
			root := host.Root(dir)
			fc, err := root.PlanFile("/made", []byte("x\n"), 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := root.ApplyFile(stageCtx, fc, time.Now()); err != nil {
				t.Fatal(err)
			}
			return lie
		}, "write /made"},
		{"a file removed through Run.Context", func(t *testing.T, dir string, _, _ context.Context, r *Run) error {
			if err := os.WriteFile(filepath.Join(dir, "made"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := host.Root(dir).Remove(r.Context(), "/made"); err != nil {
				t.Fatal(err)
			}
			return lie
		}, "remove /made"},
		{"only reads", func(t *testing.T, dir string, _, ctx context.Context, _ *Run) error {
			if _, err := (&host.ExecRunner{}).Run(ctx, host.Command{Name: "cat", Args: []string{"/dev/null"}}); err != nil {
				t.Fatal(err)
			}
			_ = host.Root(dir).Remove(ctx, "/absent") // nothing there: nothing removed
			return lie
		}, ""},
		{"a write refused before it acted (compare-and-swap conflict)", func(t *testing.T, dir string, _, ctx context.Context, _ *Run) error {
			root := host.Root(dir)
			fc, err := root.PlanFile("/made", []byte("x\n"), 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "made"), []byte("theirs\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = root.ApplyFile(ctx, fc, time.Now())
			var conflict *host.ConflictError
			if !errors.As(err, &conflict) {
				t.Fatalf("no conflict: %v", err)
			}
			return NothingChanged(err)
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			m := testModule(func(r *Run) error {
				return r.Stage("s", func(stageCtx context.Context, _ *World) ([]Change, error) {
					return []Change{
						{ID: "x", Summary: "do the thing", Apply: func(ctx context.Context) error { return c.apply(t, dir, stageCtx, ctx, r) },
							Verify: func(context.Context) error { return nil }},
						{ID: "y", Summary: "then more", Apply: func(context.Context) error { return nil }, Verify: func(context.Context) error { return nil }},
					}, nil
				})
			})
			res := exec1(t, m, &Invocation{})
			msg, _ := res["msg"].(string)
			unverified := stringsOfAny(res["changes_unverified"])
			notRun := stringsOfAny(res["changes_not_run"])
			if res["failed"] != true {
				t.Fatalf("the failure was lost: %v", res)
			}
			if c.wrote == "" {
				if res["changed"] != false || !slices.Equal(notRun, []string{"do the thing", "then more"}) || !strings.Contains(msg, "(nothing was changed)") {
					t.Errorf("no write was sent, so NothingChanged stands: changed=%v not_run=%v %q", res["changed"], notRun, msg)
				}
				return
			}
			if res["changed"] != true || !slices.Equal(unverified, []string{"do the thing"}) || !slices.Equal(notRun, []string{"then more"}) {
				t.Errorf("a write was sent, yet: changed=%v unverified=%v not_run=%v", res["changed"], unverified, notRun)
			}
			if !strings.Contains(msg, "a write had been sent ("+c.wrote) || !strings.Contains(msg, "counts as made, unverified") ||
				strings.Contains(msg, "(nothing was changed)") {
				t.Errorf("message does not say the change was made: %q", msg)
			}
		})
	}
}
