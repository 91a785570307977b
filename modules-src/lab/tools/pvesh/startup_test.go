package pvesh

import (
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/tools/nodecfg"
)

// TestStartupIsConfigurable: the stand-in's start-up cost defaults to real
// pvesh's figure and is set by node.json or the environment (env first).
func TestStartupIsConfigurable(t *testing.T) {
	none := func(string) string { return "" }
	ms := func(v int) *int { return &v }
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvStartup {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		node   *nodecfg.Node
		getenv func(string) string
		want   time.Duration
	}{
		{&nodecfg.Node{}, none, DefaultStartup},
		{&nodecfg.Node{PveshStartupMS: ms(0)}, none, 0},
		{&nodecfg.Node{PveshStartupMS: ms(750)}, none, 750 * time.Millisecond},
		{&nodecfg.Node{PveshStartupMS: ms(750)}, env("20"), 20 * time.Millisecond},
		{&nodecfg.Node{}, env("junk"), DefaultStartup},
	} {
		if got := Startup(tc.node, tc.getenv); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.node.PveshStartupMS, got, tc.want)
		}
	}
	if DefaultStartup != 500*time.Millisecond {
		t.Errorf("default %s: issue 16's figure for real pvesh is 0.5 s", DefaultStartup)
	}
}
