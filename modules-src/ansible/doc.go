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
//     timeouts become failed results), with every no_log value masked —
//     in what a panic prints on stderr too.
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
//	    if err := r.Stage("repos", func(ctx context.Context, w *ansible.World) ([]ansible.Change, error) {
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
// saying what was applied and what was read back.
//
// # Prediction: the World
//
// In check mode nothing is applied, so a later stage cannot observe what an
// earlier one would have done. Instead each Change may carry a Predict
// function recording, in the run's World, the facts it changes (typed keys,
// Key[T]); the driver calls them in check mode, after the stage planned. A
// later stage reads a fact with Key.Get(ctx, w, observe): the predicted
// value if a planned change predicted one, else what observe reads on the
// target. In a real run the World stays empty and Get always observes, so
// both modes plan against the same world: as it is, or as it would be.
// Stages never look at which changes are planned, only at facts.
//
// # `changed` is the truth, also after a failure
//
// `changed` is never set by a module. In check mode it is true iff a change
// was planned. In a real run a change counts as made as soon as its Apply
// has been called — when Apply or Verify then fails too — unless Apply
// returns an error built with NothingChanged, its guarantee that it left
// the target as it found it (failed before writing, or rolled back
// completely). `changes` lists the changes made (or planned), `diff` their
// diffs in diff mode. A failed real run also returns:
//
//   - changes_verified: applied and read back as promised;
//   - changes_unverified: Apply called, but not read back as promised (the
//     failing step, or an Apply that failed part-way);
//   - changes_not_run: planned and not made (never started after the
//     failure, or undone, per NothingChanged). Stages after the failing one
//     never plan, so their changes are not listed.
//
// Once a stage fails, the run is failed: later Stage calls return the same
// error without running, even if the module ignores it.
//
// # Timeouts
//
// Every module has a `timeout` option (seconds, float) that the runtime adds
// to its spec and documentation (TimeoutOption); Module.Timeout is its
// default, 0 meaning no deadline. Modules must not declare it and Decode
// does not hand it to them. The deadline is the context passed to stages and
// to Apply/Verify; host.ExecRunner cancels a running command with SIGTERM to
// its process group and SIGKILL only after a grace period. Work that must
// never be cut short (an APT/dpkg transaction) runs inside Uninterruptible:
// its context ignores the deadline, the watchdog waits for it, and once it
// has finished the task fails naming the step if the deadline passed. If
// the module does not return within a short grace period after the
// deadline (and outside such a section), a watchdog prints a failed result
// naming the step that was running (Run.Step, or the stage/change the driver
// is in) and exits.
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
//	        Timeout:          10 * time.Minute, // default of the runtime's timeout option
//	        Params:           params{},          // the struct Decode fills; Check compares it with Spec
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
// sets one with Run.Set("msg", …)), changes, changes_verified,
// changes_unverified, changes_not_run, diff, warnings, deprecations and
// invocation; everything else comes from Run.Set. Decode uses the struct
// tag `ansible` (mapstructure; weakly typed only where the spec left a value
// untyped, e.g. inside a dict option; embedded structs are squashed); a
// pointer field stays nil when an option is unset. The struct must match
// the spec both ways — every option has a field and every tagged field an
// option, sub-options of struct fields included — or Decode fails as a bug;
// Module.Params lets Check (and so the registry test) prove it for every
// module without running it.
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
