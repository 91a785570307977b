package ansible

import (
	"context"
	"io"
)

// Invocation is a parsed args file: the task arguments and what the
// `_ansible_*` keys say about how Ansible runs the task.
type Invocation struct {
	// Params are the task arguments with every `_ansible_*` and `_gopve_*`
	// key removed, not yet validated.
	Params map[string]any

	CheckMode      bool   // _ansible_check_mode
	Diff           bool   // _ansible_diff
	NoLog          bool   // _ansible_no_log (task-level no_log; do not log to syslog)
	Verbosity      int    // _ansible_verbosity
	AnsibleVersion string // _ansible_version
	ModuleName     string // _ansible_module_name (may be a wrapper's name)
	// InjectInvocation is _ansible_inject_invocation (2.21+); nil when absent,
	// in which case invocation is returned as AnsibleModule ≤ 2.20 does.
	InjectInvocation *bool
	// IgnoreUnknownOpts is _ansible_ignore_unknown_opts (2.17+).
	IgnoreUnknownOpts bool
	// GopveModule is _gopve_module, injected by our action plugin.
	GopveModule string
}

// ParseArgs parses the content of an args file. It fails only if the content
// is not a JSON object or a known `_ansible_*` key has an unusable type.
func ParseArgs(data []byte) (*Invocation, error) { return parseArgs(data) }

// Env gives the runtime access to the environment (env fallbacks, path
// expansion). os.LookupEnv in production; a map in tests.
type Env func(key string) (string, bool)

// Execute validates inv against m's spec, runs m, and returns the result
// object with secrets masked. It does no I/O of its own besides writing
// m's logs to stderr. A panic in the module's goroutine becomes a failed
// result; Main adds the stdout guard and the timeout watchdog.
func Execute(ctx context.Context, m *Module, inv *Invocation, env Env, stderr io.Writer) map[string]any {
	return execute(ctx, m, inv, env, stderr)
}

// Main is the process entry point in module mode: argv is os.Args. It picks
// the module from `_gopve_module` in the args file (argv[1]), else from the
// basename of argv[0] (so symlinks named after a module work), guards stdout,
// turns panics and timeouts into failed results, prints exactly one JSON
// object on the real stdout and returns the exit code (0 ok, 1 failed).
func Main(mods []Module, argv []string) int { return runMain(mods, argv) }
