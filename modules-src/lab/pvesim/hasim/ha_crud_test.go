package hasim_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
)

// The HA section-config collections (groups on PVE 8, rules on PVE 9,
// resources on both) answer their misses, duplicates, stale digests and
// in-use refusals each with its own message: pinned here so that the
// shared CRUD code keeps every one of them.
func TestHASectionCRUDMessages(t *testing.T) {
	t.Parallel()
	type call struct {
		method, path string
		p            url.Values
		status       int
		reason       string
	}
	stale := url.Values{"digest": {"0000000000000000000000000000000000000000"}}
	for _, v := range []int{8, 9} {
		_, a, _ := simtest.TwoNodes(t, pvesim.New, simtest.Opts{Version: v, TaskDuration: 30 * time.Millisecond, RestartWindow: 200 * time.Millisecond},
			func(c *pvesim.Config) { c.HADelay = 50 * time.Millisecond })
		simtest.CreateVM(t, a, 100, nil)
		simtest.CreateVM(t, a, 101, nil)
		a.Call("POST", "/cluster/ha/resources", url.Values{"sid": {"vm:100"}, "state": {"stopped"}}).Must(t, "resource")
		a.Call("POST", "/cluster/ha/resources", url.Values{"sid": {"vm:101"}, "state": {"stopped"}}).Must(t, "resource")
		calls := []call{
			{"GET", "/cluster/ha/resources/vm:105", nil, 500, "no such resource 'vm:105'"},
			{"PUT", "/cluster/ha/resources/vm:105", url.Values{"comment": {"x"}}, 500, "no such resource 'vm:105'"},
			{"PUT", "/cluster/ha/resources/vm:100", stale, 500, "update resource failed: detected modified configuration - file changed by other user? Try again."},
			{"DELETE", "/cluster/ha/resources/vm:105", nil, 500, "cannot delete service 'vm:105', not HA managed!"},
			{"POST", "/cluster/ha/resources", url.Values{"sid": {"vm:100"}}, 500, "create resource failed: resource ID 'vm:100' already defined"},
		}
		if v == 8 {
			a.Call("POST", "/cluster/ha/groups", url.Values{"group": {"g1"}, "nodes": {"pve01"}}).Must(t, "group")
			a.Call("PUT", "/cluster/ha/resources/vm:101", url.Values{"group": {"g1"}}).Must(t, "resource in group")
			calls = append(calls,
				call{"PUT", "/cluster/ha/resources/vm:100", url.Values{"group": {"g9"}}, 500, "HA group 'g9' does not exist"},
				call{"GET", "/cluster/ha/groups/g9", nil, 500, "no such ha group 'g9'"},
				call{"POST", "/cluster/ha/groups", url.Values{"group": {"g1"}, "nodes": {"pve02"}}, 500, "create ha group failed: ha group ID 'g1' already defined"},
				call{"PUT", "/cluster/ha/groups/g9", url.Values{"comment": {"x"}}, 500, "update ha group failed: no such ha group 'g9'"},
				call{"PUT", "/cluster/ha/groups/g1", stale, 500, "update ha group failed: detected modified configuration - file changed by other user? Try again."},
				call{"PUT", "/cluster/ha/groups/g1", url.Values{"delete": {"nodes"}}, 500, "update ha group failed: unable to delete required option 'nodes'"},
				call{"DELETE", "/cluster/ha/groups/g9", nil, 500, "delete ha group failed: no such ha group 'g9'"},
				call{"DELETE", "/cluster/ha/groups/g1", nil, 500, "delete ha group failed: ha group is used by service 'vm:101'"},
			)
		} else {
			a.Call("POST", "/cluster/ha/rules", url.Values{"rule": {"r1"}, "type": {"node-affinity"}, "resources": {"vm:100"}, "nodes": {"pve01"}}).Must(t, "rule")
			calls = append(calls,
				call{"GET", "/cluster/ha/rules/r9", nil, 500, "no such ha rule 'r9'"},
				call{"POST", "/cluster/ha/rules", url.Values{"rule": {"r1"}, "type": {"node-affinity"}, "resources": {"vm:101"}, "nodes": {"pve02"}}, 500, "HA rule 'r1' already defined"},
				call{"PUT", "/cluster/ha/rules/r9", url.Values{"type": {"node-affinity"}, "comment": {"x"}}, 500, "HA rule 'r9' does not exist"},
				call{"PUT", "/cluster/ha/rules/r1", url.Values{"type": {"resource-affinity"}, "comment": {"x"}}, 500, "types does not match"},
				call{"PUT", "/cluster/ha/rules/r1", url.Values{"type": {"node-affinity"}, "digest": stale["digest"]}, 500, "update HA rules failed: detected modified configuration - file changed by other user? Try again."},
				call{"DELETE", "/cluster/ha/rules/r9", nil, 500, "no such ha rule 'r9'"},
			)
		}
		for _, c := range calls {
			if r := a.Call(c.method, c.path, c.p); r.Status != c.status || r.Reason != c.reason {
				t.Errorf("PVE %d %s %s %v: %d %q, want %d %q", v, c.method, c.path, c.p, r.Status, r.Reason, c.status, c.reason)
			}
		}
		// What survived the refusals reads back unchanged.
		if v == 8 {
			g := a.Call("GET", "/cluster/ha/groups/g1", nil).Must(t, "group").Obj()
			if g["nodes"] != "pve01" || g["group"] != "g1" || g["type"] != "group" || g["restricted"] != nil {
				t.Errorf("group after refusals: %v", g)
			}
			a.Call("PUT", "/cluster/ha/groups/g1", url.Values{"restricted": {"1"}, "comment": {"c"}}).Must(t, "update group")
			a.Call("PUT", "/cluster/ha/groups/g1", url.Values{"delete": {"comment"}}).Must(t, "delete group option")
			if g := a.Call("GET", "/cluster/ha/groups", nil).Must(t, "groups").List(); len(g) != 1 || g[0]["restricted"] != float64(1) || g[0]["comment"] != nil || g[0]["digest"] == nil {
				t.Errorf("groups after update: %v", g)
			}
		} else {
			a.Call("PUT", "/cluster/ha/rules/r1", url.Values{"type": {"node-affinity"}, "comment": {"c"}, "nodes": {"pve02,pve01"}}).Must(t, "update rule")
			a.Call("PUT", "/cluster/ha/rules/r1", url.Values{"type": {"node-affinity"}, "delete": {"comment"}}).Must(t, "delete rule option")
			r := a.Call("GET", "/cluster/ha/rules/r1", nil).Must(t, "rule").Obj()
			// set_rule_defaults adds only truthy defaults: strict 0 and
			// disable 0 are absent; order is the rule's place in rules.cfg.
			if r["nodes"] != "pve01,pve02" || r["comment"] != nil || r["strict"] != nil || r["disable"] != nil || r["digest"] == nil || r["order"] != float64(1) {
				t.Errorf("rule after update: %v", r)
			}
			a.Call("DELETE", "/cluster/ha/rules/r1", nil).Must(t, "delete rule")
			if l := a.Call("GET", "/cluster/ha/rules", nil).Must(t, "rules").List(); len(l) != 0 {
				t.Errorf("rules after delete: %v", l)
			}
		}
	}
}
