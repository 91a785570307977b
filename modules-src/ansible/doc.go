// Package ansible is gopve's AnsibleModule: everything a Go module needs to
// behave like a well-mannered Ansible module, so that module packages only
// describe options and plan changes.
//
// # What it does for a module
//
//   - Reads the args file Ansible hands a binary module (argv[1], flat JSON of
//     task arguments plus `_ansible_*` keys), ignores unknown `_ansible_*`
//     keys and strips every `_gopve_*` key (the action plugin injects
//     `_gopve_module`).
//   - Validates the arguments against a Spec declared in Go, in the order and
//     with the wording of ansible-core's ArgumentSpecValidator, coercing
//     values exactly as AnsibleModule does (2.14 hands templated numbers over
//     as strings, so "5" must become 5).
//   - Decodes the validated parameters into a typed struct (Run.Decode, using
//     mapstructure with the struct tag `ansible`).
//   - Drives the module through observe → plan → apply → verify (see Run.Stage)
//     so that check mode and `changed` cannot be gotten wrong by a module.
//   - Prints exactly one JSON object on stdout whatever happens (stdout of the
//     process is redirected to stderr while the module runs; panics and
//     timeouts become failed results), with every no_log value masked.
//
// # The plan/apply/verify driver
//
// A module's Run function is a straight line of stages:
//
//	func run(r *ansible.Run) error {
//	    var p params
//	    if err := r.Decode(&p); err != nil {
//	        return err
//	    }
//	    if err := r.Stage("repos", func(ctx context.Context, pending ansible.Pending) ([]ansible.Change, error) {
//	        cur, err := readRepos(ctx)          // observe: no writes here
//	        if err != nil {
//	            return nil, err
//	        }
//	        return planRepos(cur, p), nil         // plan: what would change
//	    }); err != nil {
//	        return err
//	    }
//	    return r.Stage("patch", ...)              // may depend on the first stage
//	}
//
// Each stage observes and returns the Changes it wants. In a real run the
// driver applies each change and then calls its Verify, which must read back
// the state Apply promised; a failed Verify fails the task with a message
// saying what was applied and what was read back. In check mode nothing is
// applied: the changes are recorded as pending and handed to later stages
// (Pending) so they can predict what the earlier stages would have done.
//
// `changed` is never set by a module: it is true iff at least one change was
// planned (check mode) or applied and verified (real run). The result lists
// the change summaries under `changes`, and the diffs under `diff` when diff
// mode is on. Once a stage fails, the run is failed: later Stage calls return
// the same error without running, even if the module ignores it.
//
// # Timeouts
//
// Module.Timeout is the default deadline of the context passed to stages and
// to Apply/Verify; Module.TimeoutOption names an option (seconds) that
// overrides it. If the module does not return within a short grace period
// after the deadline, a watchdog prints a failed result naming the step that
// was running (Run.Step, or the stage/change the driver is in) and exits.
//
// # Writing a module
//
// A module package exports a constructor returning a Module, and is added
// by hand to modules.Shipped() (modules-src/modules/registry.go):
//
//	func Module() ansible.Module {
//	    return ansible.Module{
//	        Name:             "pve_example",
//	        ShortDescription: "One line for ansible-doc -l",
//	        Description:      []string{"Paragraphs for ansible-doc."},
//	        Examples:         "- name: ...\n  gopve.proxmox.pve_example:\n    ...\n",
//	        Return:           "key:\n  description: ...\n  returned: success\n  type: str\n", // top-level YAML mapping
//	        ActionGroups:     []string{ansible.GroupAPI}, // API modules only
//	        Timeout:          10 * time.Minute,
//	        Spec:             ansible.Spec{Options: map[string]ansible.Option{ /* every option has a Description */ }},
//	        Run:              run,
//	    }
//	}
//
// Module.Check reports definition mistakes (the registry test runs it on
// every module). Documentation (plugins/modules/<name>.py) is generated from
// the Module by `gopve gen-plugins`; `changes` is documented automatically.
//
// Result keys: the runtime owns changed, failed, msg (unless the module
// sets one with Run.Set("msg", …)), changes, diff, warnings, deprecations
// and invocation; everything else comes from Run.Set. Decode uses the
// struct tag `ansible` (mapstructure; weakly typed only where the spec left
// a value untyped, e.g. inside a dict option; embedded structs are
// squashed); a pointer field stays nil when an option is unset.
//
// # Fidelity to AnsibleModule
//
// testdata/ansible_cases.json holds answers recorded from ansible-core's
// own AnsibleModule by testdata/gen_ansible_cases.py (run it with
// /usr/bin/python3 to refresh); TestMatchesAnsibleModule compares every
// case: failure, first error message, warnings and module_args. Deliberate
// differences: floats without a fraction are accepted as int (2.19 native
// templating), a bool given for an int becomes 0/1, NaN/infinite floats are
// rejected (JSON cannot carry them back), where Python's answer depends on
// dict or set order we use sorted order, and map keys in results are masked
// too. Not implemented: the "Module did not set no_log for X" warning,
// deprecated aliases/options, types json/jsonarg/bytes/bits.
//
// # Secrets
//
// Values of no_log options (including values that came from an environment
// fallback) and values registered with Run.AddSecret never leave the process:
// in `invocation.module_args` a no_log value is replaced by
// VALUE_SPECIFIED_IN_NO_LOG_PARAMETER, and anywhere else in the result (msg,
// diffs, errors, nested keys) and in Run.Log output every occurrence is
// replaced by `********`.
package ansible

// Version is the collection version baked into the binary with
// -ldflags "-X github.com/gopve/proxmox/modules-src/ansible.Version=1.2.3".
var Version = "0.0.0-dev"
