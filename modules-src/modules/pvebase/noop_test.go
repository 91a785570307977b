package pvebase

import (
	"slices"
	"strings"
	"testing"
)

// TestConvergedRunAsksDpkgOnce (issue 24 §3): the target check's dpkg-query
// also reads extra_packages, and the packages stage plans from it (nothing
// before it installs or removes a package), so a converged run starts one
// dpkg-query, not two; a package removed by hand since the last run is
// still seen and installed again. The run starts four processes in all.
func TestConvergedRunAsksDpkgOnce(t *testing.T) {
	w := newWorld(t, 9)
	args := func() map[string]any { return map[string]any{"extra_packages": []any{"vim", "htop"}} }
	if res := w.run(args(), false); failed(res) {
		t.Fatalf("first run: %v", res["msg"])
	}
	dpkg := func(from int) (n int) {
		for _, c := range w.fake.Calls()[from:] {
			if strings.HasPrefix(c, "dpkg-query ") {
				n++
			}
		}
		return n
	}
	from := len(w.fake.Calls())
	again := w.run(args(), false)
	if failed(again) || again["changed"] != false {
		t.Fatalf("converged run: %v %v", again["msg"], again["changes"])
	}
	if n := dpkg(from); n != 1 {
		t.Errorf("a converged run started %d dpkg-query processes, want 1: %q", n, w.fake.Calls()[from:])
	}
	// Every process a converged run starts, each for a promise it keeps:
	// the packages' state (one dpkg-query), the lists refreshed
	// (update_cache), nothing left upgradable (the simulation), pveproxy
	// serving the patched file. The held packages are not asked for: the
	// simulation left nothing for them to hold back (dropHeld).
	var tools []string
	for _, c := range w.fake.Calls()[from:] {
		tool, rest, _ := strings.Cut(c, " ")
		if tool == "apt-get" && strings.Contains(rest, " update") {
			tool = "apt-get update"
		} else if tool == "apt-get" {
			tool = "apt-get -s"
		}
		tools = append(tools, tool)
	}
	if want := []string{"dpkg-query", "apt-get update", "apt-get -s", "systemctl"}; !slices.Equal(tools, want) {
		t.Errorf("a converged run started %q, want %q: %q", tools, want, w.fake.Calls()[from:])
	}
	// Issue 24 §3: on PVE each of these is a Perl program that compiles a
	// large part of PVE before it does anything; a converged run needs none.
	for _, c := range w.fake.Calls()[from:] {
		if tool, _, _ := strings.Cut(c, " "); slices.Contains([]string{"pveversion", "pvesh", "pvecm", "pvesm", "pvenode", "pvesubscription", "pveum", "qm", "pct", "ha-manager", "pvesr"}, tool) {
			t.Errorf("a converged run started PVE's Perl tool %q", c)
		}
	}
	delete(w.installed, "htop")
	res := w.run(args(), false)
	if failed(res) || res["changed"] != true || w.installed["htop"] == "" {
		t.Errorf("htop removed by hand: changed %v, installed %v (%v)", res["changed"], w.installed, res["msg"])
	}
}
