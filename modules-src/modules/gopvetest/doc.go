// Package gopvetest is the module the integration tests drive through a
// real ansible-playbook. It exercises the runtime end to end: options of
// every type, a no_log option with an environment fallback, a file managed
// through observe → plan → apply → verify, and knobs to panic, sleep, print
// junk on stdout and sabotage verification. It is compiled only with the
// build tag gopve_testmodule and never ships.
//
// Without the build tag the package is empty, so that patterns such as
// ./modules-src/... build and test it without error.
package gopvetest
