package ansible

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// A PredictedOnly change (issue 16): in check mode it is listed like any
// planned change and its prediction reaches the later stages; in a real
// run the driver refuses it as a bug before applying anything of the
// stage, so no Apply stub returning "bug: …" is needed.
func TestPredictedOnlyChange(t *testing.T) {
	key := Key[string]("unit:peer-key")
	applied := 0
	run := func(r *Run) error {
		if err := r.Stage("keys", func(context.Context, *World) ([]Change, error) {
			return []Change{
				PredictedOnly("authorize:pve02", "authorize the key pve02 will create", func(w *World) { key.Predict(w, "pending") }),
				{ID: "real", Summary: "a real change", Apply: func(context.Context) error { applied++; return nil },
					Verify: func(context.Context) error { return nil }},
			}, nil
		}); err != nil {
			return err
		}
		return r.Stage("later", func(ctx context.Context, w *World) ([]Change, error) {
			v, _ := key.Get(ctx, w, func(context.Context) (string, error) { return "observed", nil })
			r.Set("later_saw", v)
			return nil, nil
		})
	}
	check := exec1(t, testModule(run), &Invocation{CheckMode: true})
	if check["failed"] == true || check["changed"] != true || check["later_saw"] != "pending" ||
		!strings.Contains(fmt.Sprint(check["changes"]), "authorize the key pve02 will create") {
		t.Errorf("check mode: %v", check)
	}
	real := exec1(t, testModule(run), &Invocation{})
	msg, _ := real["msg"].(string)
	if real["failed"] != true || real["changed"] != false || applied != 0 ||
		!strings.Contains(msg, "prediction of check mode") || !strings.Contains(msg, "bug") {
		t.Errorf("real run: applied %d, %v", applied, real)
	}
	if c := PredictedOnly("x", "y", nil); !c.IsPredictedOnly() || (Change{}).IsPredictedOnly() {
		t.Errorf("IsPredictedOnly")
	}
}
