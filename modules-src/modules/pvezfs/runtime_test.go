package pvezfs

import (
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/host"
)

// Real run = prediction, compared on outcomes: the pool's properties after
// the real run are the ones check mode showed (the create's diff, and the
// property changes planned against the pool as the create leaves it), and
// the scrub timers are in the predicted state.
func TestPredictionIsTheOutcome(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(w *world)
	}{
		{"fresh node", func(*world) {}},
		{"existing pool drifted", func(w *world) {
			w.run(map[string]any{"name": "tank", "devices": []any{"/dev/nvme0n1"}}, false)
			w.pools["tank"].props["compression"] = "off"
			w.pools["tank"].props["mountpoint"] = "/elsewhere"
			w.units["zfs-scrub-monthly@tank.timer"] = false
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			tc.setup(w)
			args := map[string]any{"name": "tank", "devices": []any{"/dev/nvme0n1"}, "properties": map[string]any{"compression": "zstd"}, "scrub": "weekly"}
			before := len(w.fake.Calls())
			check := w.run(args, true)
			if failed(check) || check["changed"] != true {
				t.Fatalf("check mode: %v", check["msg"])
			}
			for _, c := range w.fake.Calls()[before:] {
				f := strings.Fields(c)
				if !host.ReadOnlyCommand(host.Command{Name: f[0], Args: f[1:]}) {
					t.Errorf("check mode ran %q, which is not read-only", c)
				}
			}
			predicted := map[string]string{}
			for _, d := range check["diff"].([]any) {
				d := d.(map[string]any)
				switch after := d["after"].(type) {
				case map[string]any: // the create
					for k, v := range after["properties"].(map[string]any) {
						predicted[k] = v.(string)
					}
				case string: // one property: "k=v\n"
					k, v, _ := strings.Cut(strings.TrimSpace(after), "=")
					predicted[k] = v
				}
			}
			if len(predicted) == 0 {
				t.Fatalf("check mode showed no property: %v", check["diff"])
			}
			units := map[string]bool{}
			for _, c := range changes(check) {
				if unit, ok := strings.CutPrefix(c, "enable and start "); ok {
					units[unit] = true
				}
				if unit, ok := strings.CutPrefix(c, "disable and stop "); ok {
					units[unit] = false
				}
			}
			real := w.run(args, false)
			if failed(real) {
				t.Fatalf("real run: %v", real["msg"])
			}
			pool := w.pools["tank"]
			for k, v := range predicted {
				if !sameValue(k, pool.props[k], v) {
					t.Errorf("%s=%s after the real run, check mode predicted %s", k, pool.props[k], v)
				}
			}
			if pool.props["compression"] != "zstd" || pool.props["mountpoint"] != "/tank" {
				t.Errorf("the run did not converge: %v", pool.props)
			}
			for unit, on := range units {
				if w.units[unit] != on {
					t.Errorf("%s enabled=%v after the real run, check mode predicted %v", unit, w.units[unit], on)
				}
			}
		})
	}
}
