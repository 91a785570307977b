package hasim_test

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
)

// H4, issue 23 §2: an HA guest's stop is only a request (qemu-server's
// vm_stop runs `ha-manager crm-command stop vm:N 0` in a hastop task that
// ends at once); the LRM stops the guest a CRM round later. Until then
// destroy_vm refuses it with qemu-server's message, before any task
// ($early_checks: "VM N is running - destroy failed"), even with purge;
// once stopped, the destroy with purge goes through and takes the HA
// resource with it. PVE 8 and 9.
func TestHAStopIsQueuedDestroyRefusedUntilStoppedH4(t *testing.T) {
	t.Parallel()
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", v), func(t *testing.T) {
			_, a, _ := simtest.TwoNodes(t, pvesim.New, simtest.Opts{Version: v, TaskDuration: 30 * time.Millisecond, RestartWindow: 200 * time.Millisecond},
				func(c *pvesim.Config) { c.HADelay = 700 * time.Millisecond })
			simtest.CreateVM(t, a, 100, nil)
			a.Call("POST", "/cluster/ha/resources", url.Values{"sid": {"vm:100"}, "state": {"started"}}).Must(t, "HA resource")
			simtest.Eventually(t, "HA starts VM 100", func() bool { _, st := simtest.VMNode(t, a, 100); return st == "running" })

			st := simtest.MustTask(t, a, "POST", "/nodes/pve01/qemu/100/status/stop", nil)
			if st["exitstatus"] != "OK" || st["type"] != "hastop" {
				t.Fatalf("stop of an HA guest: %v", st)
			}
			if _, status := simtest.VMNode(t, a, 100); status != "running" {
				t.Errorf("the HA stop acted at once (%s); PVE only queues it for the CRM", status)
			}
			r := a.Call("DELETE", "/nodes/pve01/qemu/100", url.Values{"purge": {"1"}})
			if r.Status != 500 || r.Reason != "VM 100 is running - destroy failed" {
				t.Errorf("destroy while HA's stop is queued: %d %q", r.Status, r.Reason)
			}
			res := a.Call("GET", "/cluster/ha/resources/vm:100", nil).Must(t, "HA resource").Obj()
			if res["state"] != "stopped" {
				t.Errorf("HA resource after the stop request: %v", res)
			}
			simtest.Eventually(t, "the LRM stops VM 100", func() bool { _, st := simtest.VMNode(t, a, 100); return st == "stopped" })
			if st := simtest.MustTask(t, a, "DELETE", "/nodes/pve01/qemu/100", url.Values{"purge": {"1"}}); st["exitstatus"] != "OK" {
				t.Fatalf("destroy once stopped: %v", st)
			}
			if l := a.Call("GET", "/cluster/ha/resources", nil).Must(t, "HA resources").List(); len(l) != 0 {
				t.Errorf("the purge left HA resources: %v", l)
			}
		})
	}
}
