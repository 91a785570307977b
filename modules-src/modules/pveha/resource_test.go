package pveha

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// PVE's resource list leaves defaults out: a resource declared elsewhere
// with only its SID compares equal to a task asking for PVE's defaults
// (state started, max_restart 1, max_relocate 1, failback on PVE 9), and
// reports changed=0 from the first run on.
func TestResourceMadeElsewhereComparesEqual(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE %d", v), func(t *testing.T) {
			w := newWorld(t, v)
			w.seedGuests()
			pveapitestWrite(w, "POST", "/cluster/ha/resources", url.Values{"sid": {"201"}})
			args := map[string]any{"vmid": 201, "targets": []any{}, "state": "started", "max_restart": 1, "max_relocate": 1}
			if v == 9 {
				args["failback"] = true
			}
			w.sim.ResetRequests()
			res := w.run(args, false)
			if failed(res) || res["changed"] != false || len(w.writes()) != 0 {
				t.Errorf("a resource with PVE's defaults made elsewhere: %v %v %v", res["msg"], res["changes"], w.writes())
			}
			args["max_restart"] = 3
			res = w.run(args, false)
			if failed(res) || res["changed"] != true || !strings.Contains(fmt.Sprint(res["changes"]), "max_restart 1 → 3") {
				t.Errorf("max_restart 3: %v %v", res["msg"], res["changes"])
			}
		})
	}
}

// H4: started and stopped belong to HA. The module changes the resource's
// requested state and polls the guest's real state until the HA manager
// has acted; it never calls the guest's own start or stop.
func TestStateThroughHA(t *testing.T) {
	w := newWorld(t, 9)
	w.seedGuests()
	args := map[string]any{"vmid": 201, "targets": []any{"pve01"}, "state": "started", "wait_timeout": 30}
	if res := w.run(args, false); failed(res) || res["guest"].(map[string]any)["status"] != "running" {
		t.Fatalf("started: %v %v", res["msg"], res["guest"])
	}
	for _, state := range []string{"stopped", "started", "disabled"} {
		args["state"] = state
		w.sim.ResetRequests()
		res := w.run(args, false)
		want := map[string]string{"stopped": "stopped", "started": "running", "disabled": "stopped"}[state]
		if failed(res) || res["changed"] != true || res["guest"].(map[string]any)["status"] != want {
			t.Errorf("%s: %v guest %v", state, res["msg"], res["guest"])
		}
		if got := w.writes(); !slices.Equal(got, []string{"PUT /cluster/ha/resources/vm:201"}) {
			t.Errorf("%s: the module wrote %v, want only the resource's requested state", state, got)
		}
	}
}

// An emptied node_affinity takes the guest's placement away: on PVE 9 its
// rule goes; on PVE 8 the resource leaves its group, then the group goes
// (in that order: PVE refuses to remove a group a resource still names).
func TestEmptyNodeAffinityRemovesPlacement(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE %d", v), func(t *testing.T) {
			w := newWorld(t, v)
			w.seedGuests()
			args := vmArgs()
			args["state"] = "stopped"
			if res := w.run(args, false); failed(res) {
				t.Fatal(res["msg"])
			}
			args["node_affinity"] = map[string]any{}
			w.sim.ResetRequests()
			res := w.run(args, false)
			want := []string{"DELETE /cluster/ha/rules/gopve-vm-201"}
			if v == 8 {
				want = []string{"PUT /cluster/ha/resources/vm:201", "DELETE /cluster/ha/groups/gopve-vm-201"}
			}
			if failed(res) || res["changed"] != true || !slices.Equal(w.writes(), want) {
				t.Errorf("emptied node_affinity: %v, wrote %v, want %v", res["msg"], w.writes(), want)
			}
			if again := w.run(args, false); failed(again) || again["changed"] != false {
				t.Errorf("again: %v %v", again["msg"], again["changes"])
			}
		})
	}
}
