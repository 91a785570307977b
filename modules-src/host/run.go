package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gopve/proxmox/modules-src/internal/cost"
	"github.com/gopve/proxmox/modules-src/internal/writes"
)

// Command is one program to run on the node.
type Command struct {
	Name  string
	Args  []string
	Env   []string // extra KEY=VALUE pairs on top of the runner's base environment
	Stdin []byte
}

// String renders the command line for logs and error messages. Arguments are
// shell-quoted only when needed, so the line can be pasted into a shell.
func (c Command) String() string {
	parts := make([]string, 0, len(c.Args)+1)
	for _, a := range append([]string{c.Name}, c.Args...) {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	if strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,@+%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Result is what a finished command left behind. ExitCode is -1 when the
// program could not be started at all.
type Result struct {
	Command  string        `json:"cmd"`
	Stdout   string        `json:"stdout,omitempty"`
	Stderr   string        `json:"stderr,omitempty"`
	ExitCode int           `json:"rc"`
	Signal   string        `json:"-"` // the signal that killed it ("terminated"), if one did
	Duration time.Duration `json:"-"`
}

// Runner runs commands on the node. Run returns a *CommandError (with the
// Result inside) when the command exits non-zero or cannot start, and always
// returns the Result, so callers that expect a given exit code (blkid's 2)
// can look at Result.ExitCode.
type Runner interface {
	Run(ctx context.Context, cmd Command) (Result, error)
}

// CommandError is a command that failed. Its message names the command, the
// exit code and the last lines of stderr, so a user can act on it.
type CommandError struct {
	Result Result
	Err    error // start failure or *exec.ExitError
}

func (e *CommandError) Error() string {
	msg := strings.TrimSpace(e.Result.Stderr)
	if msg == "" {
		msg = strings.TrimSpace(e.Result.Stdout)
	}
	msg = lastLines(msg, 10)
	if e.Result.ExitCode < 0 {
		return fmt.Sprintf("%s: cannot run: %v", e.Result.Command, e.Err)
	}
	if e.Result.Signal != "" {
		return fmt.Sprintf("%s: stopped by a signal (%s): %v", e.Result.Command, e.Result.Signal, e.Err)
	}
	if msg == "" {
		return fmt.Sprintf("%s: exit status %d", e.Result.Command, e.Result.ExitCode)
	}
	return fmt.Sprintf("%s: exit status %d: %s", e.Result.Command, e.Result.ExitCode, msg)
}

func (e *CommandError) Unwrap() error { return e.Err }

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append([]string{"…"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// ExitCode returns the exit code carried by err when it is a *CommandError,
// and -1 otherwise.
func ExitCode(err error) int {
	var ce *CommandError
	if errors.As(err, &ce) {
		return ce.Result.ExitCode
	}
	return -1
}

// Masker hides secrets in text before it leaves the process (logs, errors).
type Masker func(string) string

// ExecRunner runs real programs with a fixed base environment (LANG=C, so
// parsers see untranslated output) and keeps a log of what ran.
//
// Each command runs in its own process group. When the context is done
// (the task's deadline), the whole group gets SIGTERM, so a program and its
// children can clean up; only a group still alive TermGrace later gets
// SIGKILL. Work that must never be interrupted (an APT/dpkg transaction) is
// run with a context the deadline does not cancel (see apt.Client).
type ExecRunner struct {
	// Mask hides secrets in command lines, output and errors; nil masks nothing.
	Mask Masker
	// BaseEnv replaces the default base environment when set.
	BaseEnv []string
	// TermGrace is the time between SIGTERM and SIGKILL once the context
	// is done; DefaultTermGrace when zero.
	TermGrace time.Duration

	mu  sync.Mutex
	log []Result
}

// DefaultEnv is the base environment of every command: a C locale for stable
// output and a non-interactive frontend so nothing waits on a prompt.
func DefaultEnv() []string {
	return []string{
		"LANG=C", "LC_ALL=C", "LANGUAGE=",
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"DEBIAN_FRONTEND=noninteractive", "APT_LISTCHANGES_FRONTEND=none",
	}
}

// DefaultTermGrace is how long a cancelled command may take to exit after
// SIGTERM before it is killed.
const DefaultTermGrace = 10 * time.Second

// Run implements Runner.
func (r *ExecRunner) Run(ctx context.Context, cmd Command) (Result, error) {
	c := exec.CommandContext(ctx, cmd.Name, cmd.Args...)
	grace := r.TermGrace
	if grace <= 0 {
		grace = DefaultTermGrace
	}
	// Own process group, so cancelling reaches the children too (apt-get's
	// methods, a shell's pipeline), and SIGTERM first: a program killed
	// outright cannot undo what it started.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var termSent time.Time
	c.Cancel = func() error {
		termSent = time.Now()
		return syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
	}
	c.WaitDelay = grace
	base := r.BaseEnv
	if base == nil {
		base = DefaultEnv()
	}
	c.Env = append(append([]string{}, base...), cmd.Env...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if cmd.Stdin != nil {
		c.Stdin = bytes.NewReader(cmd.Stdin)
	}
	start := time.Now()
	err := c.Run()
	if c.Process != nil {
		cost.Process(ctx) // issue 24 §3: make bench counts what a task starts
	}
	if c.Process != nil && ChangesNode(cmd) {
		writes.Note(ctx, r.mask(cmd.String())) // issue 23 §2: it started, so it may have written
	}
	if !termSent.IsZero() {
		reapGroup(c.Process.Pid, termSent.Add(grace))
	}
	res := Result{
		Command:  r.mask(cmd.String()),
		Stdout:   r.mask(stdout.String()),
		Stderr:   r.mask(stderr.String()),
		ExitCode: 0,
		Duration: time.Since(start),
	}
	if err != nil {
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee) && ee.ExitCode() < 0:
			// killed by a signal: the shell's convention, 128 + signal
			res.ExitCode, res.Signal = 128, "unknown"
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				res.ExitCode += int(ws.Signal())
				res.Signal = ws.Signal().String()
			}
		case ee != nil:
			res.ExitCode = ee.ExitCode()
		default:
			res.ExitCode = -1
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
	}
	r.mu.Lock()
	r.log = append(r.log, res)
	r.mu.Unlock()
	if err != nil {
		return res, &CommandError{Result: res, Err: err}
	}
	return res, nil
}

func (r *ExecRunner) mask(s string) string {
	if r.Mask == nil {
		return s
	}
	return r.Mask(s)
}

// Log returns the commands run so far, oldest first (already masked).
func (r *ExecRunner) Log() []Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Result(nil), r.log...)
}

// Logger is a Runner that keeps a log of what ran (ExecRunner does).
type Logger interface {
	Log() []Result
}

// CommandLog summarises what a runner ran, for results at high verbosity:
// the masked command line and its exit code, without the output.
func CommandLog(r Runner) []map[string]any {
	l, ok := r.(Logger)
	if !ok {
		return nil
	}
	var out []map[string]any
	for _, res := range l.Log() {
		out = append(out, map[string]any{"cmd": res.Command, "rc": res.ExitCode})
	}
	return out
}

// reapGroup waits until the process group pgid has no live member or
// deadline has passed, and then kills what is left of it: the leader of a
// cancelled command has exited, but its children got the same SIGTERM and
// the same grace period to finish. A child that died on SIGTERM is over
// even while it waits, a zombie, for whoever adopted it to reap it (a lab
// node's or a container's PID 1 may do that late or never), so zombies do
// not count: Run returns once the group is gone, not at the grace's end.
func reapGroup(pgid int, deadline time.Time) {
	for time.Now().Before(deadline) {
		if !groupAlive(pgid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// groupAlive tells whether a process of group pgid is still running (not
// a zombie), from /proc/<pid>/stat (state and pgrp, proc(5)); where /proc
// cannot be read, kill(-pgid, 0) decides, zombies included.
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false // nobody left, not even a zombie
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		state, pgrp, ok := statStateGroup(string(stat))
		if ok && pgrp == pgid && state != "Z" && state != "X" {
			return true
		}
	}
	return false
}

// statStateGroup reads the state and process group from a /proc/<pid>/stat
// line: "pid (comm) state ppid pgrp …", comm possibly holding spaces and
// parentheses, so the fields are counted after the last ')'.
func statStateGroup(stat string) (string, int, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 3 {
		return "", 0, false
	}
	pgrp, err := strconv.Atoi(f[2])
	return f[0], pgrp, err == nil
}
