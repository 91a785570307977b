package pveclone

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// writeLines are the lab's mutating requests as "METHOD path k=v …" for
// the parameters that say what a migration is.
func writeLines(s *pvesim.Sim) []string {
	var out []string
	for _, r := range writes(s) {
		line := r.Method + " " + r.Path
		for _, k := range []string{"target", "online", "with-local-disks", "targetstorage", "node"} {
			if val, ok := r.Params[k]; ok && (k != "node" || strings.HasPrefix(r.Path, "/cluster/ha/")) {
				line += " " + k + "=" + val
			}
		}
		out = append(out, line)
	}
	return out
}

func (w *world) nodeOf(vmid int) string {
	w.t.Helper()
	g, ok := clusterguests.Find(w.guests(), vmid)
	if !ok {
		w.t.Fatalf("VM %d is not in the cluster", vmid)
	}
	return g.Node
}

func (w *world) statusOf(vmid int) string {
	w.t.Helper()
	g, _ := clusterguests.Find(w.guests(), vmid)
	return g.Status
}

// K2, K15: clone_then_migrate of a template on pve01's local-lvm to pve02.
// Check mode sends nothing and predicts the VM on pve02 with the config the
// real run reads back there; the real run clones on pve01 (no target),
// migrates offline with its local disk, then configures and starts it on
// pve02, one write each, as the request log shows; the rerun sends nothing.
// With storage, the disk ends on that storage (targetstorage). PVE 8 and 9.
func TestCloneThenMigrate(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", v), func(t *testing.T) {
			w := newWorld(t, v)
			args := map[string]any{"vmid": 221, "name": "moved-1", "template": "local-tpl", "node": "pve02",
				"clone_then_migrate": true, "cores": 2, "memory": 1024, "state": "started"}
			w.sim.ResetRequests()
			check := w.run(args, true)
			if failed(check) || check["changed"] != true || check["node"] != "pve02" || len(writes(w.sim)) != 0 {
				t.Fatalf("check: changed=%v node=%v %q writes %v", check["changed"], check["node"], msg(check), writes(w.sim))
			}
			if p := cfgOf(check); p["scsi0"] != "local-lvm:vm-221-disk-0,size=2G" || p["cores"] != "2" {
				t.Errorf("predicted config %v", p)
			}
			w.sim.ResetRequests()
			res := w.run(args, false)
			if failed(res) || res["changed"] != true || res["node"] != "pve02" {
				t.Fatalf("real run: changed=%v node=%v %q", res["changed"], res["node"], msg(res))
			}
			want := []string{
				"POST /nodes/pve01/qemu/9001/clone",
				"POST /nodes/pve01/qemu/221/migrate target=pve02 with-local-disks=1",
				"PUT /nodes/pve02/qemu/221/config",
				"POST /nodes/pve02/qemu/221/status/start",
			}
			if got := writeLines(w.sim); !slices.Equal(got, want) {
				t.Errorf("writes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if n := w.nodeOf(221); n != "pve02" {
				t.Errorf("VM 221 on %s", n)
			}
			got := w.config("pve02", 221, false)
			samePrediction(t, cfgOf(check), got.Values)
			if st := w.statusOf(221); st != "running" {
				t.Errorf("VM 221 on pve02 is %s", st)
			}
			w.sim.ResetRequests()
			if again := w.run(args, false); failed(again) || again["changed"] != false || len(writes(w.sim)) != 0 {
				t.Errorf("rerun: changed=%v %q writes %v", again["changed"], msg(again), writeLines(w.sim))
			}

			// Onto another storage of pve02: targetstorage.
			pveapitest.Write(t, w.client(), "POST", "/storage", url.Values{"storage": {"fast"}, "type": {"lvmthin"}, "vgname": {"pve"}, "thinpool": {"fast"}, "content": {"images"}, "nodes": {"pve02"}})
			args = map[string]any{"vmid": 222, "name": "moved-2", "template": "local-tpl", "node": "pve02", "clone_then_migrate": true, "storage": "fast"}
			check = w.run(args, true)
			w.sim.ResetRequests()
			res = w.run(args, false)
			if failed(check) || failed(res) || res["changed"] != true {
				t.Fatalf("targetstorage: %q / %q", msg(check), msg(res))
			}
			if got := writeLines(w.sim); len(got) < 2 || got[0] != "POST /nodes/pve01/qemu/9001/clone" || got[1] != "POST /nodes/pve01/qemu/222/migrate target=pve02 with-local-disks=1 targetstorage=fast" {
				t.Errorf("targetstorage writes %v", got)
			}
			if c := w.config("pve02", 222, false).Values; c["scsi0"] != "fast:vm-222-disk-0,size=2G" || cfgOf(check)["scsi0"] != c["scsi0"] {
				t.Errorf("scsi0 read back %q, predicted %q", c["scsi0"], cfgOf(check)["scsi0"])
			}
		})
	}
}

// Refused before any write, check mode alike: the target lacks the
// template's storage, the node is not in the cluster, a linked clone
// (H8). A template on shared storage is cloned straight to the node, no
// migration: the clone URL names the template's node, the target goes in
// `target` (K2).
func TestCloneThenMigrateRefusals(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", v), func(t *testing.T) {
			w := newWorld(t, v)
			pveapitest.Write(t, w.client(), "PUT", "/storage/local-lvm", url.Values{"nodes": {"pve01,pve03"}})
			base := map[string]any{"vmid": 231, "name": "r-1", "template": "local-tpl", "node": "pve02", "clone_then_migrate": true}
			for _, c := range []struct {
				change map[string]any
				want   string
			}{
				{nil, "storage 'local-lvm' is not available on node 'pve02'"},
				{map[string]any{"node": "pve09"}, "node: no such cluster node 'pve09'"},
				{map[string]any{"node": "pve03", "full": false}, "H8"},
			} {
				args := map[string]any{}
				for k, val := range base {
					args[k] = val
				}
				for k, val := range c.change {
					args[k] = val
				}
				for _, check := range []bool{true, false} {
					w.sim.ResetRequests()
					res := w.run(args, check)
					if !failed(res) || res["changed"] != false || !strings.Contains(msg(res), c.want) || len(writes(w.sim)) != 0 {
						t.Errorf("%v check=%v: changed=%v %q writes %v, want %q", c.change, check, res["changed"], msg(res), writes(w.sim), c.want)
					}
				}
			}
			if w.hasGuest(231) {
				t.Errorf("a refused clone_then_migrate made VM 231")
			}
			w.sim.ResetRequests()
			res := w.run(map[string]any{"vmid": 232, "name": "s-1", "template": "debian-12", "node": "pve02", "clone_then_migrate": true}, false)
			if failed(res) || w.nodeOf(232) != "pve02" || !strings.Contains(pveapi.String(res["changes"]), "no migration") {
				t.Errorf("shared template: %q changes %v", msg(res), res["changes"])
			}
			for _, l := range writeLines(w.sim) {
				if strings.Contains(l, "/migrate") {
					t.Errorf("a shared template's clone migrated: %v", writeLines(w.sim))
				}
			}
		})
	}
}

// A migration that fails after the clone is reported changed (the clone
// exists: its task, waited on the node that ran it, K3) and says where
// the VM is, read back by VMID cluster-wide (K1, H3): migrate-abort leaves it on
// the template's node; a rerun with migrate_existing moves it.
// migrate-problems moves it and fails the task: the VM is on the target.
func TestCloneThenMigrateFailedTask(t *testing.T) {
	w := newWorld(t, 9)
	args := map[string]any{"vmid": 241, "name": "f-1", "template": "local-tpl", "node": "pve02", "clone_then_migrate": true}
	if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: "/nodes/*/qemu/*/migrate", Kind: pvesim.FaultMigrateAbort, Message: "ssh: connection reset", Count: 1}); err != nil {
		t.Fatal(err)
	}
	res := w.run(args, false)
	if !failed(res) || res["changed"] != true || res["node"] != "pve01" || w.nodeOf(241) != "pve01" ||
		!strings.Contains(msg(res), "VM 241 is still on pve01 (cloned by this run: it exists), not on pve02") || !strings.Contains(msg(res), "migration aborted") {
		t.Fatalf("aborted migration: changed=%v node=%v %q", res["changed"], res["node"], msg(res))
	}
	if vs := stringsOf(res["changes_verified"]); len(vs) != 1 || !strings.HasPrefix(vs[0], "full clone of template 9001") {
		t.Errorf("changes_verified %v", vs)
	}
	if !strings.Contains(pveapi.String(res["task_log"]), "ssh: connection reset") {
		t.Errorf("task_log %v", res["task_log"])
	}
	w.sim.ResetRequests()
	again := w.run(args, false)
	if failed(again) || again["changed"] != false || len(writes(w.sim)) != 0 || !strings.Contains(pveapi.String(again["warnings"]), "VM 241 is on node pve01, not on pve02") {
		t.Errorf("rerun without migrate_existing: changed=%v %q warnings %v", again["changed"], msg(again), again["warnings"])
	}
	args["migrate_existing"] = true
	if fin := w.run(args, false); failed(fin) || fin["changed"] != true || w.nodeOf(241) != "pve02" {
		t.Errorf("rerun with migrate_existing: %q", msg(fin))
	}

	if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: "/nodes/*/qemu/*/migrate", Kind: pvesim.FaultMigrateProblems, Count: 1}); err != nil {
		t.Fatal(err)
	}
	res = w.run(map[string]any{"vmid": 242, "name": "f-2", "template": "local-tpl", "node": "pve03", "clone_then_migrate": true}, false)
	if !failed(res) || res["changed"] != true || res["node"] != "pve03" || w.nodeOf(242) != "pve03" ||
		!strings.Contains(msg(res), "VM 242 is on pve03 now (cloned by this run: it exists): the move happened, its task failed after it") {
		t.Errorf("migration problems: changed=%v node=%v %q", res["changed"], res["node"], msg(res))
	}
}

// An existing VM on another node than the task's (found by VMID
// cluster-wide, H3): without migrate_existing nothing moves and the warning and result say where it
// is; with it, a stopped VM migrates offline, a running one online with
// its local disk (with-local-disks), each read back on the target; the
// rerun sends nothing. A lost answer is settled from the node's task list
// (our principal, qmigrate, the VMID), never sent again.
func TestMigrateExisting(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", v), func(t *testing.T) {
			w := newWorld(t, v)
			if res := w.run(map[string]any{"vmid": 251, "name": "e-1", "template": "local-tpl"}, false); failed(res) {
				t.Fatal(msg(res))
			}
			args := map[string]any{"vmid": 251, "name": "e-1", "node": "pve02", "memory": 1024}
			w.sim.ResetRequests()
			res := w.run(args, false)
			if failed(res) || res["node"] != "pve01" || w.nodeOf(251) != "pve01" || strings.Contains(strings.Join(writeLines(w.sim), "\n"), "migrate") ||
				!strings.Contains(pveapi.String(res["warnings"]), "VM 251 is on node pve01, not on pve02 as the task asks; it was not moved") {
				t.Fatalf("option off: node=%v %q warnings %v writes %v", res["node"], msg(res), res["warnings"], writeLines(w.sim))
			}

			args["migrate_existing"] = true
			w.sim.ResetRequests()
			check := w.run(args, true)
			if failed(check) || check["changed"] != true || check["node"] != "pve02" || len(writes(w.sim)) != 0 || !strings.Contains(pveapi.String(check["changes"]), "migrate VM 251 from pve01 to pve02 (offline, with its local disks)") {
				t.Errorf("check offline: node=%v changes %v", check["node"], check["changes"])
			}
			w.sim.ResetRequests()
			res = w.run(args, false)
			if failed(res) || res["changed"] != true || res["node"] != "pve02" || w.nodeOf(251) != "pve02" {
				t.Fatalf("offline: %q", msg(res))
			}
			if got := writeLines(w.sim); !slices.Equal(got, []string{"POST /nodes/pve01/qemu/251/migrate target=pve02 with-local-disks=1"}) {
				t.Errorf("offline writes %v", got)
			}
			samePrediction(t, cfgOf(check), w.config("pve02", 251, false).Values)

			// Running: online, and the answer lost.
			if r := w.run(map[string]any{"vmid": 251, "name": "e-1", "state": "started"}, false); failed(r) {
				t.Fatal(msg(r))
			}
			args["node"], args["state"] = "pve03", "started"
			if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: "/nodes/*/qemu/*/migrate", Kind: pvesim.FaultLostAnswer, Count: 1}); err != nil {
				t.Fatal(err)
			}
			w.sim.ResetRequests()
			res = w.run(args, false)
			if failed(res) || res["changed"] != true || w.nodeOf(251) != "pve03" || w.statusOf(251) != "running" {
				t.Fatalf("online: %q", msg(res))
			}
			if got := writeLines(w.sim); !slices.Equal(got, []string{"POST /nodes/pve02/qemu/251/migrate target=pve03 online=1 with-local-disks=1"}) {
				t.Errorf("online writes (sent once) %v", got)
			}
			w.sim.ResetRequests()
			if again := w.run(args, false); failed(again) || again["changed"] != false || len(writes(w.sim)) != 0 {
				t.Errorf("rerun: %v %q %v", again["changed"], msg(again), writeLines(w.sim))
			}
		})
	}
}

// H4: a VM HA manages is moved by the HA manager (POST
// /cluster/ha/resources/vm:N/migrate), never by a direct migrate, and
// waited for until PVE reports it on the target.
func TestMigrateExistingThroughHA(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", v), func(t *testing.T) {
			w := newWorld(t, v, func(c *pvesim.Config) { c.HADelay = 200 * time.Millisecond })
			if res := w.run(map[string]any{"vmid": 261, "name": "h-1", "template": "debian-12", "state": "started"}, false); failed(res) {
				t.Fatal(msg(res))
			}
			pveapitest.Write(t, w.client(), "POST", "/cluster/ha/resources", url.Values{"sid": {"vm:261"}, "state": {"started"}})
			args := map[string]any{"vmid": 261, "name": "h-1", "node": "pve02", "migrate_existing": true, "state": "started"}
			check := w.run(args, true)
			if failed(check) || !strings.Contains(pveapi.String(check["changes"]), "migrate VM 261 from pve01 to pve02 (through HA)") {
				t.Fatalf("check: %q %v", msg(check), check["changes"])
			}
			w.sim.ResetRequests()
			res := w.run(args, false)
			if failed(res) || res["changed"] != true || w.nodeOf(261) != "pve02" || w.statusOf(261) != "running" {
				t.Fatalf("through HA: %q", msg(res))
			}
			if got := writeLines(w.sim); !slices.Equal(got, []string{"POST /cluster/ha/resources/vm:261/migrate node=pve02"}) {
				t.Errorf("writes %v", got)
			}
			w.sim.ResetRequests()
			if again := w.run(args, false); failed(again) || again["changed"] != false || len(writes(w.sim)) != 0 {
				t.Errorf("rerun: %v %q %v", again["changed"], msg(again), writeLines(w.sim))
			}
		})
	}
}
