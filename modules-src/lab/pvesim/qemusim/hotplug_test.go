package qemusim_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
)

// Issue 23 §3: qemu-server writes a config update, then hot-plugs it into
// the running VM, and only then raises `400 Parameter verification
// failed.` for the keys it could not apply (`hotplug problem - …`): the
// other keys are live, the failed ones stay pending. A NIC on a bridge the
// node lacks fails the netdev_add; a NIC the guest will not let go fails
// the unplug. A stopped VM takes the same NIC without a word
// (vmconfig_apply_pending checks no bridge): its start would meet it. PVE 8
// and 9 run the same code.
func TestHotplugProblemAfterWrite(t *testing.T) {
	t.Parallel()
	for _, v := range []int{8, 9} {
		s := simtest.Start(t, pvesim.New, simtest.Opts{Version: v, TaskDuration: 20 * time.Millisecond})
		c := simtest.NewClient(t, s, "pve01").LabToken()
		simtest.CreateVM(t, c, 100, url.Values{"net1": {"virtio,bridge=vmbr0"}})
		simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/100/status/start", nil)
		if err := s.HoldDevices("pve01", 100, "net1"); err != nil {
			t.Fatal(err)
		}
		r := c.Call("PUT", "/nodes/pve01/qemu/100/config", url.Values{"name": {"renamed"}, "memory": {"4096"},
			"net2": {"virtio,bridge=vmbr9"}, "delete": {"net1"}})
		want := map[string]string{
			"net2": "hotplug problem - VM 100 qmp command 'netdev_add' failed - network script /usr/libexec/qemu-server/pve-bridge-hotplug failed with status 512\n",
			"net1": "hotplug problem - error on hot-unplugging device 'net1' - still busy in guest?\n",
		}
		if r.Status != 400 || r.Reason != "Parameter verification failed." || len(r.Errs) != 2 || r.Errs["net2"] != want["net2"] || r.Errs["net1"] != want["net1"] {
			t.Errorf("PVE %d: answer %d %q %q", v, r.Status, r.Reason, r.Errs)
		}
		live := c.Call("GET", "/nodes/pve01/qemu/100/config", url.Values{"current": {"1"}}).Must(t, "current").Obj()
		if live["name"] != "renamed" || live["net2"] != nil || live["net1"] == nil || live["memory"] != "2048" {
			t.Errorf("PVE %d: live after the 400: %v", v, live)
		}
		rows := map[string]map[string]any{}
		for _, e := range c.Call("GET", "/nodes/pve01/qemu/100/pending", nil).Must(t, "pending").List() {
			rows[e["key"].(string)] = e
		}
		if rows["net2"]["pending"] == nil || rows["net1"]["delete"] != float64(1) || rows["memory"]["pending"] != "4096" || rows["name"]["pending"] != nil {
			t.Errorf("PVE %d: pending after the 400: %v", v, rows)
		}
		raw, _, _ := s.ReadPmxcfs("pve01", "nodes/pve01/qemu-server/100.conf")
		if !strings.Contains(raw, "name: renamed\n") || !strings.Contains(raw, "[PENDING]\ndelete: net1\n") || !strings.Contains(raw, "bridge=vmbr9") {
			t.Errorf("PVE %d: the config was not written before the answer: %q", v, raw)
		}
		// The task variant fails its qmconfig task with the same exception,
		// on one line.
		st := c.Call("POST", "/nodes/pve01/qemu/100/config", url.Values{"net3": {"e1000,bridge=vmbr7"}}).Must(t, "POST")
		if got := simtest.WaitTask(t, c, st.Data.(string))["exitstatus"]; got != "400 Parameter verification failed. net3: hotplug problem - VM 100 qmp command 'netdev_add' failed - network script /usr/libexec/qemu-server/pve-bridge-hotplug failed with status 512" {
			t.Errorf("PVE %d: task status %q", v, got)
		}
		// Stopped: no hotplug, nothing checked; the bridge and the held
		// NIC are the start's business (the guest is gone).
		simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/100/status/stop", nil)
		if r := c.Call("PUT", "/nodes/pve01/qemu/100/config", url.Values{"net4": {"virtio,bridge=vmbr8"}}); r.Status != 200 {
			t.Errorf("PVE %d: stopped VM: %d %v", v, r.Status, r.Errs)
		}
		// …and its start meets the missing bridge (the first NIC on one).
		st = c.Call("POST", "/nodes/pve01/qemu/100/status/start", nil).Must(t, "start")
		done := simtest.WaitTask(t, c, st.Data.(string))
		logText := fmt.Sprint(c.Call("GET", "/nodes/pve01/tasks/"+url.PathEscape(st.Data.(string))+"/log", nil).Must(t, "start log").Data)
		if done["exitstatus"] != "start failed: QEMU exited with code 1" || !strings.Contains(logText, "bridge 'vmbr9' does not exist") ||
			!strings.Contains(logText, "kvm: -netdev type=tap,id=net2,ifname=tap100i2,script=/usr/libexec/qemu-server/pve-bridge,downscript=/usr/libexec/qemu-server/pve-bridgedown,vhost=on: network script /usr/libexec/qemu-server/pve-bridge failed with status 512") {
			t.Errorf("PVE %d: start on a missing bridge: %v\n%s", v, done["exitstatus"], logText)
		}
		if cur := c.Call("GET", "/nodes/pve01/qemu/100/status/current", nil).Must(t, "status").Obj(); cur["status"] != "stopped" {
			t.Errorf("PVE %d: the VM is %v", v, cur["status"])
		}
	}
}
