package ansible

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"strings"
	"testing"
	"time"
)

// fakeTarget is a key/value "system" a test module manages, counting
// writes so tests can prove check mode writes nothing.
type fakeTarget struct {
	state   map[string]string
	applies int
	// readBackLies makes Verify see this value instead of what was written.
	readBackLies map[string]string
}

func (f *fakeTarget) read(k string) string {
	if v, ok := f.readBackLies[k]; ok {
		return v
	}
	return f.state[k]
}

// fact is how stages read a key of the fake target: predicted in check
// mode when an earlier change predicted it, observed otherwise.
func (f *fakeTarget) fact(ctx context.Context, w *World, k string) string {
	v, _ := Key[string]("key:"+k).Get(ctx, w, func(context.Context) (string, error) { return f.state[k], nil })
	return v
}

// planSet is one stage: set each key to its wanted value.
func (f *fakeTarget) planSet(want map[string]string) StageFunc {
	return func(ctx context.Context, w *World) ([]Change, error) {
		var out []Change
		for _, k := range sortedKeys(want) {
			k, v := k, want[k]
			if f.fact(ctx, w, k) == v {
				continue
			}
			out = append(out, Change{
				ID:      "key:" + k,
				Summary: "set " + k,
				Diff:    TextDiff(k, f.state[k], v),
				Apply: func(context.Context) error {
					f.applies++
					f.state[k] = v
					return nil
				},
				Verify: func(context.Context) error {
					if got := f.read(k); got != v {
						return errors.New(k + " reads back as " + got)
					}
					return nil
				},
				Predict: func(w *World) { Key[string]("key:"+k).Predict(w, v) },
			})
		}
		return out, nil
	}
}

// planDerived is a stage that depends on an earlier one: c must be a's
// value followed by "!". In check mode it must see a as the first stage
// would leave it.
func (f *fakeTarget) planDerived(seen *string) StageFunc {
	return func(ctx context.Context, w *World) ([]Change, error) {
		a := f.fact(ctx, w, "a")
		*seen = a
		return f.planSet(map[string]string{"c": a + "!"})(ctx, w)
	}
}

func testModule(run func(r *Run) error) *Module {
	return &Module{
		Name: "gopve_unit",
		Spec: Spec{Options: map[string]Option{
			"name":     {Type: TypeStr, Description: []string{"x"}},
			"password": {Type: TypeStr, NoLog: true, EnvFallback: []string{"UNIT_PASSWORD"}, Description: []string{"x"}},
			"count":    {Type: TypeInt, Description: []string{"x"}},
		}},
		Run: run,
	}
}

func noEnv(string) (string, bool) { return "", false }

func exec1(t *testing.T, m *Module, inv *Invocation) map[string]any {
	t.Helper()
	if inv.Params == nil {
		inv.Params = map[string]any{}
	}
	res := Execute(context.Background(), m, inv, noEnv, io.Discard)
	if _, err := json.Marshal(res); err != nil {
		t.Fatalf("result does not encode: %v", err)
	}
	return res
}

func TestDriverModes(t *testing.T) {
	tests := []struct {
		name        string
		check, diff bool
		initial     map[string]string
		wantChanged bool
		wantApplies int
		wantChanges []string
		wantDiffs   int
		wantSeenA   string // a as the second stage sees it
		wantMsg     string
	}{
		{name: "check mode predicts and writes nothing", check: true, diff: true, initial: map[string]string{},
			wantChanged: true, wantApplies: 0, wantChanges: []string{"set a", "set b", "set c"}, wantDiffs: 3,
			wantSeenA: "1", wantMsg: "3 changes would be made (check mode): set a; set b; set c"},
		{name: "real run applies and verifies", initial: map[string]string{},
			wantChanged: true, wantApplies: 3, wantChanges: []string{"set a", "set b", "set c"},
			wantSeenA: "1", wantMsg: "3 changes applied and verified: set a; set b; set c"},
		{name: "diff only in diff mode", diff: true, initial: map[string]string{"a": "1"},
			wantChanged: true, wantApplies: 2, wantChanges: []string{"set b", "set c"}, wantDiffs: 2, wantSeenA: "1"},
		{name: "nothing to do", initial: map[string]string{"a": "1", "b": "2", "c": "1!"},
			wantChanged: false, wantChanges: []string{}, wantSeenA: "1", wantMsg: "nothing to change"},
		{name: "check mode with nothing to do", check: true, initial: map[string]string{"a": "1", "b": "2", "c": "1!"},
			wantChanged: false, wantChanges: []string{}, wantSeenA: "1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeTarget{state: tc.initial}
			var seenA string
			m := testModule(func(r *Run) error {
				if err := r.Stage("first", f.planSet(map[string]string{"a": "1", "b": "2"})); err != nil {
					return err
				}
				return r.Stage("second", f.planDerived(&seenA))
			})
			res := exec1(t, m, &Invocation{CheckMode: tc.check, Diff: tc.diff})
			if res["failed"] != nil {
				t.Fatalf("failed: %v", res["msg"])
			}
			if res["changed"] != tc.wantChanged {
				t.Errorf("changed = %v, want %v", res["changed"], tc.wantChanged)
			}
			if f.applies != tc.wantApplies {
				t.Errorf("Apply called %d times, want %d", f.applies, tc.wantApplies)
			}
			if got := stringsOfAny(res["changes"]); strings.Join(got, "|") != strings.Join(tc.wantChanges, "|") {
				t.Errorf("changes = %q, want %q", got, tc.wantChanges)
			}
			diffs, _ := res["diff"].([]any)
			if len(diffs) != tc.wantDiffs {
				t.Errorf("%d diffs, want %d: %v", len(diffs), tc.wantDiffs, res["diff"])
			}
			if seenA != tc.wantSeenA {
				t.Errorf("second stage saw a=%q, want %q (the world as the first stage leaves it)", seenA, tc.wantSeenA)
			}
			if tc.wantMsg != "" && res["msg"] != tc.wantMsg {
				t.Errorf("msg = %q, want %q", res["msg"], tc.wantMsg)
			}
			if _, ok := res["changes_not_run"]; ok {
				t.Errorf("changes_not_run in a successful result: %v", res)
			}
		})
	}
}

// TestPredictionIsTheOutcome compares outcomes, not plans: the state a real
// run leaves behind must be the state check mode predicted, for stages that
// depend on each other, from several starting states.
func TestPredictionIsTheOutcome(t *testing.T) {
	for _, initial := range []map[string]string{
		{}, {"a": "1"}, {"a": "0", "c": "0!"}, {"a": "1", "b": "2", "c": "1!"}, {"b": "9", "c": "1!"},
	} {
		stages := func(f *fakeTarget) func(r *Run) error {
			var seen string
			return func(r *Run) error {
				if err := r.Stage("first", f.planSet(map[string]string{"a": "1", "b": "2"})); err != nil {
					return err
				}
				return r.Stage("second", f.planDerived(&seen))
			}
		}
		// check mode: the predicted outcome is the observed state overlaid
		// with every predicted fact
		checked := &fakeTarget{state: maps.Clone(initial)}
		var world *World
		m := testModule(func(r *Run) error {
			world = r.World()
			return stages(checked)(r)
		})
		if res := exec1(t, m, &Invocation{CheckMode: true}); res["failed"] != nil {
			t.Fatal(res["msg"])
		}
		predicted := maps.Clone(initial)
		for _, fact := range world.Facts() {
			v, _ := Key[string](fact).Predicted(world)
			predicted[strings.TrimPrefix(fact, "key:")] = v
		}
		if !maps.Equal(checked.state, initial) {
			t.Fatalf("check mode changed the target: %v → %v", initial, checked.state)
		}
		real := &fakeTarget{state: maps.Clone(initial)}
		if res := exec1(t, testModule(stages(real)), &Invocation{}); res["failed"] != nil {
			t.Fatal(res["msg"])
		}
		if !maps.Equal(real.state, predicted) {
			t.Errorf("from %v: real run left %v, check mode predicted %v", initial, real.state, predicted)
		}
	}
}

func stringsOfAny(v any) []string {
	out := []string{}
	list, _ := v.([]any)
	for _, e := range list {
		out = append(out, e.(string))
	}
	return out
}

func TestDriverFailures(t *testing.T) {
	tests := []struct {
		name        string
		run         func(f *fakeTarget) func(r *Run) error
		lies        map[string]string
		wantMsg     []string // substrings
		wantChanged bool
		wantState   map[string]string
		// what became of each planned change (real run failures)
		wantVerified, wantUnverified, wantNotRun []string
	}{
		{
			name: "verify failure fails the task and says what was read back",
			lies: map[string]string{"b": "stale"},
			run: func(f *fakeTarget) func(r *Run) error {
				return func(r *Run) error {
					return r.Stage("s", f.planSet(map[string]string{"a": "1", "b": "2", "c": "3"}))
				}
			},
			wantMsg:      []string{`applied "set b"`, "b reads back as stale"},
			wantChanged:  true,
			wantState:    map[string]string{"a": "1", "b": "2"},
			wantVerified: []string{"set a"}, wantUnverified: []string{"set b"}, wantNotRun: []string{"set c"},
		},
		{
			name: "a failed stage stops later stages even if the module ignores the error",
			lies: map[string]string{"a": "nope"},
			run: func(f *fakeTarget) func(r *Run) error {
				return func(r *Run) error {
					_ = r.Stage("s1", f.planSet(map[string]string{"a": "1"}))
					_ = r.Stage("s2", f.planSet(map[string]string{"z": "9"}))
					return nil
				}
			},
			wantMsg: []string{`applied "set a"`, "a reads back as nope"},
			// applied but not read back: the change is made all the same
			wantChanged:    true,
			wantState:      map[string]string{"a": "1"},
			wantUnverified: []string{"set a"},
		},
		{
			name: "apply failure",
			run: func(f *fakeTarget) func(r *Run) error {
				return func(r *Run) error {
					return r.Stage("s", func(context.Context, *World) ([]Change, error) {
						return []Change{{ID: "x", Summary: "format the disk", Apply: func(context.Context) error { return errors.New("device busy") },
							Verify: func(context.Context) error { return nil }},
							{ID: "y", Summary: "mount it", Apply: func(context.Context) error { return nil }, Verify: func(context.Context) error { return nil }}}, nil
					})
				}
			},
			// Apply was called and did not promise it left nothing behind
			wantMsg:        []string{"could not format the disk: device busy"},
			wantChanged:    true,
			wantState:      map[string]string{},
			wantUnverified: []string{"format the disk"}, wantNotRun: []string{"mount it"},
		},
		{
			name: "apply failure that left nothing behind",
			run: func(f *fakeTarget) func(r *Run) error {
				return func(r *Run) error {
					return r.Stage("s", func(context.Context, *World) ([]Change, error) {
						return []Change{{ID: "x", Summary: "rebuild the initramfs",
							Apply: func(context.Context) error {
								return NothingChanged(errors.New("update-initramfs failed; zfs.conf restored"))
							},
							Verify: func(context.Context) error { return nil }}}, nil
					})
				}
			},
			wantMsg:    []string{"could not rebuild the initramfs (nothing was changed): update-initramfs failed; zfs.conf restored"},
			wantState:  map[string]string{},
			wantNotRun: []string{"rebuild the initramfs"},
		},
		{
			name: "a change without Verify is refused before anything is applied",
			run: func(f *fakeTarget) func(r *Run) error {
				return func(r *Run) error {
					return r.Stage("s", func(context.Context, *World) ([]Change, error) {
						return []Change{{ID: "x", Summary: "unverifiable", Apply: func(context.Context) error { f.applies++; return nil }}}, nil
					})
				}
			},
			wantMsg:   []string{`change "x"`, "has no Verify", "bug"},
			wantState: map[string]string{},
		},
		{
			name: "duplicate change IDs are a bug",
			run: func(f *fakeTarget) func(r *Run) error {
				return func(r *Run) error {
					if err := r.Stage("s1", f.planSet(map[string]string{"a": "1"})); err != nil {
						return err
					}
					f.state["a"] = "0"
					return r.Stage("s2", f.planSet(map[string]string{"a": "1"}))
				}
			},
			wantMsg:      []string{"already used"},
			wantChanged:  true,
			wantState:    map[string]string{"a": "0"},
			wantVerified: []string{"set a"},
		},
		{
			name: "observe error",
			run: func(f *fakeTarget) func(r *Run) error {
				return func(r *Run) error {
					return r.Stage("s", func(context.Context, *World) ([]Change, error) {
						return nil, errors.New("cannot read /etc/apt/sources.list: permission denied")
					})
				}
			},
			wantMsg:   []string{"cannot read /etc/apt/sources.list"},
			wantState: map[string]string{},
		},
		{
			name: "module error",
			run: func(f *fakeTarget) func(r *Run) error {
				return func(r *Run) error { return errors.New("pool tank is degraded") }
			},
			wantMsg:   []string{"pool tank is degraded"},
			wantState: map[string]string{},
		},
		{
			name: "setting a reserved key is a bug that fails the task",
			run: func(f *fakeTarget) func(r *Run) error {
				return func(r *Run) error { r.Set("changed", true); return nil }
			},
			wantMsg:   []string{"reserved result key changed", "panic"},
			wantState: map[string]string{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeTarget{state: map[string]string{}, readBackLies: tc.lies}
			res := exec1(t, testModule(tc.run(f)), &Invocation{})
			if res["failed"] != true {
				t.Fatalf("not failed: %v", res)
			}
			msg, _ := res["msg"].(string)
			for _, want := range tc.wantMsg {
				if !strings.Contains(msg, want) {
					t.Errorf("msg %q lacks %q", msg, want)
				}
			}
			if res["changed"] != tc.wantChanged {
				t.Errorf("changed = %v, want %v", res["changed"], tc.wantChanged)
			}
			for key, want := range map[string][]string{"changes_verified": tc.wantVerified,
				"changes_unverified": tc.wantUnverified, "changes_not_run": tc.wantNotRun} {
				got, ok := res[key]
				if !ok {
					t.Errorf("failed result lacks %s: %v", key, res)
				}
				if strings.Join(stringsOfAny(got), "|") != strings.Join(want, "|") {
					t.Errorf("%s = %v, want %q", key, got, want)
				}
			}
			if made := append(append([]string{}, tc.wantVerified...), tc.wantUnverified...); strings.Join(stringsOfAny(res["changes"]), "|") != strings.Join(made, "|") {
				t.Errorf("changes = %v, want the made ones %q", res["changes"], made)
			}
			if len(f.state) != len(tc.wantState) {
				t.Errorf("state = %v, want %v", f.state, tc.wantState)
			}
			for k, v := range tc.wantState {
				if f.state[k] != v {
					t.Errorf("state = %v, want %v", f.state, tc.wantState)
				}
			}
		})
	}
}

func TestMaskingEverywhere(t *testing.T) {
	const secret = "Sup3r-s3cret"
	const runtimeSecret = "tok-from-file-42"
	var logs bytes.Buffer
	m := testModule(func(r *Run) error {
		r.AddSecret(runtimeSecret)
		r.Log(0, "logging in with %s and %s", secret, runtimeSecret)
		r.Set("nested", map[string]any{"deep": []any{"x" + secret + "y", map[string]any{"k": secret}}, secret: "as a key"})
		r.Set("token_seen", runtimeSecret)
		r.Set("typed", struct{ Field string }{Field: "pw=" + secret})
		r.Warn("the password " + secret + " is weak")
		if err := r.Stage("s", func(context.Context, *World) ([]Change, error) {
			return []Change{{ID: "f", Summary: "write " + secret + " to the file",
				Diff:   &Diff{Before: "old " + secret, After: map[string]any{"password": secret}},
				Apply:  func(context.Context) error { return nil },
				Verify: func(context.Context) error { return errors.New("file holds " + secret + " and " + runtimeSecret) },
			}}, nil
		}); err != nil {
			return err
		}
		return nil
	})
	for _, source := range []string{"param", "env fallback"} {
		t.Run(source, func(t *testing.T) {
			logs.Reset()
			inv := &Invocation{Params: map[string]any{"name": "user " + secret}, Diff: true, CheckMode: true}
			env := noEnv
			if source == "param" {
				inv.Params["password"] = secret
			} else {
				env = func(k string) (string, bool) {
					if k == "UNIT_PASSWORD" {
						return secret, true
					}
					return "", false
				}
			}
			res := Execute(context.Background(), m, inv, env, &logs)
			out, _ := json.Marshal(res)
			if bytes.Contains(out, []byte(secret)) || bytes.Contains(out, []byte(runtimeSecret)) {
				t.Fatalf("secret leaked in result: %s", out)
			}
			if strings.Contains(logs.String(), secret) || strings.Contains(logs.String(), runtimeSecret) {
				t.Fatalf("secret leaked in log: %s", logs.String())
			}
			if !strings.Contains(logs.String(), "logging in with ******** and ********") {
				t.Errorf("log not masked as expected: %q", logs.String())
			}
			args := res["invocation"].(map[string]any)["module_args"].(map[string]any)
			if args["password"] != noLogPlaceholder {
				t.Errorf("invocation password = %v", args["password"])
			}
			if args["name"] != "user ********" {
				t.Errorf("invocation name = %v", args["name"])
			}
			if res["token_seen"] != noLogPlaceholder {
				t.Errorf("token_seen = %v", res["token_seen"])
			}
			for _, want := range []string{`"x********y"`, `"********":"as a key"`, `"pw=********"`, `"write ******** to the file"`,
				`"old ********"`, `"the password ******** is weak"`} {
				if !bytes.Contains(out, []byte(want)) {
					t.Errorf("result lacks %s: %s", want, out)
				}
			}
		})
	}
	// A real run: the verify error carries both secrets.
	inv := &Invocation{Params: map[string]any{"password": secret}}
	res := Execute(context.Background(), m, inv, noEnv, io.Discard)
	if msg := res["msg"].(string); !strings.Contains(msg, "file holds ******** and ********") {
		t.Errorf("verify failure msg not masked: %q", msg)
	}
}

func TestInvocationGate(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name   string
		inject *bool
		want   bool
	}{{"absent (<= 2.20)", nil, true}, {"true", &yes, true}, {"false (2.21 default)", &no, false}} {
		t.Run(tc.name, func(t *testing.T) {
			res := exec1(t, testModule(func(*Run) error { return nil }), &Invocation{InjectInvocation: tc.inject, Params: map[string]any{"count": "3"}})
			inv, ok := res["invocation"].(map[string]any)
			if ok != tc.want {
				t.Fatalf("invocation present = %v, want %v", ok, tc.want)
			}
			if ok && inv["module_args"].(map[string]any)["count"] != 3 {
				t.Errorf("module_args not coerced: %v", inv)
			}
		})
	}
}

func TestPanicBecomesFailure(t *testing.T) {
	var logs bytes.Buffer
	m := testModule(func(r *Run) error {
		r.Step("reading the pool")
		panic("index out of range [3] with length 3")
	})
	res := Execute(context.Background(), m, &Invocation{Params: map[string]any{}}, noEnv, &logs)
	msg, _ := res["msg"].(string)
	if res["failed"] != true || !strings.Contains(msg, "index out of range [3]") || !strings.Contains(msg, "while reading the pool") {
		t.Fatalf("result = %v", res)
	}
	if strings.Contains(msg, "goroutine") || !strings.Contains(logs.String(), "goroutine") {
		t.Errorf("stack must go to stderr only; msg %q, stderr %q", msg, logs.String())
	}
}

func TestTimeoutNamesTheStep(t *testing.T) {
	m := testModule(func(r *Run) error {
		return r.Stage("wait", func(ctx context.Context, _ *World) ([]Change, error) {
			r.Step("waiting for task UPID:pve01:1")
			<-ctx.Done()
			return nil, ctx.Err()
		})
	})
	start := time.Now()
	res := exec1(t, m, &Invocation{Params: map[string]any{"timeout": "0.05"}})
	if time.Since(start) > 5*time.Second {
		t.Fatal("timeout option ignored")
	}
	msg, _ := res["msg"].(string)
	if res["failed"] != true || !strings.Contains(msg, "timed out after 50ms while waiting for task UPID:pve01:1") {
		t.Fatalf("result = %v", res)
	}
}

func TestDecodeAndResultData(t *testing.T) {
	type params struct {
		Name     string `ansible:"name"`
		Password string `ansible:"password"`
		Count    *int   `ansible:"count"`
	}
	var got params
	m := testModule(func(r *Run) error {
		if err := r.Decode(&got); err != nil {
			return err
		}
		r.Set("msg", "custom")
		r.Set("answer", 42)
		r.Deprecate("old option", "2.0.0")
		return nil
	})
	res := exec1(t, m, &Invocation{Params: map[string]any{"name": "n", "count": "7"}})
	if got.Name != "n" || got.Count == nil || *got.Count != 7 {
		t.Fatalf("decoded %+v", got)
	}
	if res["msg"] != "custom" || res["answer"] != 42 || res["changed"] != false {
		t.Errorf("result = %v", res)
	}
	deps, _ := res["deprecations"].([]any)
	if len(deps) != 1 || deps[0].(map[string]any)["collection_name"] != "gopve.proxmox" {
		t.Errorf("deprecations = %v", res["deprecations"])
	}
	// An unset pointer option stays nil.
	got = params{}
	exec1(t, m, &Invocation{Params: map[string]any{"name": "n"}})
	if got.Count != nil {
		t.Errorf("count = %v, want nil", *got.Count)
	}
}

// SetRevealed (issue 15 item 9: a key PVE generated): to a no_log task the
// value is in the result under its key only, and masked in logs, msg,
// warnings, diff and every other key; to any other task it is masked under
// its key too (Ansible would print it at -v and -vvv).
func TestSetRevealed(t *testing.T) {
	const generated = "generated-key-7f3a"
	var logs bytes.Buffer
	var revealed bool
	m := testModule(func(r *Run) error {
		revealed = r.SetRevealed("encryption_key", generated)
		r.Log(0, "PVE answered %s", generated)
		r.Set("other", "copy of "+generated)
		r.Warn("back up " + generated)
		return errors.New("failed after " + generated)
	})
	res := Execute(context.Background(), m, &Invocation{Params: map[string]any{"name": "x"}, Diff: true, NoLog: true}, noEnv, &logs)
	if res["encryption_key"] != generated || !revealed {
		t.Fatalf("encryption_key = %v (revealed %v), want the generated value", res["encryption_key"], revealed)
	}
	rest := map[string]any{}
	for k, v := range res {
		if k != "encryption_key" {
			rest[k] = v
		}
	}
	out, _ := json.Marshal(rest)
	if bytes.Contains(out, []byte(generated)) || strings.Contains(logs.String(), generated) {
		t.Errorf("the revealed value leaked elsewhere: %s\n%s", out, logs.String())
	}
	if !bytes.Contains(out, []byte(secretMask)) {
		t.Errorf("nothing was masked: %s", out)
	}

	logs.Reset()
	res = Execute(context.Background(), m, &Invocation{Params: map[string]any{"name": "x"}, Diff: true}, noEnv, &logs)
	all, _ := json.Marshal(res)
	if res["encryption_key"] != noLogPlaceholder || revealed || bytes.Contains(all, []byte(generated)) || strings.Contains(logs.String(), generated) {
		t.Errorf("without no_log: encryption_key = %v (revealed %v), want the placeholder and the value nowhere:\n%s", res["encryption_key"], revealed, all)
	}
}
