package pveclone

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
)

// Issue 23 §2, the runtime's rule in a real module: the config change
// sends the config PUT, then the disk's resize; when PVE refuses the resize
// (an answered 400: pveapi's refusal, NothingChanged) after the PUT was
// written, the change is changed, unverified — on main it said "nothing
// was changed" with memory already 4096 on the node. Checked against the
// lab's request log and the VM's config; PVE 8 and 9.
func TestConfigRefusedAfterAWriteIsChanged(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", v), func(t *testing.T) {
			w := newWorld(t, v)
			args := map[string]any{"vmid": 201, "name": "web-1", "template": "debian-12", "node": "pve02"}
			if res := w.run(args, false); failed(res) {
				t.Fatal(msg(res))
			}
			if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "PUT", Path: "/nodes/pve02/qemu/201/resize", Kind: pvesim.FaultError, Status: 400,
				Message: "Parameter verification failed.", Count: 1}); err != nil {
				t.Fatal(err)
			}
			w.sim.ResetRequests()
			res := w.run(with(args, "memory", 4096, "disks", map[string]any{"scsi0": "10G"}), false)
			var sent []string
			for _, r := range writes(w.sim) {
				sent = append(sent, r.Method+" "+r.Path)
			}
			if !slices.Equal(sent, []string{"PUT /nodes/pve02/qemu/201/config", "PUT /nodes/pve02/qemu/201/resize"}) {
				t.Fatalf("sent %v", sent)
			}
			if got := w.config("pve02", 201, false).Values["memory"]; got != "4096" {
				t.Fatalf("the PUT did not write memory: %q", got)
			}
			if !failed(res) || res["changed"] != true || len(stringsOf(res["changes_unverified"])) != 1 ||
				!strings.Contains(msg(res), "a write had been sent (update the config of VM 201)") {
				t.Errorf("resize refused after the config was written: changed=%v unverified=%v %q", res["changed"], res["changes_unverified"], msg(res))
			}
		})
	}
}
