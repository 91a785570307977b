package tools

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
	"github.com/gopve/proxmox/modules-src/lab/tools/nodecfg"
	"github.com/gopve/proxmox/modules-src/lab/tools/perlstartup"
)

// TestPerlToolsStartUpCost (issue 24 §2): every stand-in of one of PVE's
// Perl tools has a start-up figure, and waits it when node.json's
// perl_startup_ms says so (what `lab up` writes by default); without it
// (the switch off) it answers at once. pvesh has its own figure and knob.
func TestPerlToolsStartUpCost(t *testing.T) {
	want := []string{"ha-manager", "pct", "pvecm", "pvesm", "pvesr", "qm"}
	if got := perlstartup.Tools(); !slices.Equal(got, want) {
		t.Errorf("tools with a start-up figure %q, want %q", got, want)
	}
	for _, name := range want {
		if !slices.Contains(Names(), name) {
			t.Errorf("%s has a figure but no stand-in", name)
		}
	}
	dir := t.TempDir()
	run := func(ms map[string]int) time.Duration {
		t.Helper()
		b, _ := json.Marshal(nodecfg.Node{Node: "pve01", PVE: 9, StateDir: dir, PerlStartupMS: ms})
		p := filepath.Join(dir, "node.json")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		env := &cli.Env{Args: []string{"help"}, Stdin: nil, Stdout: io.Discard, Stderr: io.Discard,
			Getenv: func(k string) string {
				if k == nodecfg.EnvPath {
					return p
				}
				return ""
			}}
		start := time.Now()
		if _, ok := Run("pvecm", env); !ok {
			t.Fatal("pvecm is not a stand-in")
		}
		return time.Since(start)
	}
	if took := run(map[string]int{"pvecm": 300}); took < 300*time.Millisecond {
		t.Errorf("pvecm with a 300 ms start-up answered after %s", took)
	}
	if took := run(nil); took >= 300*time.Millisecond {
		t.Errorf("pvecm with the costs off answered after %s", took)
	}
	if got := perlstartup.For("qm", perlstartup.DefaultMS()); got != perlstartup.Default["qm"] {
		t.Errorf("qm's default wait through node.json: %s", got)
	}
}
