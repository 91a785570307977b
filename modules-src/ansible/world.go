package ansible

import (
	"context"
	"fmt"
	"sync"
)

// World is the state of the target as the run's later stages must see it.
//
// In a real run every planned change has been applied and verified before
// the next stage observes, so the world is simply the target: stages read it
// with their observe functions and World holds nothing.
//
// In check mode nothing is applied, so observing the target would show the
// world as it was before the run. Instead, every planned change carries a
// Predict function that records, in World, what the target will look like
// once the change is made; a later stage reading a fact gets that predicted
// value, and only facts no planned change touched are observed on the
// target. This is how a later stage plans against the world as it would be
// (create then join, clone then configure, upgrade then patch) without
// knowing which earlier change produced the fact.
//
// Facts are named by typed keys (Key[T]); a module declares one key per
// fact it shares between stages, e.g.
//
//	var poolProps = func(pool string) ansible.Key[map[string]string] {
//	    return ansible.Key[map[string]string]("zfs:props:" + pool)
//	}
//
//	// stage 1 plans the create and predicts its outcome
//	ch.Predict = func(w *ansible.World) { poolProps(name).Predict(w, wanted) }
//
//	// stage 2 reads the props as they would be
//	cur, err := poolProps(name).Get(ctx, w, func(ctx context.Context) (map[string]string, error) {
//	    return readProps(ctx, name)
//	})
//
// Values are stored as given: a Predict must not hand over a map or slice it
// keeps modifying.
type World struct {
	mu        sync.Mutex
	predicted map[string]any
	order     []string // keys in the order they were first predicted
}

func newWorld() *World { return &World{predicted: map[string]any{}} }

// Key names one fact of the world and fixes its Go type. Keys are plain
// strings, so parameterised facts ("zfs:props:" + pool) are built by
// conversion; two keys with the same name must have the same type.
type Key[T any] string

// Predict records v as the value this fact will have once the change being
// predicted is made. Only Change.Predict functions call it; the driver calls
// them in check mode only.
func (k Key[T]) Predict(w *World, v T) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.predicted[string(k)]; !ok {
		w.order = append(w.order, string(k))
	}
	w.predicted[string(k)] = v
}

// Predicted returns the predicted value of the fact, if a planned change
// predicted one. It panics when the stored value has another type (two keys
// of the same name with different types: a bug in the module).
func (k Key[T]) Predicted(w *World) (T, bool) {
	var zero T
	if w == nil {
		return zero, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.predicted[string(k)]
	if !ok {
		return zero, false
	}
	t, ok := v.(T)
	if !ok {
		panic(fmt.Sprintf("ansible: fact %q was predicted as %T but read as %T; two keys share a name", string(k), v, zero))
	}
	return t, true
}

// Get returns the fact as the stage must plan against it: the predicted
// value when a planned change predicted one, else what observe reads on the
// target now.
func (k Key[T]) Get(ctx context.Context, w *World, observe func(context.Context) (T, error)) (T, error) {
	if v, ok := k.Predicted(w); ok {
		return v, nil
	}
	return observe(ctx)
}

// Facts lists the names of the predicted facts in the order they were first
// predicted (for tests and debugging).
func (w *World) Facts() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.order...)
}
