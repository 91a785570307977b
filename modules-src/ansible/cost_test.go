package ansible

import (
	"context"
	"io"
	"testing"

	"github.com/gopve/proxmox/modules-src/host"
)

// TestCostAtVerbosity3 (issue 24 §3): at -vvv a result carries gopve_cost,
// what the run really started: every process host's runner started (one
// that failed after starting counts; one that could not start does not),
// counted under any context of the run. Below -vvv the key is absent, so
// ordinary results do not change.
func TestCostAtVerbosity3(t *testing.T) {
	m := &Module{Name: "costly", Run: func(r *Run) error {
		run := &host.ExecRunner{}
		_, _ = run.Run(r.Context(), host.Command{Name: "true"})
		_, _ = run.Run(r.Context(), host.Command{Name: "sh", Args: []string{"-c", "exit 3"}})
		_, _ = run.Run(r.Context(), host.Command{Name: "/nonexistent/never-starts"})
		return nil
	}}
	for _, v := range []int{0, 2, 3, 4} {
		res := Execute(context.Background(), m, &Invocation{Params: map[string]any{}, Verbosity: v}, func(string) (string, bool) { return "", false }, io.Discard)
		got, ok := res[costKey]
		if v < 3 {
			if ok {
				t.Errorf("verbosity %d: %s = %v, want no such key below -vvv", v, costKey, got)
			}
			continue
		}
		c, _ := got.(map[string]any)
		if c == nil || c["processes"] != 2 || c["api_requests"] != 0 || c["connections"] != 0 {
			t.Errorf("verbosity %d: %s = %#v, want 2 processes (true, sh), no request, no connection", v, costKey, got)
		}
	}
}
