package pvesim

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

// guestTour answers every guest endpoint once with 200 (for the shape check
// of TestEveryHandlerFitsReturnsSchema).
func guestTour(t *testing.T, c *apiClient, node string) {
	t.Helper()
	c.Call("GET", "/cluster/nextid", nil).Must(t, "nextid")
	createVM(t, c, 100, url.Values{"ide2": {"local-lvm:cloudinit"}})
	p := "/nodes/" + node + "/qemu/100"
	for _, sub := range []string{"", "/config", "/pending", "/status/current"} {
		if sub == "" {
			c.Call("GET", "/nodes/"+node+"/qemu", nil).Must(t, "list")
			continue
		}
		c.Call("GET", p+sub, nil).Must(t, "GET "+sub)
	}
	c.Call("GET", "/cluster/resources", url.Values{"type": {"vm"}}).Must(t, "resources")
	c.Call("PUT", p+"/config", url.Values{"cores": {"3"}}).Must(t, "PUT config")
	mustTask(t, c, "POST", p+"/config", url.Values{"memory": {"1024"}})
	mustTask(t, c, "PUT", p+"/resize", url.Values{"disk": {"scsi0"}, "size": {"+1G"}})
	mustTask(t, c, "POST", p+"/status/start", nil)
	mustTask(t, c, "POST", p+"/status/shutdown", nil)
	mustTask(t, c, "POST", p+"/status/stop", nil)
	mustTask(t, c, "POST", p+"/template", nil)
	mustTask(t, c, "POST", p+"/clone", url.Values{"newid": {"101"}})
	mustTask(t, c, "DELETE", "/nodes/"+node+"/qemu/101", nil)
}

// Fixtures: the control API declares a template and a running guest at
// once, as `lab up` needs them; the template clones like one made through
// the API, a taken VMID is a conflict.
func TestGuestFixtures(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{TaskDuration: 30 * time.Millisecond})
	ctl := controlAPI(t, s)
	st, body := ctl("POST", "/v1/nodes/pve01/guests", `{"vmid":9000,"template":true,"config":{"name":"debian-13","scsi0":"local-lvm:8","ide2":"local-lvm:cloudinit","net0":"virtio,bridge=vmbr0","agent":"enabled=1"}}`)
	if st != 200 {
		t.Fatalf("fixture template: %d %v", st, body)
	}
	if st, body := ctl("POST", "/v1/nodes/pve01/guests", `{"vmid":100,"running":true,"config":{"name":"web","scsi0":"local-lvm:4"}}`); st != 200 {
		t.Fatalf("fixture guest: %d %v", st, body)
	}
	if st, body := ctl("POST", "/v1/nodes/pve01/guests", `{"vmid":100,"config":{}}`); st != 409 || !strings.Contains(fmt.Sprint(body["error"]), "VM 100 already exists on node 'pve01'") {
		t.Errorf("taken VMID: %d %v", st, body)
	}
	c := newClient(t, s, "pve01").LabToken()
	if conf := vmConfig(t, c, "pve01", 9000); conf["template"] != float64(1) || conf["scsi0"] != "local-lvm:base-9000-disk-0,size=8G" {
		t.Errorf("fixture template config: %v", conf)
	}
	if got := c.Call("GET", "/nodes/pve01/qemu/100/status/current", nil).Must(t, "status").Obj()["status"]; got != "running" {
		t.Errorf("fixture guest is %v", got)
	}
	if st := mustTask(t, c, "POST", "/nodes/pve01/qemu/9000/clone", url.Values{"newid": {"101"}}); st["exitstatus"] != "OK" {
		t.Errorf("clone of the fixture template: %v", st)
	}
}

// A node that powers back on runs nothing but its onboot guests.
func TestPowerCycleStartsOnbootGuests(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{TaskDuration: 30 * time.Millisecond})
	for _, g := range []GuestSpec{
		{VMID: 100, Running: true, Config: map[string]string{"onboot": "1"}},
		{VMID: 101, Running: true, Config: map[string]string{}},
	} {
		if err := s.AddGuest("pve01", g); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetOnline("pve01", false); err != nil {
		t.Fatal(err)
	}
	if err := s.SetOnline("pve01", true); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s, "pve01").LabToken()
	for vmid, want := range map[int]string{100: "running", 101: "stopped"} {
		if got := c.Call("GET", fmt.Sprintf("/nodes/pve01/qemu/%d/status/current", vmid), nil).Must(t, "status").Obj()["status"]; got != want {
			t.Errorf("VM %d after a power cycle: %v, want %s", vmid, got, want)
		}
	}
}

// A task running when its node loses power dies with it: its work never
// happens, and once the node is back the task is stopped with "unexpected
// status" and no TASK line in its log.
func TestPowerLossKillsRunningTasks(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{TaskDuration: 400 * time.Millisecond})
	if err := s.AddGuest("pve01", GuestSpec{VMID: 100, Config: map[string]string{}}); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s, "pve01").LabToken()
	upid, _ := c.Call("POST", "/nodes/pve01/qemu/100/config", url.Values{"description": {"lost"}}).Must(t, "config").Data.(string)
	if err := s.SetOnline("pve01", false); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond) // past the task's duration, node still off
	if err := s.SetOnline("pve01", true); err != nil {
		t.Fatal(err)
	}
	st := waitTask(t, c, upid)
	if st["exitstatus"] != "unexpected status" {
		t.Errorf("a config task whose node lost power: %v, want exitstatus \"unexpected status\"", st)
	}
	if got := c.Call("GET", "/nodes/pve01/qemu/100/config", nil).Must(t, "config").Obj()["description"]; got != nil {
		t.Errorf("the change of a config task that died with its node was applied: description %v", got)
	}
	for _, l := range c.Call("GET", "/nodes/pve01/tasks/"+url.PathEscape(upid)+"/log", nil).Must(t, "log").List() {
		if strings.HasPrefix(fmt.Sprint(l["t"]), "TASK ") {
			t.Errorf("the dead task's log ends with %q", l["t"])
		}
	}
}
