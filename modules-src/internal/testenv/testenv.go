// Package testenv is the one place a test may decide that its environment
// lacks something (root, a tool, the lab, a long run) and stop.
//
// On a developer's machine such a test is skipped, with the reason. In CI a
// skip would be a green result that proved nothing, so .ci/run exports
// GOPVE_REQUIRE_LAB=1 and every one of these calls fails the test instead,
// naming what was missing. Tests never call t.Skip directly (a test in this
// package enforces that for modules-src); testscript scripts run through
// [Script], whose `skip` obeys the same switch.
//
// Tests only: the shipped binary must not import this package
// (modules-src/cmd/gopve checks its dependencies).
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// Switch is the environment variable that turns skips into failures.
const Switch = "GOPVE_REQUIRE_LAB"

// Required reports whether every prerequisite of every test must be there
// (GOPVE_REQUIRE_LAB set to anything but "" or "0").
func Required() bool {
	v := os.Getenv(Switch)
	return v != "" && v != "0"
}

// Skip stops t because its environment lacks what args describe: a skip,
// or a failure when [Required].
func Skip(t testing.TB, args ...any) {
	t.Helper()
	stop(t, fmt.Sprint(args...))
}

// Skipf is [Skip] with a format.
func Skipf(t testing.TB, format string, args ...any) {
	t.Helper()
	stop(t, fmt.Sprintf(format, args...))
}

func stop(t testing.TB, why string) {
	t.Helper()
	if Required() {
		t.Fatalf("%s — a missing prerequisite is a failure here (%s=%s)", why, Switch, os.Getenv(Switch))
	}
	t.Skip(why)
}

// NeedRoot stops t unless it runs as root; why says what needs it.
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Skipf(t, "not root: %s", why)
	}
}

// NeedTools stops t unless every tool is on PATH (make deps installs them).
func NeedTools(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			Skipf(t, "%s is missing (make deps): %v", tool, err)
		}
	}
}

// NeedLong stops t under `go test -short`; why says what makes it long.
// CI never runs -short, so with the switch set -short is a failure too.
func NeedLong(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		Skipf(t, "-short: %s", why)
	}
}

// Script runs testscript scripts like testscript.Run, except that a
// script's `skip` goes through [Skip]: it fails when [Required].
// (A conditional `stop` would end a script green without running the
// rest: scripts use `skip` for a missing prerequisite, never `stop`.)
func Script(t *testing.T, p testscript.Params) {
	t.Helper()
	if d, ok := t.Deadline(); ok && p.Deadline.IsZero() {
		p.Deadline = d
	}
	testscript.RunT(scriptT{t}, p)
}

// scriptT is the testscript.T of [Script].
type scriptT struct{ *testing.T }

func (s scriptT) Skip(args ...any) {
	s.Helper()
	Skip(s.T, args...)
}

func (s scriptT) Run(name string, f func(testscript.T)) {
	s.T.Run(name, func(t *testing.T) { f(scriptT{t}) })
}

func (s scriptT) Verbose() bool { return testing.Verbose() }
