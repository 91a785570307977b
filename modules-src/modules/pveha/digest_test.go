package pveha

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/ha"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// concurrently makes edit land, as another run's or an operator's write,
// between the module's read and its next PUT of path: the lab runs it when
// that PUT arrives at pve01 (the module's API node), before handling it
// (times: how many of the module's PUTs meet one). The other writer talks
// to pve02, so its own PUT does not trigger the hook. The edit's errors
// are returned by the func it gives back.
func (w *world) concurrently(path string, times int, edit func(n int) url.Values) func() error {
	other, err := pveapi.Connect(w.ctx(), pveapitest.TokenConn(w.t, w.sim, "pve02"), pveapi.Options{Retry: &pveapitest.FastRetry})
	if err != nil {
		w.t.Fatal(err)
	}
	var mu sync.Mutex
	var errs []error
	n := 0
	if _, err := w.sim.Faults().Add(pvesim.Fault{Node: "pve01", Method: "PUT", Path: path, Kind: pvesim.FaultLatency, Count: times, Before: func() {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		if err := pveapitest.Send(w.ctx(), other, "PUT", path, edit(k), nil); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}}); err != nil {
		w.t.Fatal(err)
	}
	return func() error {
		mu.Lock()
		defer mu.Unlock()
		if n != times {
			return fmt.Errorf("the concurrent edit ran %d times, want %d", n, times)
		}
		if len(errs) > 0 {
			return fmt.Errorf("the concurrent edit failed: %v", errs)
		}
		return nil
	}
}

// puts lists the PUTs of path the lab saw, with their answers' status.
func (w *world) puts(path string) []int {
	w.sim.WaitIdle()
	var out []int
	for _, r := range pveapitest.Mutating(w.sim) {
		if r.Method == "PUT" && r.Path == path {
			out = append(out, r.Status)
		}
	}
	return out
}

func (w *world) rule(id string) ha.Rule {
	w.t.Helper()
	rules, err := ha.Rules(w.ctx(), w.api)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, r := range rules {
		if r.ID == id {
			return r
		}
	}
	w.t.Fatalf("no HA rule %s", id)
	return ha.Rule{}
}

// A concurrent edit between pve_ha's read and its write is never lost
// (issue 23 §5): every PUT of a resource, group or rule carries the digest
// read, PVE (and the lab, as assert_if_modified does) refuses a stale one
// without writing, and the module reads again, plans the object anew from
// what is there now and sends it once more. Without the digest (today's
// main) the module's PUT overwrote the other write and both reported
// success. The request log shows the refused PUT (500), the other writer's
// and the module's second one; the objects in the lab hold both changes.
func TestConcurrentHAEditNotLost(t *testing.T) {
	t.Parallel()
	nodes := map[string]any{"pve01": 1, "pve02": 1, "pve03": 1}
	t.Run("PVE9 two guests added to one rule", func(t *testing.T) {
		w := newWorld(t, 9)
		w.seedGuests()
		if err := w.sim.AddGuest("pve03", pvesim.GuestSpec{VMID: 202, Config: map[string]string{"name": "db", "scsi0": "tank:4"}}); err != nil {
			t.Fatal(err)
		}
		pveapitestWrite(w, "POST", "/cluster/ha/resources", url.Values{"sid": {"vm:202"}, "state": {"stopped"}})
		first := map[string]any{"vmid": 201, "targets": []any{}, "state": "stopped", "rule": "shared", "node_affinity": nodes}
		if res := w.run(first, false); failed(res) || res["changed"] != true {
			t.Fatalf("first guest: %v", res["msg"])
		}
		// Another run adds vm:202 to the rule while this one adds ct:200.
		done := w.concurrently("/cluster/ha/rules/shared", 1, func(int) url.Values {
			return url.Values{"type": {"node-affinity"}, "resources": {"vm:201,vm:202"}}
		})
		w.sim.ResetRequests()
		second := map[string]any{"vmid": 200, "type": "ct", "targets": []any{}, "state": "stopped", "rule": "shared", "node_affinity": nodes}
		res := w.run(second, false)
		if err := done(); err != nil {
			t.Fatal(err)
		}
		warns := pveapi.String(res["warnings"])
		if failed(res) || res["changed"] != true || !strings.Contains(warns, "detected modified configuration") || !strings.Contains(warns, "rule shared changed") {
			t.Fatalf("second guest: failed %v changed %v: %v; warnings %s", res["failed"], res["changed"], res["msg"], warns)
		}
		t.Logf("warnings: %s", warns)
		if got := w.rule("shared").Resources; !slices.Equal(got, []ha.SID{{Type: "ct", VMID: 200}, {Type: "vm", VMID: 201}, {Type: "vm", VMID: 202}}) {
			t.Errorf("rule shared holds %v, want ct:200, vm:201 and vm:202: a guest was lost", got)
		}
		if got := w.puts("/cluster/ha/rules/shared"); !slices.Equal(got, []int{200, 500, 200}) {
			t.Errorf("PUTs of the rule: %v, want the other writer's (200), the module's refused one (500), its second (200)", got)
		}
		w.sim.ResetRequests()
		if again := w.run(second, false); failed(again) || again["changed"] != false || len(w.writes()) != 0 {
			t.Errorf("rerun: %v %v %v", again["msg"], again["changes"], w.writes())
		}
	})
	t.Run("PVE9 rule keeps changing: a clear failure, nothing lost", func(t *testing.T) {
		w := newWorld(t, 9)
		w.seedGuests()
		first := map[string]any{"vmid": 201, "targets": []any{}, "state": "stopped", "rule": "shared", "node_affinity": nodes}
		if res := w.run(first, false); failed(res) {
			t.Fatalf("first guest: %v", res["msg"])
		}
		done := w.concurrently("/cluster/ha/rules/shared", 2, func(n int) url.Values {
			return url.Values{"type": {"node-affinity"}, "comment": {fmt.Sprintf("edit %d", n)}}
		})
		w.sim.ResetRequests()
		second := map[string]any{"vmid": 200, "type": "ct", "targets": []any{}, "state": "stopped", "rule": "shared", "node_affinity": nodes}
		res := w.run(second, false)
		if err := done(); err != nil {
			t.Fatal(err)
		}
		msg := pveapi.String(res["msg"])
		if !failed(res) || !strings.Contains(msg, "changed again between this task's second read and its write") || !strings.Contains(msg, `rule shared changed`) || !strings.Contains(msg, "comment edit 2") {
			t.Fatalf("failed %v: %s", res["failed"], msg)
		}
		t.Logf("msg: %s", msg)
		// changed is what the lab saw: the resource ct:200 was declared,
		// the rule never written by the module.
		if res["changed"] != true || count(w.writes(), "POST /cluster/ha/resources") != 1 {
			t.Errorf("changed %v, writes %v", res["changed"], w.writes())
		}
		if got := w.puts("/cluster/ha/rules/shared"); !slices.Equal(got, []int{200, 500, 200, 500}) {
			t.Errorf("PUTs of the rule: %v", got)
		}
		if r := w.rule("shared"); r.Comment != "edit 2" || !slices.Equal(r.Resources, []ha.SID{{Type: "vm", VMID: 201}}) {
			t.Errorf("rule shared: %+v, want the other writer's last edit, untouched", r)
		}
	})
	t.Run("PVE8 group comment set meanwhile", func(t *testing.T) {
		w := newWorld(t, 8)
		w.seedGuests()
		args := map[string]any{"vmid": 201, "targets": []any{}, "state": "stopped", "node_affinity": map[string]any{"pve02": 100}}
		if res := w.run(args, false); failed(res) {
			t.Fatal(res["msg"])
		}
		done := w.concurrently("/cluster/ha/groups/gopve-vm-201", 1, func(int) url.Values {
			return url.Values{"comment": {"maintenance: keep"}}
		})
		args["node_affinity"] = map[string]any{"pve02": 100, "pve03": 50}
		w.sim.ResetRequests()
		res := w.run(args, false)
		if err := done(); err != nil {
			t.Fatal(err)
		}
		if failed(res) || res["changed"] != true || !strings.Contains(pveapi.String(res["warnings"]), "group gopve-vm-201 changed") {
			t.Fatalf("failed %v changed %v: %v %v", res["failed"], res["changed"], res["msg"], res["warnings"])
		}
		groups, err := ha.Groups(w.ctx(), w.api)
		if err != nil || len(groups) != 1 || groups[0].Comment != "maintenance: keep" || groups[0].Nodes.String() != "pve02:100,pve03:50" {
			t.Errorf("group after the run: %+v %v", groups, err)
		}
		if got := w.puts("/cluster/ha/groups/gopve-vm-201"); !slices.Equal(got, []int{200, 500, 200}) {
			t.Errorf("PUTs of the group: %v", got)
		}
	})
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d resource max_relocate set meanwhile", v), func(t *testing.T) {
			w := newWorld(t, v)
			w.seedGuests()
			args := map[string]any{"vmid": 201, "targets": []any{}, "state": "stopped", "max_relocate": 2}
			if res := w.run(args, false); failed(res) {
				t.Fatal(res["msg"])
			}
			done := w.concurrently("/cluster/ha/resources/vm:201", 1, func(int) url.Values {
				return url.Values{"max_relocate": {"4"}}
			})
			delete(args, "max_relocate")
			args["max_restart"] = 3
			w.sim.ResetRequests()
			res := w.run(args, false)
			if err := done(); err != nil {
				t.Fatal(err)
			}
			if failed(res) || res["changed"] != true || !strings.Contains(pveapi.String(res["warnings"]), "resource vm:201 changed") {
				t.Fatalf("failed %v changed %v: %v %v", res["failed"], res["changed"], res["msg"], res["warnings"])
			}
			list, err := ha.Resources(w.ctx(), w.api)
			if err != nil {
				t.Fatal(err)
			}
			r, ok := ha.FindResource(list, ha.SID{Type: "vm", VMID: 201})
			if !ok || r.MaxRestart == nil || *r.MaxRestart != 3 || r.MaxRelocate == nil || *r.MaxRelocate != 4 {
				t.Errorf("resource after the run: %+v, want max_restart 3 and the other writer's max_relocate 4", r)
			}
			if got := w.puts("/cluster/ha/resources/vm:201"); !slices.Equal(got, []int{200, 500, 200}) {
				t.Errorf("PUTs of the resource: %v", got)
			}
		})
	}
}

// A run that writes rules.cfg twice (its node-affinity rule created, then
// its resource-affinity rule updated) is not its own concurrent writer:
// the second PUT is planned from a fresh read, so it carries the digest of
// the file as the first write left it and is sent once, without a refusal
// or a "changed since it was read" warning. PVE 9.
func TestOwnWriteIsNoConcurrentEdit(t *testing.T) {
	w := newWorld(t, 9)
	w.seedGuests()
	pveapitestWrite(w, "POST", "/cluster/ha/resources", url.Values{"sid": {"ct:200"}, "state": {"stopped"}})
	args := map[string]any{"vmid": 201, "targets": []any{}, "state": "stopped",
		"resource_affinity": []any{map[string]any{"rule": "apart", "resources": []any{"200"}, "affinity": "negative"}}}
	if res := w.run(args, false); failed(res) {
		t.Fatal(res["msg"])
	}
	args["node_affinity"] = map[string]any{"pve02": 100}
	args["comment"] = "tenant a"
	w.sim.ResetRequests()
	res := w.run(args, false)
	if failed(res) || res["changed"] != true || strings.Contains(pveapi.String(res["warnings"]), "detected modified") {
		t.Fatalf("failed %v changed %v: %v; warnings %v", res["failed"], res["changed"], res["msg"], res["warnings"])
	}
	if got := w.puts("/cluster/ha/rules/apart"); !slices.Equal(got, []int{200}) {
		t.Errorf("PUTs of rule apart: %v, want one, accepted", got)
	}
	if r := w.rule("apart"); r.Comment != "tenant a" || r.Affinity != "negative" {
		t.Errorf("rule apart: %+v", r)
	}
	if again := w.run(args, false); failed(again) || again["changed"] != false {
		t.Errorf("rerun: %v %v", again["msg"], again["changes"])
	}
}
