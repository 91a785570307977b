package hasim_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
)

// haService is the service entry of /cluster/ha/status/current.
func haService(t *testing.T, c *simtest.Client, sid string) map[string]any {
	t.Helper()
	for _, e := range c.Call("GET", "/cluster/ha/status/current", nil).Must(t, "HA status").List() {
		if e["id"] == "service:"+sid {
			return e
		}
	}
	return nil
}

// stays checks, over several CRM rounds, that vmid does not leave node.
func stays(t *testing.T, c *simtest.Client, vmid int, node, why string) {
	t.Helper()
	for range 10 {
		if n, _ := simtest.VMNode(t, c, vmid); n != node {
			t.Fatalf("%s: guest %d moved to %s, want it to stay on %s", why, vmid, n, node)
		}
		time.Sleep(40 * time.Millisecond)
	}
}

// H2/H3: the CRM places a started service on its group's (8) or
// node-affinity rule's (9) highest-priority node within a round, running
// (Manager.pm next_state_started → select_service_node 'none' → migrate),
// and leaves it where it is when failback is off and its node is allowed.
func TestHAPlacementWithinACRMRoundH2H3(t *testing.T) {
	t.Parallel()
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", v), func(t *testing.T) {
			t.Parallel()
			_, a, _ := simtest.HACluster(t, pvesim.New, v, nil)
			simtest.CreateVM(t, a, 100, nil)
			simtest.CreateVM(t, a, 101, nil)
			for _, sid := range []string{"vm:100", "vm:101"} {
				p := url.Values{"sid": {sid}}
				if v == 9 && sid == "vm:101" {
					p.Set("failback", "0")
				}
				a.Call("POST", "/cluster/ha/resources", p).Must(t, "resource "+sid)
			}
			simtest.Eventually(t, "both running on pve01", func() bool {
				_, s0 := simtest.VMNode(t, a, 100)
				_, s1 := simtest.VMNode(t, a, 101)
				return s0 == "running" && s1 == "running"
			})
			// Status and resources tell clients HA owns these guests.
			ha := a.Call("GET", "/nodes/pve01/qemu/100/status/current", nil).Must(t, "status").Obj()["ha"].(map[string]any)
			if ha["managed"] != float64(1) || ha["state"] != "started" {
				t.Errorf("status/current ha: %v", ha)
			}
			if _, hasGroup := ha["group"]; hasGroup != (v == 8) {
				t.Errorf("PVE %d status/current ha group key: %v", v, ha)
			}
			for _, e := range a.Call("GET", "/cluster/resources", url.Values{"type": {"vm"}}).Must(t, "resources").List() {
				if e["hastate"] != "started" {
					t.Errorf("/cluster/resources hastate of %v: %v", e["vmid"], e["hastate"])
				}
			}
			// A preference for pve02: vm:100 moves there, still running; vm:101
			// (PVE 8: a nofailback group, PVE 9: failback 0) stays on its
			// allowed node.
			if v == 8 {
				a.Call("POST", "/cluster/ha/groups", url.Values{"group": {"prefer2"}, "nodes": {"pve02:2,pve01:1"}}).Must(t, "group")
				a.Call("POST", "/cluster/ha/groups", url.Values{"group": {"stay"}, "nodes": {"pve02:2,pve01:1"}, "nofailback": {"1"}}).Must(t, "group")
				a.Call("PUT", "/cluster/ha/resources/vm:100", url.Values{"group": {"prefer2"}}).Must(t, "group 100")
				a.Call("PUT", "/cluster/ha/resources/vm:101", url.Values{"group": {"stay"}}).Must(t, "group 101")
			} else {
				a.Call("POST", "/cluster/ha/rules", url.Values{"rule": {"prefer2"}, "type": {"node-affinity"}, "resources": {"vm:100,vm:101"},
					"nodes": {"pve02:2,pve01:1"}}).Must(t, "rule")
			}
			simtest.Eventually(t, "vm:100 migrated to pve02 by the CRM", func() bool {
				n, st := simtest.VMNode(t, a, 100)
				return n == "pve02" && st == "running"
			})
			stays(t, a, 101, "pve01", "failback off")
			// Only a node outside the allowed set moves it anyway.
			if v == 8 {
				a.Call("PUT", "/cluster/ha/groups/stay", url.Values{"restricted": {"1"}, "nodes": {"pve03"}}).Must(t, "restrict")
			} else {
				a.Call("PUT", "/cluster/ha/rules/prefer2", url.Values{"type": {"node-affinity"}, "strict": {"1"}, "nodes": {"pve03"}}).Must(t, "strict")
			}
			simtest.Eventually(t, "vm:101 leaves a node it may not use", func() bool {
				n, st := simtest.VMNode(t, a, 101)
				return n == "pve03" && st == "running"
			})
		})
	}
}

// H2: GET /cluster/ha/rules answers what $get_api_ha_rule builds: order
// (get_next_ordinal is the lowest order + 1, so a new rule lands second and
// the rest renumber), no strict/disable when 0, and errors for a rule the
// CRM would drop; disable=0 is ignored on update, delete=disable enables.
func TestHARulesFieldsAndOrderH2(t *testing.T) {
	t.Parallel()
	s, a, _ := simtest.TwoNodes(t, pvesim.New, simtest.Opts{Version: 9, TaskDuration: 30 * time.Millisecond, RestartWindow: 200 * time.Millisecond},
		func(c *pvesim.Config) { c.HADelay = 50 * time.Millisecond })
	for _, id := range []int{100, 101, 102} {
		simtest.CreateVM(t, a, id, nil)
		a.Call("POST", "/cluster/ha/resources", url.Values{"sid": {fmt.Sprintf("vm:%d", id)}, "state": {"stopped"}}).Must(t, "resource")
	}
	rule := func(id, res string) {
		a.Call("POST", "/cluster/ha/rules", url.Values{"rule": {id}, "type": {"node-affinity"}, "resources": {res}, "nodes": {"pve01:0,pve02:3"}}).Must(t, "rule "+id)
	}
	rule("r1", "vm:100")
	rule("r2", "vm:101")
	rule("r3", "vm:102")
	a.Call("POST", "/cluster/ha/rules", url.Values{"rule": {"r4"}, "type": {"resource-affinity"}, "resources": {"vm:100,vm:101"}, "affinity": {"negative"}}).Must(t, "rule r4")
	order := map[string]any{}
	for _, r := range a.Call("GET", "/cluster/ha/rules", nil).Must(t, "rules").List() {
		order[fmt.Sprint(r["rule"])] = r["order"]
		if r["type"] == "node-affinity" && (r["nodes"] != "pve01,pve02:3" || r["strict"] != nil || r["disable"] != nil || r["digest"] == nil) {
			t.Errorf("rule as Rules.pm returns it: %v", r)
		}
	}
	want := map[string]any{"r1": float64(1), "r2": float64(2), "r4": float64(3), "r3": float64(4)}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("rule orders %v, want %v (get_next_ordinal gives every new rule 2)", order, want)
	}
	a.Call("PUT", "/cluster/ha/rules/r1", url.Values{"type": {"node-affinity"}, "disable": {"1"}}).Must(t, "disable")
	a.Call("PUT", "/cluster/ha/rules/r1", url.Values{"type": {"node-affinity"}, "disable": {"0"}}).Must(t, "disable=0")
	if r := a.Call("GET", "/cluster/ha/rules/r1", nil).Must(t, "r1").Obj(); r["disable"] != float64(1) {
		t.Errorf("disable=0 on update re-enabled the rule: %v", r)
	}
	a.Call("PUT", "/cluster/ha/rules/r1", url.Values{"type": {"node-affinity"}, "delete": {"disable"}}).Must(t, "delete=disable")
	if r := a.Call("GET", "/cluster/ha/rules/r1", nil).Must(t, "r1").Obj(); r["disable"] != nil {
		t.Errorf("delete=disable did not enable the rule: %v", r)
	}
	// Two node-affinity rules for one resource (written past the API): both
	// carry the error.
	raw, _, _ := s.ReadPmxcfs("pve01", "ha/rules.cfg")
	if err := s.WritePmxcfs("pve01", "ha/rules.cfg", raw+"\nnode-affinity: dup\n\tnodes pve02\n\tresources vm:100\n", false); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r1", "dup"} {
		r := a.Call("GET", "/cluster/ha/rules/"+id, nil).Must(t, id).Obj()
		errs, _ := r["errors"].(map[string]any)
		if fmt.Sprint(errs["resources"]) != "[resource 'vm:100' is already used in another node affinity rule]" {
			t.Errorf("rule %s errors: %v", id, r["errors"])
		}
	}
}

// H2: a PVE 9 cluster upgraded with HA groups: until the CRM migrates them
// the rules API shows the ha-group-* rules (read-only) built in memory, and
// the groups still place their services; the CRM migrates only with every
// node online (Manager.pm try_persistent_group_migration), then the groups
// are rules, the resources lose group and nofailback becomes failback 0.
func TestHAGroupsMigrateToRulesPVE9H2(t *testing.T) {
	t.Parallel()
	s, a, _ := simtest.HACluster(t, pvesim.New, 9, func(c *pvesim.Config) { c.FenceDelay = time.Hour })
	if err := s.WritePmxcfs("pve01", "ha/groups.cfg",
		"group: home\n\tnodes pve01:2,pve02:1\n\tnofailback 1\n\trestricted 1\n\ngroup: unused\n\tnodes pve03\n", false); err != nil {
		t.Fatal(err)
	}
	simtest.CreateVM(t, a, 100, nil)
	a.Call("POST", "/cluster/ha/resources", url.Values{"sid": {"vm:100"}, "group": {"home"}, "state": {"stopped"}}).Must(t, "resource with group")
	// pve03 is down: no migration; the rules API shows the virtual rule.
	if err := s.SetOnline("pve03", false); err != nil {
		t.Fatal(err)
	}
	rules := a.Call("GET", "/cluster/ha/rules", nil).Must(t, "rules").List()
	if len(rules) != 1 || rules[0]["rule"] != "ha-group-home" || rules[0]["nodes"] != "pve01:2,pve02:1" || rules[0]["strict"] != float64(1) ||
		rules[0]["resources"] != "vm:100" || rules[0]["comment"] != "Generated from HA group 'home'." || rules[0]["order"] != float64(1) {
		t.Errorf("virtual rules before migration: %v", rules)
	}
	r := a.Call("PUT", "/cluster/ha/rules/ha-group-home", url.Values{"type": {"node-affinity"}, "strict": {"0"}})
	if r.Status != 500 || r.Reason != "cannot update ha rule: ha groups have not been migrated yet" {
		t.Errorf("update of a virtual rule: %d %q", r.Status, r.Reason)
	}
	time.Sleep(12 * 60 * time.Millisecond) // 12 CRM rounds: first try and a retry
	if r := a.Call("GET", "/cluster/ha/groups", nil); r.Status != 200 {
		t.Fatalf("groups migrated with pve03 offline: %d %q", r.Status, r.Reason)
	}
	if err := s.SetOnline("pve03", true); err != nil {
		t.Fatal(err)
	}
	simtest.Eventually(t, "groups migrated", func() bool {
		r := a.Call("GET", "/cluster/ha/groups", nil)
		return r.Status == 500 && r.Reason == "cannot index groups: ha groups have been migrated to rules"
	})
	res := a.Call("GET", "/cluster/ha/resources/vm:100", nil).Must(t, "resource").Obj()
	if res["group"] != nil || res["failback"] != float64(0) {
		t.Errorf("resource after migration: %v", res)
	}
	a.Call("PUT", "/cluster/ha/rules/ha-group-home", url.Values{"type": {"node-affinity"}, "comment": {"mine now"}}).Must(t, "migrated rule is a real rule")
	if l := a.Call("GET", "/cluster/ha/rules", nil).Must(t, "rules").List(); len(l) != 1 || l[0]["comment"] != "mine now" {
		t.Errorf("rules after migration: %v (the unused group must vanish)", l)
	}
}

// H3, H7: a powered-off node is fenced FenceDelay later and its replicated
// services — the seed's VM and container — come back on the preferred node;
// a VM whose cloud-init drive was never replicated (a cdrom) starts anyway
// (qemu-server regenerates it), and the replication jobs follow the guests
// (source/target switched, a client keyed on target sees them move) until
// failback puts them back. A service in error (H8: no replica) stays where
// it is on failback. PVE 8 prefers through a group, PVE 9 through a rule.
func TestHAFailoverFollowsReplicationH3H7H8(t *testing.T) {
	t.Parallel()
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", v), func(t *testing.T) { failoverFollowsReplication(t, v) })
	}
}

func failoverFollowsReplication(t *testing.T, v int) {
	t.Parallel()
	s, a, b := simtest.HACluster(t, pvesim.New, v, nil)
	simtest.CreateVM(t, a, 100, url.Values{"scsi0": {"tank:4"}, "ide2": {"tank:cloudinit"}})
	simtest.CreateVM(t, a, 101, nil) // local-lvm: no replica (H8)
	simtest.MustTask(t, a, "POST", "/nodes/pve01/lxc", url.Values{"vmid": {"200"}, "ostemplate": {"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"},
		"rootfs": {"tank:2"}})
	for _, id := range []string{"100-0", "200-0"} {
		a.Call("POST", "/cluster/replication", url.Values{"id": {id}, "type": {"local"}, "target": {"pve02"}}).Must(t, "job "+id)
	}
	sids := []string{"vm:100", "vm:101", "ct:200"}
	if v == 8 {
		a.Call("POST", "/cluster/ha/groups", url.Values{"group": {"home"}, "nodes": {"pve01:2,pve02:1"}}).Must(t, "group")
	}
	for _, sid := range sids {
		p := url.Values{"sid": {sid}}
		if v == 8 {
			p.Set("group", "home")
		}
		a.Call("POST", "/cluster/ha/resources", p).Must(t, sid)
	}
	if v == 9 {
		a.Call("POST", "/cluster/ha/rules", url.Values{"rule": {"home"}, "type": {"node-affinity"}, "resources": {strings.Join(sids, ",")},
			"nodes": {"pve01:2,pve02:1"}}).Must(t, "rule")
	}
	for _, id := range []string{"100-0", "200-0"} {
		simtest.Eventually(t, "first sync of "+id, func() bool {
			return a.Call("GET", "/nodes/pve01/replication/"+id+"/status", nil).Must(t, "status").Obj()["last_sync"] != float64(0)
		})
	}
	simtest.Eventually(t, "all running on pve01", func() bool {
		for _, id := range []int{100, 101, 200} {
			if n, st := simtest.VMNode(t, a, id); n != "pve01" || st != "running" {
				return false
			}
		}
		return true
	})

	if err := s.SetOnline("pve01", false); err != nil {
		t.Fatal(err)
	}
	if e := haService(t, b, "vm:100"); e["state"] != "fence" {
		t.Errorf("service on the dead node before fencing: %v", e)
	}
	for _, e := range b.Call("GET", "/cluster/resources", url.Values{"type": {"vm"}}).Must(t, "resources").List() {
		if e["vmid"] == float64(100) && e["hastate"] != "fence" {
			t.Errorf("hastate while fencing: %v", e["hastate"])
		}
	}
	for _, id := range []int{100, 200} {
		simtest.Eventually(t, fmt.Sprintf("%d recovered and running on pve02", id), func() bool { n, st := simtest.VMNode(t, b, id); return n == "pve02" && st == "running" })
	}
	if e := haService(t, b, "vm:100"); e["state"] != "started" {
		t.Errorf("recovered VM with a regenerated cloud-init drive: %v, want started", e)
	}
	if !strings.Contains(fmt.Sprint(b.Call("GET", "/nodes/pve02/storage/tank/content", nil).Must(t, "content").List()), "vm-100-cloudinit") {
		t.Error("no cloud-init volume on pve02 after the recovered VM started")
	}
	for _, id := range []string{"100-0", "200-0"} {
		simtest.Eventually(t, id+" follows the guest: pve02 → pve01", func() bool {
			j := b.Call("GET", "/cluster/replication/"+id, nil).Must(t, "job").Obj()
			return j["source"] == "pve02" && j["target"] == "pve01"
		})
	}
	simtest.Eventually(t, "vm:101 in error (no replica)", func() bool { return haService(t, b, "vm:101")["state"] == "error" })

	if err := s.SetOnline("pve01", true); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int{100, 200} {
		simtest.Eventually(t, fmt.Sprintf("failback of %d", id), func() bool { n, st := simtest.VMNode(t, b, id); return n == "pve01" && st == "running" })
	}
	for _, id := range []string{"100-0", "200-0"} {
		j := b.Call("GET", "/cluster/replication/"+id, nil).Must(t, "job").Obj()
		if j["source"] != "pve01" || j["target"] != "pve02" {
			t.Errorf("job %s after failback: %v, want pve01 → pve02", id, j)
		}
	}
	stays(t, b, 101, "pve02", "a service in error on failback")
	b.Call("PUT", "/cluster/ha/resources/vm:101", url.Values{"state": {"disabled"}}).Must(t, "disable")
	stays(t, b, 101, "pve02", "a disabled service")
}

// H2: PVE 8 keeps its groups: no rules API, no migration however many CRM
// rounds pass with every node online.
func TestHAGroupsStayOnPVE8H2(t *testing.T) {
	t.Parallel()
	_, a, _ := simtest.TwoNodes(t, pvesim.New, simtest.Opts{Version: 8, TaskDuration: 30 * time.Millisecond, RestartWindow: 200 * time.Millisecond},
		func(c *pvesim.Config) { c.HADelay = 50 * time.Millisecond })
	simtest.CreateVM(t, a, 100, nil)
	a.Call("POST", "/cluster/ha/groups", url.Values{"group": {"home"}, "nodes": {"pve01:2,pve02:1"}}).Must(t, "group")
	a.Call("POST", "/cluster/ha/resources", url.Values{"sid": {"vm:100"}, "group": {"home"}, "state": {"stopped"}}).Must(t, "resource")
	time.Sleep(12 * 50 * time.Millisecond)
	if g := a.Call("GET", "/cluster/ha/groups", nil).Must(t, "groups").List(); len(g) != 1 {
		t.Errorf("PVE 8 groups after 12 rounds: %v", g)
	}
	if res := a.Call("GET", "/cluster/ha/resources/vm:100", nil).Must(t, "resource").Obj(); res["group"] != "home" {
		t.Errorf("PVE 8 resource lost its group: %v", res)
	}
}
