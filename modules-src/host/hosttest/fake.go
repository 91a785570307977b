// Package hosttest provides a scripted fake host.Runner for unit tests: a
// test declares which command lines may run and what they answer, and then
// checks which commands really ran.
package hosttest

import (
	"context"
	"fmt"
	"github.com/gopve/proxmox/modules-src/internal/writes"
	"strings"
	"sync"

	"github.com/gopve/proxmox/modules-src/host"
)

// Reply is the scripted outcome of one command.
type Reply struct {
	Stdout string
	Stderr string
	Exit   int
}

// Handler computes a reply from the command, for stateful fakes (a pool that
// exists only after `zpool create` ran).
type Handler func(cmd host.Command) Reply

type rule struct {
	pattern string
	handle  Handler
}

// Runner is the fake. Patterns are full command lines as host.Command.String
// renders them, where "*" matches any characters. The first matching rule wins. A command that matches
// no rule fails with exit 127 and is recorded in Unexpected.
type Runner struct {
	mu         sync.Mutex
	rules      []rule
	calls      []string
	unexpected []string
}

// New returns an empty fake.
func New() *Runner { return &Runner{} }

// On scripts a fixed reply.
func (f *Runner) On(pattern string, r Reply) *Runner {
	return f.OnFunc(pattern, func(host.Command) Reply { return r })
}

// OnFunc scripts a computed reply.
func (f *Runner) OnFunc(pattern string, h Handler) *Runner {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, rule{pattern: pattern, handle: h})
	return f
}

// Run implements host.Runner.
func (f *Runner) Run(ctx context.Context, cmd host.Command) (host.Result, error) {
	line := cmd.String()
	if host.ChangesNode(cmd) {
		writes.Note(ctx, line) // as host.ExecRunner does (issue 23 §2)
	}
	f.mu.Lock()
	f.calls = append(f.calls, line)
	var h Handler
	for _, r := range f.rules {
		if match(r.pattern, line) {
			h = r.handle
			break
		}
	}
	if h == nil {
		f.unexpected = append(f.unexpected, line)
	}
	f.mu.Unlock()
	rep := Reply{Exit: 127, Stderr: "hosttest: unexpected command: " + line}
	if h != nil {
		rep = h(cmd)
	}
	res := host.Result{Command: line, Stdout: rep.Stdout, Stderr: rep.Stderr, ExitCode: rep.Exit}
	if rep.Exit != 0 {
		return res, &host.CommandError{Result: res, Err: fmt.Errorf("exit status %d", rep.Exit)}
	}
	return res, nil
}

// match is a glob where "*" matches any run of characters (spaces and
// slashes included), so "apt-get -o * update" matches a sandboxed update.
// A trailing " *" also matches nothing at all ("zpool list *" = "zpool list").
func match(pattern, line string) bool {
	if p, ok := strings.CutSuffix(pattern, " *"); ok && line == p {
		return true
	}
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == line
	}
	if !strings.HasPrefix(line, parts[0]) {
		return false
	}
	line = line[len(parts[0]):]
	for i, part := range parts[1:] {
		if i == len(parts)-2 {
			return strings.HasSuffix(line, part)
		}
		j := strings.Index(line, part)
		if j < 0 {
			return false
		}
		line = line[j+len(part):]
	}
	return true
}

// Calls returns every command line run so far, in order.
func (f *Runner) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// Unexpected returns the command lines that matched no rule.
func (f *Runner) Unexpected() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.unexpected...)
}

// Ran reports whether a command matching pattern ran.
func (f *Runner) Ran(pattern string) bool {
	for _, c := range f.Calls() {
		if match(pattern, c) {
			return true
		}
	}
	return false
}

// Counted wraps a runner that does not start processes (a test double
// that answers commands itself) so that, like host.ExecRunner, it notes
// every command that may change the node for the runtime's write count
// (issue 23 §2). Runners that start processes need no wrapper.
func Counted(r host.Runner) host.Runner { return counted{r} }

type counted struct{ inner host.Runner }

func (c counted) Run(ctx context.Context, cmd host.Command) (host.Result, error) {
	if host.ChangesNode(cmd) {
		writes.Note(ctx, cmd.String())
	}
	return c.inner.Run(ctx, cmd)
}

// Log is the inner runner's log, when it keeps one.
func (c counted) Log() []host.Result {
	if l, ok := c.inner.(host.Logger); ok {
		return l.Log()
	}
	return nil
}
