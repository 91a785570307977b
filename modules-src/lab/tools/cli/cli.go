// Package cli holds what every PVE/ZFS stand-in command shares: its streams,
// its environment and the way it reports an exit status. Commands take an
// *Env instead of touching os.* so tests can run them in-process.
package cli

import (
	"fmt"
	"io"
	"os"
)

// Env is one invocation of a stand-in command.
type Env struct {
	Args   []string // arguments after the command name
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
}

// OS returns the Env of the running process.
func OS() *Env {
	return &Env{Args: os.Args[1:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
}

// Outf prints to stdout.
func (e *Env) Outf(format string, a ...any) { fmt.Fprintf(e.Stdout, format, a...) }

// Errf prints to stderr.
func (e *Env) Errf(format string, a ...any) { fmt.Fprintf(e.Stderr, format, a...) }

// Fail prints msg (newline added when missing) to stderr and returns code,
// so commands can end with `return env.Fail(1, "...")`.
func (e *Env) Fail(code int, format string, a ...any) int {
	msg := fmt.Sprintf(format, a...)
	if len(msg) == 0 || msg[len(msg)-1] != '\n' {
		msg += "\n"
	}
	io.WriteString(e.Stderr, msg)
	return code
}
