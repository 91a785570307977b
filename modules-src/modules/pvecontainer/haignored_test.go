package pvecontainer

import (
	"context"
	"net/url"
	"strings"
	"testing"
)

// H4: an HA resource in state ignored is not HA-managed for PVE
// (HA::Config's service_check_ha_state: "ignored service behave as if
// they were not managed"): pve-container's vm_start and vm_stop run the
// guest directly (vzstart, vzstop), and an HA request would be refused.
// The guest list still shows hastate "ignored". The task starts and stops
// the CT directly, says nothing of HA, and the rerun changes nothing.
func TestHAIgnoredStartsDirectlyH4(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 9)
	if res := w.run(runnerArgs(), false); failed(res) {
		t.Fatalf("create: %v", msg(res))
	}
	w.write("POST", "/cluster/ha/resources", url.Values{"sid": {"ct:200"}, "state": {"ignored"}})
	for _, state := range []string{"started", "stopped"} {
		for _, check := range []bool{true, false} {
			w.sim.ResetRequests()
			res := w.run(with(runnerArgs(), "state", state), check)
			if failed(res) || res["changed"] != true || strings.Contains(msg(res), "through HA") {
				t.Fatalf("%s check=%v: %v %v", state, check, res["changed"], msg(res))
			}
			if m := writes(w.sim); check && len(m) != 0 {
				t.Errorf("%s: check mode wrote %+v", state, m)
			}
		}
		running := w.statusRunning()
		if running != (state == "started") {
			t.Errorf("%s: running %v", state, running)
		}
		action := map[string]string{"started": "start", "stopped": "shutdown"}[state]
		var sent []string
		for _, r := range writes(w.sim) {
			sent = append(sent, r.Method+" "+r.Path)
		}
		if len(sent) != 1 || sent[0] != "POST /nodes/pve01/lxc/200/status/"+action {
			t.Errorf("%s sent %v", state, sent)
		}
		// The node ran it itself: CT 200's tasks hold a vz<action> and no
		// HA request (hastart, hastop).
		var tasks []struct {
			Type string `json:"type"`
		}
		if err := w.client().Get(context.Background(), "/nodes/pve01/tasks", url.Values{"vmid": {"200"}}, &tasks); err != nil {
			t.Fatal(err)
		}
		direct := false
		for _, task := range tasks {
			direct = direct || task.Type == "vz"+action
			if strings.HasPrefix(task.Type, "ha") {
				t.Errorf("%s: an HA request ran: %+v", state, tasks)
			}
		}
		if !direct {
			t.Errorf("%s: no vz%s task: %+v", state, action, tasks)
		}
		w.sim.ResetRequests()
		if again := w.run(with(runnerArgs(), "state", state), false); again["changed"] != false || len(writes(w.sim)) != 0 {
			t.Errorf("%s rerun: %v", state, msg(again))
		}
	}
}
