package ansible

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/host"
)

// The watchdog's grace counts from the end of the last Uninterruptible
// section: a dpkg transaction that ends just before the watchdog looks
// again leaves the module the time to return on its own, instead of the
// watchdog reporting a timeout over a result being written (the race
// TestUninterruptibleOutlivesTheDeadline once lost, its 1.5 s section
// ending at the watchdog's third look).
func TestWatchdogGraceCountsFromTheSectionsEnd(t *testing.T) {
	const grace = 10 * time.Second
	r := &Run{}
	if w := r.criticalWait(grace); w != 0 {
		t.Errorf("no section ever: wait %s, want 0", w)
	}
	r.critical = 1
	if w := r.criticalWait(grace); w != grace {
		t.Errorf("a section running: wait %s, want the whole grace", w)
	}
	r.critical, r.criticalEnd = 0, time.Now().Add(-2*time.Second)
	if w := r.criticalWait(grace); w < 7*time.Second || w > 8*time.Second {
		t.Errorf("a section ended 2 s ago: wait %s, want about 8 s", w)
	}
	r.criticalEnd = time.Now().Add(-grace - time.Second)
	if w := r.criticalWait(grace); w != 0 {
		t.Errorf("a section ended more than a grace ago: wait %s, want 0", w)
	}
}

// An Uninterruptible section (a dpkg transaction) is never cut short: its
// context ignores the deadline, the watchdog waits for it, and the task
// then fails naming the step. The section must have begun before the
// deadline and the watchdog's grace are over, or the watchdog rightly
// fires: 300 ms each leaves a loaded CI machine room to get there (at
// 50 ms each, go test -p 3 next to the lab tests once did not).
func TestUninterruptibleOutlivesTheDeadline(t *testing.T) {
	var finished atomic.Bool
	var sawCancel atomic.Bool
	mods := []Module{{Name: "upgrade", Timeout: 300 * time.Millisecond, Params: struct{}{}, Run: func(r *Run) error {
		return r.Stage("packages", func(ctx context.Context, _ *World) ([]Change, error) {
			return []Change{{ID: "up", Summary: "dist-upgrade pve-manager",
				Apply: func(ctx context.Context) error {
					return Uninterruptible(ctx, "the dpkg transaction", func(ctx context.Context) error {
						time.Sleep(1500 * time.Millisecond) // well past deadline + watchdog grace
						sawCancel.Store(ctx.Err() != nil)
						finished.Store(true)
						return nil
					})
				},
				Verify: func(context.Context) error { return nil }}}, nil
		})
	}}}
	var out bytes.Buffer
	exited := make(chan int, 1)
	code := mainWith(context.Background(), mods, []string{"/x/upgrade", writeTemp(t, `{}`)}, noEnv, io.Discard, &printer{w: &out}, 300*time.Millisecond, func(c int) { exited <- c })
	if !finished.Load() {
		t.Fatal("the result was printed before the uninterruptible section finished")
	}
	if sawCancel.Load() {
		t.Error("the section's context was cancelled by the deadline")
	}
	res := mustOneObject(t, out.Bytes())
	msg, _ := res["msg"].(string)
	if code != 1 || !strings.Contains(msg, "timed out after 300ms while applying dist-upgrade pve-manager") || !strings.Contains(msg, "the dpkg transaction was left to finish") {
		t.Errorf("code %d, msg %q", code, msg)
	}
	if res["changed"] != true || len(stringsOfAny(res["changes_unverified"])) != 1 {
		t.Errorf("the finished transaction must count as made: %v", res)
	}
	select {
	case <-exited:
		t.Error("the watchdog fired although the module returned")
	default:
	}
}

// The timeout option is the runtime's: every module has it, documented,
// with the module's default.
func TestTimeoutOptionForEveryModule(t *testing.T) {
	m := &Module{Name: "pve_x", Timeout: 90 * time.Second, Params: struct{}{}, Run: func(r *Run) error {
		<-r.Context().Done()
		return r.Context().Err()
	}}
	if !strings.Contains(m.Documentation(), "timeout:") || !strings.Contains(m.Documentation(), "default 90 (1m30s)") {
		t.Errorf("timeout not documented:\n%s", m.Documentation())
	}
	start := time.Now()
	res := exec1(t, m, &Invocation{Params: map[string]any{"timeout": 0.05}})
	if time.Since(start) > 5*time.Second || !strings.Contains(res["msg"].(string), "timed out after 50ms") {
		t.Errorf("timeout option ignored: %v", res["msg"])
	}
	for _, bad := range []any{"soon", -5} {
		if res := exec1(t, m, &Invocation{Params: map[string]any{"timeout": bad}}); res["failed"] != true || !strings.Contains(res["msg"].(string), "timeout") {
			t.Errorf("bad timeout %v accepted: %v", bad, res)
		}
	}
}

// Decode refuses a params struct that does not match the spec, both ways,
// as a bug; the runtime's own options are not decoded.
func TestDecodeMatchesTheSpec(t *testing.T) {
	type tooFew struct {
		Name string `ansible:"name"`
	}
	type tooMany struct {
		Name     string `ansible:"name"`
		Password string `ansible:"password"`
		Count    int    `ansible:"count"`
		Colour   string `ansible:"colour"`
	}
	type exact struct {
		Name     string `ansible:"name"`
		Password string `ansible:"password"`
		Count    int    `ansible:"count"`
	}
	for _, tc := range []struct {
		out  any
		want string
	}{
		{&tooFew{}, "option count has no field"},
		{&tooMany{}, "field tagged colour is no option"},
		{tooFew{}, "needs a pointer"},
		{&exact{}, ""},
	} {
		res := exec1(t, testModule(func(r *Run) error { return r.Decode(tc.out) }), &Invocation{Params: map[string]any{"name": "n", "timeout": 9}})
		msg, _ := res["msg"].(string)
		if tc.want == "" {
			if res["failed"] == true {
				t.Errorf("%T: %s", tc.out, msg)
			}
			continue
		}
		if res["failed"] != true || !strings.Contains(msg, tc.want) || !strings.Contains(msg, "bug") {
			t.Errorf("%T: msg %q, want %q", tc.out, msg, tc.want)
		}
	}
}

// A panic outside the module (here in the environment lookup during
// validation) prints the no_log value masked, on stderr and in the result.
func TestPanicOutsideTheModuleIsMasked(t *testing.T) {
	const secret = "pw-in-a-panic-77"
	env := func(k string) (string, bool) { panic("env lookup failed near " + secret) }
	mods := []Module{{Name: "m", Params: struct{}{}, Spec: Spec{Options: map[string]Option{
		"password": {NoLog: true, Description: []string{"p"}},
		"token":    {NoLog: true, EnvFallback: []string{"TOKEN"}, Description: []string{"t"}},
	}}, Run: func(*Run) error { return nil }}}
	var out, stderr bytes.Buffer
	mainWith(context.Background(), mods, []string{"/x/m", writeTemp(t, `{"password": "`+secret+`"}`)}, env, &stderr, &printer{w: &out}, time.Second, func(int) {})
	res := mustOneObject(t, out.Bytes())
	if res["failed"] != true || !strings.Contains(stderr.String(), "internal panic") {
		t.Fatalf("no panic reported: %v\n%s", res, stderr.String())
	}
	if strings.Contains(out.String(), secret) || strings.Contains(stderr.String(), secret) {
		t.Errorf("secret leaked:\nstdout %s\nstderr %s", out.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "near ********") {
		t.Errorf("stderr not masked as expected: %s", stderr.String())
	}
}

// A write in check mode through the read-only runner or root is a bug the
// task reports loudly, not an error a stage could swallow.
func TestCheckModeWriteFailsAsABug(t *testing.T) {
	m := testModule(func(r *Run) error {
		runner := host.ReadOnly(&host.ExecRunner{})
		return r.Stage("s", func(ctx context.Context, _ *World) ([]Change, error) {
			if _, err := runner.Run(ctx, host.Command{Name: "systemctl", Args: []string{"restart", "pveproxy.service"}}); err != nil {
				return nil, nil // a careless stage swallowing the error
			}
			return nil, nil
		})
	})
	res := exec1(t, m, &Invocation{CheckMode: true})
	msg, _ := res["msg"].(string)
	if res["failed"] != true || !strings.Contains(msg, "check mode must not change the node") || !strings.Contains(msg, "systemctl restart pveproxy.service") || !strings.Contains(msg, "bug") {
		t.Errorf("result = %v", res)
	}
}

// A watchdog reporting while Apply still runs (a module ignoring its
// deadline) reports the change as made: Apply was called.
func TestWatchdogCountsTheRunningApply(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	mods := []Module{{Name: "stuck", Timeout: 30 * time.Millisecond, Params: struct{}{}, Run: func(r *Run) error {
		return r.Stage("s", func(context.Context, *World) ([]Change, error) {
			return []Change{{ID: "x", Summary: "zpool create tank",
				Apply:  func(context.Context) error { <-release; return nil }, // ignores its context
				Verify: func(context.Context) error { return nil }}}, nil
		})
	}}}
	var out bytes.Buffer
	mainWith(context.Background(), mods, []string{"/x/stuck", writeTemp(t, `{}`)}, noEnv, io.Discard, &printer{w: &out}, 20*time.Millisecond, func(int) {})
	res := mustOneObject(t, out.Bytes())
	if res["failed"] != true || res["changed"] != true || strings.Join(stringsOfAny(res["changes_unverified"]), "|") != "zpool create tank" {
		t.Errorf("result = %v", res)
	}
}
