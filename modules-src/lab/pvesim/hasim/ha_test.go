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

// H2: PVE 9 refuses every HA group call (groups were migrated to rules) and
// a group on a resource; PVE 8 has groups and no rules.
func TestHAGroupsVersusRulesH2(t *testing.T) {
	t.Parallel()
	for _, v := range []int{8, 9} {
		_, a, _ := simtest.TwoNodes(t, pvesim.New, simtest.Opts{Version: v, TaskDuration: 30 * time.Millisecond, RestartWindow: 200 * time.Millisecond},
			func(c *pvesim.Config) { c.HADelay = 50 * time.Millisecond })
		simtest.CreateVM(t, a, 100, nil)
		g := url.Values{"group": {"prefer1"}, "nodes": {"pve01:2,pve02:1"}, "restricted": {"1"}}
		r := a.Call("POST", "/cluster/ha/groups", g)
		if v == 9 {
			if r.Status != 500 || r.Reason != "cannot create group: ha groups have been migrated to rules" {
				t.Errorf("PVE 9 group create: %d %q", r.Status, r.Reason)
			}
			if r := a.Call("GET", "/cluster/ha/groups", nil); r.Status != 500 || r.Reason != "cannot index groups: ha groups have been migrated to rules" {
				t.Errorf("PVE 9 group index: %d %q", r.Status, r.Reason)
			}
			r = a.Call("POST", "/cluster/ha/resources", url.Values{"sid": {"vm:100"}, "group": {"prefer1"}})
			if r.Status != 500 || r.Reason != "invalid parameter 'group': ha groups have been migrated to rules" {
				t.Errorf("PVE 9 resource with group: %d %q", r.Status, r.Reason)
			}
			a.Call("POST", "/cluster/ha/resources", url.Values{"sid": {"vm:100"}, "failback": {"0"}}).Must(t, "resource on 9")
			a.Call("POST", "/cluster/ha/rules", url.Values{"rule": {"prefer1"}, "type": {"node-affinity"},
				"resources": {"vm:100"}, "nodes": {"pve02:1,pve01:2"}, "strict": {"1"}}).Must(t, "rule")
			rule := a.Call("GET", "/cluster/ha/rules/prefer1", nil).Must(t, "rule").Obj()
			if rule["nodes"] != "pve01:2,pve02:1" || rule["strict"] != float64(1) || rule["resources"] != "vm:100" {
				t.Errorf("rule not normalised as PVE stores it: %v", rule)
			}
			for _, c := range []struct {
				p        url.Values
				status   int
				want     string
				errField string
			}{
				{url.Values{"rule": {"r2"}, "type": {"node-affinity"}, "resources": {"vm:101"}, "nodes": {"pve01"}}, 500, "cannot use unmanaged resource(s) vm:101.", ""},
				{url.Values{"rule": {"r3"}, "type": {"node-affinity"}, "resources": {"vm:100"}, "nodes": {"pve07"}}, 500, "cannot use non-existent node(s) pve07.", ""},
				{url.Values{"rule": {"r4"}, "type": {"node-affinity"}, "resources": {"vm:100"}, "nodes": {"pve02"}}, 400, "Rule 'r4' is invalid.", "resource 'vm:100' is already used in another node affinity rule"},
				{url.Values{"rule": {"r5"}, "type": {"resource-affinity"}, "resources": {"vm:100"}, "affinity": {"negative"}}, 400, "Rule 'r5' is invalid.", "rule is ineffective as there are less than two resources"},
			} {
				r := a.Call("POST", "/cluster/ha/rules", c.p)
				if r.Status != c.status || r.Reason != c.want || c.errField != "" && fmt.Sprint(r.Errs["resources"]) != c.errField {
					t.Errorf("rule %v: %d %q %v", c.p, r.Status, r.Reason, r.Errs)
				}
			}
			// Deleting the resource purges it from rules; the emptied rule goes.
			a.Call("DELETE", "/cluster/ha/resources/vm:100", nil).Must(t, "delete resource")
			if rules := a.Call("GET", "/cluster/ha/rules", nil).Must(t, "rules").List(); len(rules) != 0 {
				t.Errorf("rules after purge: %v", rules)
			}
		} else {
			if r.Status != 200 {
				t.Fatalf("PVE 8 group: %d %q", r.Status, r.Reason)
			}
			a.Call("POST", "/cluster/ha/resources", url.Values{"sid": {"100"}, "group": {"prefer1"}, "max_restart": {"2"}}).Must(t, "resource by VMID")
			res := a.Call("GET", "/cluster/ha/resources/vm:100", nil).Must(t, "resource").Obj()
			if res["group"] != "prefer1" || res["max_restart"] != float64(2) || res["sid"] != "vm:100" {
				t.Errorf("PVE 8 resource: %v", res)
			}
			if r := a.Call("GET", "/cluster/ha/rules", nil); r.Status != 501 {
				t.Errorf("PVE 8 has no HA rules: %d %q", r.Status, r.Reason)
			}
			r := a.Call("DELETE", "/cluster/ha/groups/prefer1", nil)
			if r.Status != 500 || !strings.Contains(r.Reason, "ha group is used by service 'vm:100'") {
				t.Errorf("delete used group: %d %q", r.Status, r.Reason)
			}
		}
		r = a.Call("DELETE", "/cluster/ha/resources/vm:100", nil)
		if v == 9 && (r.Status != 500 || r.Reason != "cannot delete service 'vm:100', not HA managed!") {
			t.Errorf("delete unmanaged: %d %q", r.Status, r.Reason)
		}
	}
}

// H4: starting an HA guest only asks the HA stack (a hastart task that is
// OK at once); the guest runs a CRM round later. The lab's HADelay makes
// the window visible.
func TestHAStartIsARequestH4(t *testing.T) {
	t.Parallel()
	_, a, _ := simtest.TwoNodes(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond, RestartWindow: 200 * time.Millisecond},
		func(c *pvesim.Config) { c.HADelay = 500 * time.Millisecond })
	simtest.CreateVM(t, a, 100, nil)
	a.Call("POST", "/cluster/ha/resources", url.Values{"sid": {"vm:100"}, "state": {"stopped"}}).Must(t, "resource")
	st := simtest.MustTask(t, a, "POST", "/nodes/pve01/qemu/100/status/start", nil)
	if st["type"] != "hastart" || st["exitstatus"] != "OK" {
		t.Fatalf("start of an HA guest: %v, want an OK hastart task", st)
	}
	if _, status := simtest.VMNode(t, a, 100); status != "stopped" {
		t.Errorf("guest %s right after the hastart task; the CRM has not acted yet", status)
	}
	if res := a.Call("GET", "/cluster/ha/resources/vm:100", nil).Must(t, "resource").Obj(); res["state"] != "started" {
		t.Errorf("requested state %v", res["state"])
	}
	haState := func() string {
		for _, e := range a.Call("GET", "/cluster/ha/status/current", nil).Must(t, "HA status").List() {
			if e["id"] == "service:vm:100" {
				return fmt.Sprint(e["status"])
			}
		}
		return ""
	}
	if got := haState(); got != "vm:100 (pve01, starting)" {
		t.Errorf("HA status before the CRM acts: %q", got)
	}
	simtest.Eventually(t, "CRM starts the guest", func() bool { _, s := simtest.VMNode(t, a, 100); return s == "running" })
	if got := haState(); got != "vm:100 (pve01, started)" {
		t.Errorf("HA status once running: %q", got)
	}
	r := a.Call("DELETE", "/nodes/pve01/qemu/100", nil)
	if r.Status != 500 || r.Reason != "unable to remove VM 100 - used in HA resources and purge parameter not set." {
		t.Errorf("destroy of an HA guest: %d %q", r.Status, r.Reason)
	}
	// An HA migration is a CRM command too: the answer comes at once, the
	// guest moves a round later, still running.
	if got := a.Call("POST", "/cluster/ha/resources/vm:100/migrate", url.Values{"node": {"pve02"}}).Must(t, "HA migrate").Obj(); got["requested-node"] != "pve02" {
		t.Errorf("HA migrate answer: %v", got)
	}
	if n, _ := simtest.VMNode(t, a, 100); n != "pve01" {
		t.Errorf("guest on %s right after the request", n)
	}
	simtest.Eventually(t, "guest migrated by the CRM", func() bool { n, st := simtest.VMNode(t, a, 100); return n == "pve02" && st == "running" })
}

// H3, H7, H8 and the replication swap: a powered-off node is fenced after
// FenceDelay and its HA guest (a full clone on ZFS, replicated to pve02)
// restarts on pve02; its replication job now goes back to pve01.
func TestHAFailoverH3H7(t *testing.T) {
	t.Parallel()
	s, a, b := simtest.TwoNodes(t, pvesim.New, simtest.Opts{Version: 9, Nodes: 3, TaskDuration: 30 * time.Millisecond, RestartWindow: 200 * time.Millisecond},
		func(c *pvesim.Config) {
			c.HADelay = 50 * time.Millisecond
			c.FenceDelay = 600 * time.Millisecond
			c.FailbackDelay = 400 * time.Millisecond
			c.ReplicationInterval = 100 * time.Millisecond
		})
	c3 := simtest.NewClient(t, s, "pve03").Root()
	simtest.JoinVia(t, s, a, c3)
	simtest.Eventually(t, "3 nodes", func() bool { return simtest.Quorate(a, 3) })
	a.Call("POST", "/storage", url.Values{"storage": {"tank"}, "type": {"zfspool"}, "pool": {"tank"}, "content": {"images"}}).Must(t, "zfs")
	simtest.CreateVM(t, a, 100, url.Values{"scsi0": {"tank:4"}})
	a.Call("POST", "/cluster/replication", url.Values{"id": {"100-0"}, "type": {"local"}, "target": {"pve02"}}).Must(t, "job")
	a.Call("POST", "/cluster/ha/resources", url.Values{"sid": {"vm:100"}}).Must(t, "resource")
	a.Call("POST", "/cluster/ha/rules", url.Values{"rule": {"replicas"}, "type": {"node-affinity"}, "resources": {"vm:100"},
		"nodes": {"pve01:2,pve02:1"}, "strict": {"1"}}).Must(t, "rule")
	simtest.Eventually(t, "running on pve01", func() bool { n, st := simtest.VMNode(t, b, 100); return n == "pve01" && st == "running" })
	simtest.Eventually(t, "first replication", func() bool {
		return a.Call("GET", "/nodes/pve01/replication/100-0/status", nil).Must(t, "repl status").Obj()["last_sync"] != float64(0)
	})
	// H8: a guest on local-lvm has no replica: recovered elsewhere, it cannot start.
	simtest.CreateVM(t, a, 101, nil)
	a.Call("POST", "/cluster/ha/resources", url.Values{"sid": {"vm:101"}}).Must(t, "resource 101")
	simtest.Eventually(t, "101 running", func() bool { _, st := simtest.VMNode(t, b, 101); return st == "running" })

	if err := s.SetOnline("pve01", false); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if n, st := simtest.VMNode(t, b, 100); n != "pve01" || st == "running" {
		t.Errorf("H7: before fencing the guest is still pve01's and not running: %s %s", n, st)
	}
	fencing := false
	for _, e := range b.Call("GET", "/cluster/ha/status/current", nil).Must(t, "HA status").List() {
		if e["id"] == "service:vm:100" && e["status"] == "vm:100 (pve01, fence)" {
			fencing = true
		}
	}
	if !fencing {
		t.Error("HA status does not show vm:100 being fenced on pve01")
	}
	simtest.Eventually(t, "recovered on pve02", func() bool { n, st := simtest.VMNode(t, b, 100); return n == "pve02" && st == "running" })
	// The job follows at pve02's next pvesr run (job_status switches the
	// jobs of a stolen guest): target is not fixed.
	var job map[string]any
	simtest.Eventually(t, "job switched to pve02 → pve01", func() bool {
		job = b.Call("GET", "/cluster/replication/100-0", nil).Must(t, "job").Obj()
		return job["source"] == "pve02" && job["target"] == "pve01"
	})
	simtest.Eventually(t, "101 recovered in error", func() bool {
		for _, e := range b.Call("GET", "/cluster/ha/status/current", nil).Must(t, "HA status").List() {
			if e["id"] == "service:vm:101" && e["state"] == "error" {
				return true
			}
		}
		return false
	})
	if _, st := simtest.VMNode(t, b, 101); st == "running" {
		t.Error("H8: a guest without a replica of its local disk runs after recovery")
	}
	r := b.Call("PUT", "/cluster/ha/resources/vm:101", url.Values{"state": {"started"}})
	if r.Status != 500 || r.Reason != "service 'vm:101' in error state, must be disabled and fixed first" {
		t.Errorf("restart of a service in error: %d %q", r.Status, r.Reason)
	}
	b.Call("PUT", "/cluster/ha/resources/vm:101", url.Values{"state": {"disabled"}}).Must(t, "disable the failed service")

	// Failback (H7): pve01 returns; FailbackDelay later the guest goes home,
	// still running, and the job points at pve02 again.
	if err := s.SetOnline("pve01", true); err != nil {
		t.Fatal(err)
	}
	if n, _ := simtest.VMNode(t, b, 100); n != "pve02" {
		t.Errorf("guest moved back at once (%s); failback takes FailbackDelay", n)
	}
	simtest.Eventually(t, "failback to pve01", func() bool { n, st := simtest.VMNode(t, b, 100); return n == "pve01" && st == "running" })
	job = b.Call("GET", "/cluster/replication/100-0", nil).Must(t, "job").Obj()
	if job["source"] != "pve01" || job["target"] != "pve02" {
		t.Errorf("replication job after failback: %v, want pve01 → pve02", job)
	}
}
