package pvestorage

import (
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// Issue 15 item 5: prune_backups is checked like PVE's 'prune-backups'
// format (Plugin.pm $prune_backups_format + validate_prune_backups) before
// any request: the error names prune_backups and the key, in check mode as
// in a real run, and the simulator sees no request at all (S2: refused
// before the first write, and before the first read too).
func TestPruneBackupsValidated(t *testing.T) {
	w := newWorld(t, 9)
	base := map[string]any{"storage": "bk", "type": "dir", "path": "/srv/bk", "content": []any{"backup"}}
	cases := []struct {
		value any
		want  string
	}{
		{map[string]any{"keep-lats": 3}, `prune_backups: unknown key "keep-lats"`},
		{map[string]any{"keep_last": 3}, `prune_backups: unknown key "keep_last" (PVE spells it keep-last)`},
		{map[string]any{"keep-last": "x"}, `prune_backups: keep-last: "x" is not an integer`},
		{map[string]any{"keep-daily": -1}, `prune_backups: keep-daily: "-1" is not an integer of at least 0`},
		{map[string]any{"keep-all": "maybe"}, `prune_backups: keep-all: "maybe" is not a boolean`},
		{map[string]any{"keep-all": true, "keep-last": 3}, "prune_backups: keep-all cannot be set together with keep-last"},
		{"keep-all=1,keep-weekly=2", "prune_backups: keep-all cannot be set together with keep-weekly"},
		{"keep-last=1,keep-last=2", "prune_backups: key keep-last given twice"},
		{"keep-last", `prune_backups: "keep-last" is not key=value`},
	}
	for _, check := range []bool{true, false} {
		for _, c := range cases {
			w.sim.ResetRequests()
			args := with(base, "prune_backups", c.value)
			res := w.run(args, check)
			if !failed(res) || !strings.Contains(res["msg"].(string), c.want) || res["changed"] != false {
				t.Errorf("check=%v prune_backups=%v: failed=%v changed=%v %q, want %q", check, c.value, res["failed"], res["changed"], res["msg"], c.want)
			}
			if reqs := w.sim.Requests(); len(reqs) != 0 {
				t.Errorf("check=%v prune_backups=%v: %d requests before the refusal: %+v", check, c.value, len(reqs), reqs)
			}
		}
	}
	// What PVE accepts goes through and converges: keep-all=1 with zeros
	// is keep-all (validate_prune_backups), keep-all=0 with others is fine.
	for _, ok := range []any{
		map[string]any{"keep-last": 3, "keep-weekly": 2},
		map[string]any{"keep-all": true, "keep-last": 0},
		map[string]any{"keep-all": false, "keep-daily": 7},
	} {
		args := with(base, "prune_backups", ok)
		if res := w.run(args, false); failed(res) {
			t.Errorf("prune_backups=%v refused: %v", ok, res["msg"])
		}
		w.sim.ResetRequests()
		if res := w.run(args, false); failed(res) || res["changed"] != false || len(pveapitest.Mutating(w.sim)) != 0 {
			t.Errorf("prune_backups=%v rerun: changed=%v %v", ok, res["changed"], res["msg"])
		}
	}
}
