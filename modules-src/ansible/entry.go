package ansible

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"
)

// watchdogGrace is how long a module may keep running past its deadline to
// return on its own before the watchdog reports the timeout and exits. It
// exceeds host.DefaultTermGrace (10 s), the time a cancelled command gets
// between SIGTERM and SIGKILL, so a command still cleaning up is not
// orphaned by the process exiting under it.
var watchdogGrace = 15 * time.Second

func runMain(mods []Module, argv []string) int {
	out, err := guardStdout()
	if err != nil {
		// Without a guard we can still print the result; say why stdout
		// may be polluted.
		fmt.Fprintf(os.Stderr, "gopve: %v\n", err)
		out = os.Stdout
	}
	p := &printer{w: out}
	code := mainWith(context.Background(), mods, argv, os.LookupEnv, os.Stderr, p, watchdogGrace, func(c int) { os.Exit(c) })
	return code
}

// printer writes exactly one result, whoever asks first.
type printer struct {
	once sync.Once
	w    io.Writer
	code int
}

func (p *printer) emit(res map[string]any) int {
	p.once.Do(func() {
		p.code = 0
		if failed, _ := res["failed"].(bool); failed {
			p.code = 1
		}
		p.w.Write(encodeResult(res))
	})
	return p.code
}

// encodeResult renders one JSON object and a newline. It cannot fail: a
// result that does not encode is replaced by a failure saying so.
func encodeResult(res map[string]any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		buf.Reset()
		enc.Encode(map[string]any{"failed": true, "changed": res["changed"],
			"msg": "gopve could not encode its result as JSON: " + err.Error()})
	}
	return buf.Bytes()
}

// failOnly is the result when no module could be run at all.
func failOnly(msg string) map[string]any {
	return map[string]any{"failed": true, "changed": false, "msg": msg}
}

func mainWith(ctx context.Context, mods []Module, argv []string, env Env, stderr io.Writer, p *printer, grace time.Duration, exit func(int)) (code int) {
	// A panic outside the module (argument parsing, validation, result
	// building) is a runtime bug; it still ends as one failed JSON object,
	// with the no_log values of the arguments masked like everywhere else.
	secrets := newSecretSet()
	defer func() {
		if v := recover(); v != nil {
			fmt.Fprintf(stderr, "gopve: internal panic: %s\n%s", secrets.maskString(fmt.Sprint(v)), debug.Stack())
			code = p.emit(failOnly(secrets.maskString(fmt.Sprintf("gopve crashed (panic: %v); this is a bug in gopve, please report it with the task's stderr", v))))
		}
	}()
	if len(argv) < 2 {
		return p.emit(failOnly("no args file given: gopve modules are run by Ansible as `<binary> <args file>` (or `<binary> -` with the arguments on stdin); for the human commands run `gopve help`"))
	}
	data, err := readArgs(argv[1], os.Stdin)
	if err != nil {
		return p.emit(failOnly(err.Error()))
	}
	inv, err := parseArgs(data)
	if err != nil {
		return p.emit(failOnly(err.Error()))
	}
	m, err := pickModule(mods, inv, argv[0])
	if err != nil {
		return p.emit(failOnly(err.Error()))
	}
	// Values given in the arguments first, for every option, and only then
	// the environment fallbacks: a lookup that panics must find every
	// argument secret already registered, whatever the map order.
	addRawSecrets(secrets, m.Spec.Options, inv.Params, nil)
	addRawSecrets(secrets, m.Spec.Options, inv.Params, env)
	return runGuarded(ctx, m, inv, env, stderr, p, grace, exit)
}

// addRawSecrets registers the no_log values of not yet validated arguments
// (and of their environment fallbacks), for masking panics that happen
// before or outside the Run.
func addRawSecrets(s *secretSet, opts map[string]Option, params map[string]any, env Env) {
	for name, o := range opts {
		names := append([]string{name}, o.Aliases...)
		for _, n := range names {
			v, ok := params[n]
			if !ok {
				continue
			}
			if o.NoLog {
				addSecretValues(s, v)
			}
			if len(o.Options) > 0 {
				switch x := v.(type) {
				case map[string]any:
					addRawSecrets(s, o.Options, x, env)
				case []any:
					for _, e := range x {
						if m, ok := e.(map[string]any); ok {
							addRawSecrets(s, o.Options, m, env)
						}
					}
				}
			}
		}
		if o.NoLog && env != nil {
			for _, e := range o.EnvFallback {
				if v, ok := env(e); ok {
					s.add(v)
				}
			}
		}
	}
}

func addSecretValues(s *secretSet, v any) {
	switch x := v.(type) {
	case string:
		s.add(x)
	case []any:
		for _, e := range x {
			addSecretValues(s, e)
		}
	case map[string]any:
		for _, e := range x {
			addSecretValues(s, e)
		}
	case nil:
	default:
		s.add(fmt.Sprint(x))
	}
}

// ArgsFromStdin is the args "file" name that makes the binary read its
// arguments from stdin: the action plugin's fast path sends them there, so
// they never touch the node's disk nor appear in argv or the environment.
const ArgsFromStdin = "-"

// readArgs returns the raw arguments: the content of the args file, or all
// of stdin for ArgsFromStdin. Both go through the same parseArgs.
func readArgs(name string, stdin io.Reader) ([]byte, error) {
	if name == ArgsFromStdin {
		data, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("cannot read the arguments from stdin: %w", err)
		}
		return data, nil
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("cannot read the args file: %w", err)
	}
	return data, nil
}

// runGuarded runs the module in its own goroutine so that a module stuck
// past its deadline cannot keep Ansible waiting without an answer.
func runGuarded(ctx context.Context, m *Module, inv *Invocation, env Env, stderr io.Writer, p *printer, grace time.Duration, exit func(int)) int {
	r, cancel, res := newRun(ctx, m, inv, env, stderr)
	defer cancel()
	if res != nil {
		return p.emit(res)
	}
	done := make(chan map[string]any, 1)
	go func() { done <- r.runModule() }()

	var watchdog <-chan time.Time
	if deadline, ok := r.ctx.Deadline(); ok {
		t := time.NewTimer(time.Until(deadline) + grace)
		defer t.Stop()
		watchdog = t.C
	}
	for {
		select {
		case res := <-done:
			return p.emit(res)
		case <-watchdog:
			if wait := r.criticalWait(grace); wait > 0 {
				// An APT/dpkg transaction (Uninterruptible) is running, or
				// has just ended: it is never cut short, and the module
				// gets a whole grace after it to return on its own.
				watchdog = time.After(wait)
				continue
			}
			r.logf("module did not stop within %s after its deadline; reporting the timeout", grace)
			code := p.emit(r.buildResult(r.timeoutError(nil)))
			exit(code)
			return code
		}
	}
}

// pickModule finds the module to run: the action plugin's `_gopve_module`,
// else the name the binary was called by (a symlink named after a module,
// possibly copied by Ansible as AnsiballZ_<name>).
func pickModule(mods []Module, inv *Invocation, argv0 string) (*Module, error) {
	name := inv.GopveModule
	source := "_gopve_module"
	if name == "" {
		name = strings.TrimPrefix(filepath.Base(argv0), "AnsiballZ_")
		name = strings.TrimSuffix(name, filepath.Ext(name))
		source = "the program name"
	}
	for i := range mods {
		if mods[i].Name == name {
			return &mods[i], nil
		}
	}
	names := make([]string, len(mods))
	for i, m := range mods {
		names[i] = m.Name
	}
	sort.Strings(names)
	return nil, fmt.Errorf("no module %q (from %s) in this gopve binary; it provides: %s. Is the collection's binary older than its plugins?",
		name, source, strings.Join(names, ", "))
}
