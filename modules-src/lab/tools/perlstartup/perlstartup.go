// Package perlstartup is what each of PVE's Perl command-line tools costs
// before it does anything: on a real node `qm`, `pct`, `pvecm`, `pvesm`,
// `ha-manager` and `pvesr` are Perl programs that compile a large part of
// PVE at every start (their PVE::CLI module and everything it uses). The
// lab's stand-ins are Go and answer in milliseconds; they wait this long
// first, so the lab does not hide where a module leans on these tools.
// pvesh has its own figure (pvesh.DefaultStartup, 0.5 s) and knob
// (pvesh_startup_ms).
//
// Reconstruction. No published timing of these tools was found (searched:
// the Proxmox forum and mailing lists, issue trackers), and there is no
// real node here to measure. The figures are scaled from pvesh's 0.5 s by
// how much PVE Perl each tool compiles: the non-blank, non-comment,
// non-POD lines of the PVE:: modules its PVE::CLI module pulls in through
// `use`/`require`/`use base`, counted over pve-manager@14a22df359,
// pve-common@f665029eac, pve-access-control@5ccd07d930,
// pve-cluster@7091d92e59, qemu-server@e6352be67f, pve-container@94f558522e,
// pve-ha-manager@b71218f279, pve-storage@0c56bad8b2,
// pve-guest-common@4a8f6cbf78 and pve-firewall@6f1311f349:
//
//	pvesh       PVE::CLI::pvesh        231 modules  101303 lines  (500 ms, the reference)
//	ha-manager  PVE::CLI::ha_manager   177 modules   81732 lines  → 400 ms
//	qm          PVE::CLI::qm           173 modules   81349 lines  → 400 ms
//	pct         PVE::CLI::pct          173 modules   81105 lines  → 400 ms
//	pvesr       PVE::CLI::pvesr        131 modules   57123 lines  → 280 ms
//	pvesm       PVE::CLI::pvesm         71 modules   33400 lines  → 170 ms
//	pvecm       PVE::CLI::pvecm         40 modules   17455 lines  →  90 ms
//
// (rounded to 10 ms). Linear scaling ignores what every tool pays alike
// (the interpreter, CPAN modules, PVE::RPCEnvironment's set-up), so the
// small tools are, if anything, too cheap here.
package perlstartup

import (
	"maps"
	"slices"
	"time"
)

// Default is each tool's start-up cost (see the package comment).
var Default = map[string]time.Duration{
	"ha-manager": 400 * time.Millisecond,
	"qm":         400 * time.Millisecond,
	"pct":        400 * time.Millisecond,
	"pvesr":      280 * time.Millisecond,
	"pvesm":      170 * time.Millisecond,
	"pvecm":      90 * time.Millisecond,
}

// Tools lists the tools with a figure, sorted.
func Tools() []string { return slices.Sorted(maps.Keys(Default)) }

// DefaultMS is Default in milliseconds, as node.json's perl_startup_ms
// holds it.
func DefaultMS() map[string]int {
	out := make(map[string]int, len(Default))
	for k, v := range Default {
		out[k] = int(v / time.Millisecond)
	}
	return out
}

// For is the wait of tool given node.json's perl_startup_ms: absent (an
// older lab, or the costs switched off) or negative means none.
func For(tool string, ms map[string]int) time.Duration {
	if v, ok := ms[tool]; ok && v > 0 {
		return time.Duration(v) * time.Millisecond
	}
	return 0
}
