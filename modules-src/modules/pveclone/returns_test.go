package pveclone

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
)

// The returns the issue lists, on PVE 8 and 9: a clone task that ends
// WARNINGS (qemu-server's clone_vm discards a template's pending changes
// with "found pending changes for '…', discarding for clone") succeeds
// with the task's own warning lines in clone_warnings and in the run's
// warnings; check mode predicts the clone from the template's stored
// values, not its pending ones, as clone_vm copies them; --diff shows the
// config before and after a change of an existing VM in check mode and in
// the real run alike.
func TestReturnsWarningsAndDiff(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", v), func(t *testing.T) {
			w := newWorld(t, v)
			if err := w.sim.AddGuest("pve01", pvesim.GuestSpec{VMID: 9007, Template: true, Config: map[string]string{
				"name": "pending-tpl", "scsi0": "shared:1", "net0": "virtio,bridge=vmbr0", "cores": "1"}}); err != nil {
				t.Fatal(err)
			}
			path := "nodes/pve01/qemu-server/9007.conf"
			conf, _, err := w.sim.ReadPmxcfs("pve01", path)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.sim.WritePmxcfs("pve01", path, conf+"\n[PENDING]\ncores: 4\n", false); err != nil {
				t.Fatal(err)
			}
			args := map[string]any{"vmid": 221, "name": "pend-1", "template": "pending-tpl", "node": "pve02"}
			w.sim.ResetRequests()
			check := w.run(args, true)
			if failed(check) || len(writes(w.sim)) != 0 || cfgOf(check)["cores"] != "1" {
				t.Fatalf("check: %v cores %q", msg(check), cfgOf(check)["cores"])
			}
			res := w.run(args, false)
			want := "WARN: found pending changes for 'cores', discarding for clone"
			cw, _ := res["clone_warnings"].([]any)
			if failed(res) || res["changed"] != true || len(cw) != 1 || cw[0] != want || !strings.Contains(pveapi.String(res["warnings"]), want) {
				t.Fatalf("K3 WARNINGS: changed=%v %v clone_warnings %v warnings %v", res["changed"], msg(res), res["clone_warnings"], res["warnings"])
			}
			if got := w.config("pve02", 221, false).Values["cores"]; got != "1" || cfgOf(res)["cores"] != "1" {
				t.Errorf("the clone took the template's pending cores: %q", got)
			}

			// --diff on an existing VM: before and after, check mode and real.
			for _, checkMode := range []bool{true, false} {
				r := w.run(with(args, "cores", 3), checkMode)
				diffs, _ := r["diff"].([]any)
				if failed(r) || r["changed"] != true || len(diffs) != 1 {
					t.Fatalf("diff (check=%v): %v %v", checkMode, msg(r), r["diff"])
				}
				d, _ := diffs[0].(map[string]any)
				before, after := pveapi.String(d["before"]), pveapi.String(d["after"])
				if !strings.Contains(before, "cores: 1\n") || !strings.Contains(after, "cores: 3\n") || d["before_header"] != "/etc/pve/nodes/pve02/qemu-server/221.conf" ||
					strings.Replace(before, "cores: 1\n", "cores: 3\n", 1) != after {
					t.Errorf("diff (check=%v): before %q after %q header %v", checkMode, before, after, d["before_header"])
				}
			}
		})
	}
}
