package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
)

// Caller is a node's HTTPS API as the stand-ins call it (apiclient.Client).
type Caller interface {
	Call(ctx context.Context, method, path string, params url.Values) (json.RawMessage, error)
}

// Command is one invocation of a PVE CLI tool built on pve-common's
// CLIHandler (ha-manager, pvesr): the positional arguments, the options as
// API parameters, and the tool's name for its error messages.
type Command struct {
	Env    *Env
	Name   string   // the tool as its messages name it: "ha-manager"
	Pos    []string // positional arguments, the command word first
	Params url.Values
}

// ParseCommand reads env.Args as CLIHandler does. With no command word it
// prints CLIHandler's "no command specified" and the usage; ok is false
// and code is the exit status to return.
func ParseCommand(env *Env, name, usage string, bools map[string]bool) (c *Command, code int, ok bool) {
	c = &Command{Env: env, Name: name, Params: url.Values{}}
	pos, opts, err := PVEArgs(env.Args, bools)
	if err != nil {
		return nil, c.Die(err), false
	}
	if len(pos) == 0 {
		env.Errf("ERROR: no command specified\n%s", usage)
		return nil, 255, false
	}
	c.Pos = pos
	for k, v := range opts {
		c.Params.Set(k, v)
	}
	return c, 0, true
}

// Die prints err as CLIHandler does and returns its exit status, 255.
func (c *Command) Die(err error) int { return c.Env.Fail(255, "%v", err) }

// Arity reports whether the command has n positional arguments, its
// command word(s) included; otherwise it prints CLIHandler's "400 wrong
// number of arguments" with the command's syntax.
func (c *Command) Arity(n int, syntax string) bool {
	if len(c.Pos) != n {
		c.Die(fmt.Errorf("400 wrong number of arguments\n%s %s", c.Name, syntax))
		return false
	}
	return true
}

// Call sends the command's options as the parameters of one API call and
// returns the exit status.
func (c *Command) Call(ctx context.Context, api Caller, method, path string) int {
	if _, err := api.Call(ctx, method, path, c.Params); err != nil {
		return c.Die(err)
	}
	return 0
}
