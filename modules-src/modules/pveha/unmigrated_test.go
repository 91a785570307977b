package pveha

import (
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/ha"
)

// H2 on a PVE 9 cluster whose HA groups are not migrated yet (a node is
// down, so the CRM cannot migrate them): the module says what it found,
// writes placement as a group (rules are refused until then) and does not
// fight the migration — once the node is back and the CRM has turned the
// group into rule ha-group-<group>, a rerun adopts that rule: changed=0.
func TestUnmigratedPVE9DoesNotFightMigration(t *testing.T) {
	w := newWorld(t, 9)
	w.seedGuests()
	if err := w.sim.SetOnline("pve03", false); err != nil {
		t.Fatal(err)
	}
	if err := w.sim.WritePmxcfs("pve01", "ha/groups.cfg", "group: legacy\n\tnodes pve01:2,pve02\n", false); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"vmid": 201, "targets": []any{"pve01"}, "node_affinity": map[string]any{"pve02": 100, "pve01": 1},
		"wait_timeout": 30}
	res := w.run(args, false)
	if failed(res) || res["changed"] != true || res["mechanism"] != string(ha.UseGroupsUnmigrated) {
		t.Fatalf("unmigrated: %v %v %v", res["msg"], res["changed"], res["mechanism"])
	}
	if !strings.Contains(pveapi.String(res["warnings"]), "not migrated to rules yet") {
		t.Errorf("the module does not say what it found: %v", res["warnings"])
	}
	if p := res["placement"].(map[string]any); p["group"] != "gopve-vm-201" {
		t.Errorf("placement %v", p)
	}
	w.sim.WaitIdle()
	w.sim.ResetRequests()
	if again := w.run(args, false); failed(again) || again["changed"] != false {
		t.Errorf("unmigrated rerun: %v %v", again["msg"], again["changes"])
	}
	// The probe of H2 listed the groups: the plan uses that list, not a
	// second read (issue 24 §3).
	groupReads := 0
	for _, r := range w.sim.Requests() {
		if r.Method == "GET" && r.Path == "/cluster/ha/groups" {
			groupReads++
		}
	}
	if groupReads != 1 {
		t.Errorf("an unmigrated no-op rerun read the HA groups %d times, want once: %v", groupReads, requestLines(w.sim.Requests()))
	}
	withAffinity := map[string]any{"vmid": 201, "targets": []any{"pve01"},
		"resource_affinity": []any{map[string]any{"resources": []any{"200"}}}}
	if res := w.run(withAffinity, false); !failed(res) || !strings.Contains(pveapi.String(res["msg"]), "resource_affinity: this PVE 9 cluster's HA groups are not migrated") {
		t.Errorf("resource_affinity before the migration: %v", res["msg"])
	}

	if err := w.sim.SetOnline("pve03", true); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if mech, err := ha.Detect(w.ctx(), w.api, 9); err == nil && mech == ha.UseRules {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lab's CRM never migrated the groups to rules")
		}
		time.Sleep(100 * time.Millisecond)
	}
	w.sim.ResetRequests()
	res = w.run(args, false)
	if failed(res) || res["changed"] != false || res["mechanism"] != string(ha.UseRules) {
		t.Fatalf("after the migration: %v %v %v", res["msg"], res["changes"], res["mechanism"])
	}
	if p := res["placement"].(map[string]any); p["rule"] != "ha-group-gopve-vm-201" || p["nodes"] != "pve01:1,pve02:100" {
		t.Errorf("the migrated rule is not adopted: %v", p)
	}
	if m := w.writes(); len(m) != 0 {
		t.Errorf("after the migration the module wrote %v", m)
	}
}
