package pveclone

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
)

// Issue 25 §2: as_template ends the VM as a template, on PVE 8 and 9,
// bare and cloned. Check mode sends nothing and predicts the run change
// for change (the conversion and the disks' base-<vmid>-disk-N names
// included) and the config the real run reads back; the real run's
// request log shows exactly one write per predicted change, the
// conversion a qmtemplate task of the module's user; the rerun (real and
// check) is changed=false with zero writes and three reads, and a config
// difference on the template is warned about and never written.
func TestAsTemplate(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", v), func(t *testing.T) {
			w := newWorld(t, v)
			bare := map[string]any{"vmid": 330, "name": "tpl-bare", "node": "pve01", "cores": 2, "ciuser": "debian", "as_template": true,
				"disks": map[string]any{"scsi0": "local-lvm:2", "ide2": "local-lvm:cloudinit"}, "nets": map[string]any{"net0": "virtio,bridge=vmbr0"}}
			clone := map[string]any{"vmid": 331, "name": "tpl-clone", "template": "debian-12", "node": "pve02", "cores": 2, "memory": 1024,
				"as_template": true, "state": "stopped"}
			for _, c := range []struct {
				name  string
				args  map[string]any
				node  string
				write []string // the real run's writes, in order
				base  string   // scsi0's volume after the conversion
			}{
				{"bare", bare, "pve01", []string{"POST /nodes/pve01/qemu", "POST /nodes/pve01/qemu/330/template"}, "local-lvm:base-330-disk-0"},
				{"clone", clone, "pve02", []string{"POST /nodes/pve01/qemu/9000/clone", "PUT /nodes/pve02/qemu/331/config", "POST /nodes/pve02/qemu/331/template"}, "shared:331/base-331-disk-0"},
			} {
				t.Run(c.name, func(t *testing.T) {
					vmid := c.args["vmid"].(int)
					w.sim.ResetRequests()
					check := w.run(c.args, true)
					if failed(check) || check["changed"] != true || len(writes(w.sim)) != 0 {
						t.Fatalf("check: %v %q, writes %v", check["changed"], msg(check), writes(w.sim))
					}
					predicted := cfgOf(check)
					if predicted["template"] != "1" || !strings.HasPrefix(predicted["scsi0"], c.base) {
						t.Errorf("check predicts template %q scsi0 %q, want 1 and %s…", predicted["template"], predicted["scsi0"], c.base)
					}
					w.sim.ResetRequests()
					res := w.run(c.args, false)
					if failed(res) || res["changed"] != true {
						t.Fatalf("real run: %q", msg(res))
					}
					var sent []string
					for _, r := range writes(w.sim) {
						sent = append(sent, r.Method+" "+r.Path)
					}
					if !slices.Equal(sent, c.write) {
						t.Errorf("the real run's writes: %v, want %v", sent, c.write)
					}
					if pc, rc := fmt.Sprint(check["changes"]), fmt.Sprint(res["changes"]); pc != rc || len(res["changes"].([]any)) != len(c.write) {
						t.Errorf("check predicted the changes %s, the real run made %s (%d writes)", pc, rc, len(c.write))
					}
					got := w.config(c.node, vmid, false)
					if !got.Template() || !strings.HasPrefix(got.Values["scsi0"], c.base) {
						t.Errorf("read back: template %v, scsi0 %q", got.Template(), got.Values["scsi0"])
					}
					samePrediction(t, predicted, got.Values)
					if final := cfgOf(res); final["template"] != "1" || final["scsi0"] != got.Values["scsi0"] {
						t.Errorf("returned config: template %q scsi0 %q", final["template"], final["scsi0"])
					}
					qmtemplateByModule(t, w, c.node, vmid)

					for _, ck := range []bool{false, true} {
						w.sim.ResetRequests()
						again := w.run(c.args, ck)
						reads := 0
						for _, r := range w.sim.Requests() {
							if r.Path != "/access/ticket" {
								reads++
							}
						}
						if failed(again) || again["changed"] != false || len(writes(w.sim)) != 0 || reads > 3 || again["warnings"] != nil {
							t.Errorf("rerun (check %v): changed %v %q, writes %v, %d requests, warnings %v", ck, again["changed"], msg(again), writes(w.sim), reads, again["warnings"])
						}
					}
					// A template is left alone: a difference is named, never sent.
					drift := with(c.args, "cores", 4)
					for _, ck := range []bool{true, false} {
						w.sim.ResetRequests()
						d := w.run(drift, ck)
						if failed(d) || d["changed"] != false || len(writes(w.sim)) != 0 || !strings.Contains(pveapi.String(d["warnings"]), `cores (is "2", the task gives "4")`) {
							t.Errorf("drift on the template (check %v): changed %v %q, writes %v, warnings %v", ck, d["changed"], msg(d), writes(w.sim), d["warnings"])
						}
					}
					if got := w.config(c.node, vmid, false); got.Values["cores"] != "2" {
						t.Errorf("the template was reconfigured: cores %q", got.Values["cores"])
					}
				})
			}
		})
	}
}

// A running VM is never converted by surprise: with state present the
// task is refused before any write (PVE refuses to convert a running VM);
// with state stopped it is stopped, then converted, as predicted. state
// started contradicts as_template and is refused naming both; without
// as_template a template at the VMID is still refused.
func TestAsTemplateRunningAndContradictions(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", v), func(t *testing.T) {
			w := newWorld(t, v)
			vm := map[string]any{"vmid": 332, "name": "run-1", "node": "pve01", "disks": map[string]any{"scsi0": "local-lvm:1"}}
			if res := w.run(with(vm, "state", "started"), false); failed(res) {
				t.Fatalf("started VM: %q", msg(res))
			}
			for _, c := range []struct {
				args map[string]any
				want []string
			}{
				{with(vm, "as_template", true), []string{"as_template", "running", "state: stopped"}},
				{with(vm, "as_template", true, "state", "started"), []string{"as_template", "state: started"}},
				{with(vm, "as_template", true, "state", "started", "vmid", 333, "name", "new-1"), []string{"as_template", "state: started"}},
			} {
				for _, ck := range []bool{true, false} {
					w.sim.ResetRequests()
					res := w.run(c.args, ck)
					for _, s := range c.want {
						if !failed(res) || !strings.Contains(msg(res), s) {
							t.Errorf("%v (check %v): failed %v %q, want it to name %q", c.args, ck, failed(res), msg(res), s)
						}
					}
					if m := writes(w.sim); len(m) != 0 || res["changed"] == true {
						t.Errorf("%v (check %v): refused after writes %v (changed %v)", c.args, ck, m, res["changed"])
					}
				}
			}
			stop := with(vm, "as_template", true, "state", "stopped")
			w.sim.ResetRequests()
			check := w.run(stop, true)
			if failed(check) || len(writes(w.sim)) != 0 {
				t.Fatalf("check stop+convert: %q %v", msg(check), writes(w.sim))
			}
			w.sim.ResetRequests()
			res := w.run(stop, false)
			var sent []string
			for _, r := range writes(w.sim) {
				sent = append(sent, r.Method+" "+r.Path)
			}
			want := []string{"POST /nodes/pve01/qemu/332/status/shutdown", "POST /nodes/pve01/qemu/332/template"}
			if failed(res) || res["changed"] != true || !slices.Equal(sent, want) || fmt.Sprint(check["changes"]) != fmt.Sprint(res["changes"]) {
				t.Errorf("stop then convert: %q, writes %v (want %v), predicted %v, made %v", msg(res), sent, want, check["changes"], res["changes"])
			}
			got := w.config("pve01", 332, false)
			if !got.Template() || got.Values["scsi0"] != cfgOf(check)["scsi0"] || !strings.HasPrefix(got.Values["scsi0"], "local-lvm:base-332-disk-0") {
				t.Errorf("after stop+convert: template %v scsi0 %q (predicted %q)", got.Template(), got.Values["scsi0"], cfgOf(check)["scsi0"])
			}
			// Without as_template the template at the VMID is refused, as before.
			w.sim.ResetRequests()
			if res := w.run(vm, false); !failed(res) || !strings.Contains(msg(res), "is a template") || len(writes(w.sim)) != 0 {
				t.Errorf("a template without as_template: %v %q", failed(res), msg(res))
			}
		})
	}
}

// qmtemplateByModule: the node's task list holds one qmtemplate task for
// the VM, ended OK, of the user the module connects as.
func qmtemplateByModule(t *testing.T, w *world, node string, vmid int) {
	t.Helper()
	var tasks []map[string]any
	if err := w.client().Get(t.Context(), pveapi.Path("/nodes/%s/tasks", node), url.Values{"typefilter": {"qmtemplate"}, "vmid": {fmt.Sprint(vmid)}}, &tasks); err != nil {
		t.Fatal(err)
	}
	user, _, _ := strings.Cut(pveapi.String(w.conn["api_token_id"]), "!")
	if len(tasks) != 1 || pveapi.String(tasks[0]["status"]) != "OK" || !strings.HasPrefix(pveapi.String(tasks[0]["user"]), user) {
		t.Errorf("qmtemplate tasks of VM %d on %s: %v (want one, OK, by %s)", vmid, node, tasks, user)
	}
}

// A conversion whose answer is lost is settled by a read (the node's task
// list, the config's template: 1), never sent again; the run is changed
// and the template verified; the rerun is a no-op.
func TestAsTemplateLostAnswer(t *testing.T) {
	w := newWorld(t, 9)
	if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: "/nodes/*/qemu/*/template", Kind: pvesim.FaultLostAnswer, Count: 1}); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"vmid": 334, "name": "tpl-lost", "node": "pve01", "disks": map[string]any{"scsi0": "local-lvm:1"}, "as_template": true}
	w.sim.ResetRequests()
	res := w.run(args, false)
	sent := 0
	for _, r := range writes(w.sim) {
		if strings.HasSuffix(r.Path, "/template") {
			sent++
		}
	}
	if f := w.sim.Faults().List(); len(f) != 0 {
		t.Errorf("the lost answer fault never fired (a fault of count 1 leaves the list once it has): %+v", f)
	}
	if sent != 1 || failed(res) || res["changed"] != true {
		t.Fatalf("lost answer: the conversion was sent %d times; failed %v %q", sent, failed(res), msg(res))
	}
	if c := w.config("pve01", 334, false); !c.Template() || !strings.HasPrefix(c.Values["scsi0"], "local-lvm:base-334-disk-0") {
		t.Errorf("after the settled conversion: %v", c.Values)
	}
	w.sim.ResetRequests()
	if again := w.run(args, false); failed(again) || again["changed"] != false || len(writes(w.sim)) != 0 {
		t.Errorf("rerun: %v %q %v", again["changed"], msg(again), writes(w.sim))
	}
}
