package pvesim

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

// The paths VMs and containers share (config read and update, status,
// power tasks under the config lock, destroy) keep each kind's own words:
// pinned here so that one implementation of them keeps both.
func TestGuestSharedPathsMessages(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{TaskDuration: 30 * time.Millisecond})
	c := newClient(t, s, "pve01").LabToken()
	createVM(t, c, 100, nil)
	mustTask(t, c, "POST", "/nodes/pve01/lxc", url.Values{"vmid": {"200"}, "ostemplate": {"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"},
		"rootfs": {"local-lvm:2"}, "hostname": {"ct200"}, "cores": {"2"}, "description": {"a note"}})
	pool := url.Values{"poolid": {"p1"}}
	c.Call("POST", "/pools", pool).Must(t, "pool")
	c.Call("PUT", "/pools", url.Values{"poolid": {"p1"}, "vms": {"100,200"}}).Must(t, "pool members")

	expect := func(what string, r resp, status int, reason string) {
		t.Helper()
		if r.Status != status || r.Reason != reason {
			t.Errorf("%s: %d %q, want %d %q", what, r.Status, r.Reason, status, reason)
		}
	}
	expect("missing CT config", c.Call("GET", "/nodes/pve01/lxc/299/config", nil), 500, "Configuration file 'nodes/pve01/lxc/299.conf' does not exist")
	expect("missing CT status", c.Call("GET", "/nodes/pve01/lxc/299/status/current", nil), 500, "Configuration file 'nodes/pve01/lxc/299.conf' does not exist")
	expect("missing VM config", c.Call("GET", "/nodes/pve01/qemu/199/config", nil), 500, "Configuration file 'nodes/pve01/qemu-server/199.conf' does not exist")
	expect("stale CT digest", c.Call("PUT", "/nodes/pve01/lxc/200/config", url.Values{"cores": {"3"}, "digest": {strings.Repeat("0", 40)}}),
		500, "detected modified configuration - file changed by other user? Try again.")
	expect("empty CT update", c.Call("PUT", "/nodes/pve01/lxc/200/config", url.Values{"digest": {strings.Repeat("0", 40)}}), 500, "no options specified")

	conf := c.Call("GET", "/nodes/pve01/lxc/200/config", nil).Must(t, "CT config").Obj()
	// parse_pct_config reads each comment line with its newline.
	if conf["cores"] != float64(2) || conf["description"] != "a note\n" || len(conf["digest"].(string)) != 40 {
		t.Errorf("CT config: %v", conf)
	}
	vm := c.Call("GET", "/nodes/pve01/qemu/100/config", nil).Must(t, "VM config").Obj()
	if vm["cores"] != float64(2) || vm["memory"] != "2048" && vm["memory"] != float64(2048) || len(vm["digest"].(string)) != 40 {
		t.Errorf("VM config: %v", vm)
	}
	st := c.Call("GET", "/nodes/pve01/lxc/200/status/current", nil).Must(t, "CT status").Obj()
	if st["status"] != "stopped" || st["type"] != "lxc" || st["name"] != "ct200" || st["maxmem"] != float64(512<<20) {
		t.Errorf("CT status: %v", st)
	}

	// Each node list shows only its own kind, with its own fields.
	for _, l := range []struct {
		path string
		want map[string]any
	}{
		{"/nodes/pve01/qemu", map[string]any{"vmid": float64(100), "name": "vm100", "status": "stopped", "cpus": float64(2), "type": nil}},
		{"/nodes/pve01/lxc", map[string]any{"vmid": float64(200), "name": "ct200", "status": "stopped", "cpus": float64(2), "type": "lxc"}},
	} {
		list := c.Call("GET", l.path, nil).Must(t, l.path).List()
		if len(list) != 1 {
			t.Errorf("%s: %v", l.path, list)
			continue
		}
		for k, v := range l.want {
			if list[0][k] != v {
				t.Errorf("%s: %s = %v, want %v (%v)", l.path, k, list[0][k], v, list[0])
			}
		}
	}

	// The lock key in the config: each kind says it its way, in the task;
	// pve-container's destroy_vm checks the lock in $early_checks, before
	// the task (API2/LXC.pm: check_lock ahead of fork_worker), so a CT's
	// destroy is refused with 500.
	for _, g := range []struct {
		rel, add, path, want string
		earlyDestroy         bool
	}{
		{"nodes/pve01/lxc/200.conf", "lock: backup\n", "/nodes/pve01/lxc/200", "CT is locked (backup)", true},
		{"nodes/pve01/qemu-server/100.conf", "lock: backup\n", "/nodes/pve01/qemu/100", "VM is locked (backup)", false},
	} {
		raw, _, _ := s.ReadPmxcfs("pve01", g.rel)
		if err := s.WritePmxcfs("pve01", g.rel, g.add+raw, false); err != nil {
			t.Fatal(err)
		}
		if st := mustTask(t, c, "POST", g.path+"/status/start", nil); st["exitstatus"] != g.want {
			t.Errorf("start of a locked guest %s: %v", g.path, st["exitstatus"])
		}
		if g.earlyDestroy {
			expect("destroy of a locked "+g.path, c.Call("DELETE", g.path, nil), 500, g.want)
		} else if st := mustTask(t, c, "DELETE", g.path, nil); st["exitstatus"] != g.want {
			t.Errorf("destroy of a locked guest %s: %v", g.path, st["exitstatus"])
		}
		if err := s.WritePmxcfs("pve01", g.rel, raw, false); err != nil {
			t.Fatal(err)
		}
	}
	expect("locked CT update", func() resp {
		raw, _, _ := s.ReadPmxcfs("pve01", "nodes/pve01/lxc/200.conf")
		_ = s.WritePmxcfs("pve01", "nodes/pve01/lxc/200.conf", "lock: backup\n"+raw, false)
		defer func() { _ = s.WritePmxcfs("pve01", "nodes/pve01/lxc/200.conf", raw, false) }()
		return c.Call("PUT", "/nodes/pve01/lxc/200/config", url.Values{"cores": {"3"}})
	}(), 500, "CT is locked (backup)")

	for _, g := range []struct{ path, running, stopped string }{
		{"/nodes/pve01/lxc/200", "unable to destroy CT 200 - container is running", "CT 200 not running"}, // API2/LXC.pm destroy_vm $running_error_msg
		{"/nodes/pve01/qemu/100", "VM 100 is running - destroy failed", ""},
	} {
		if st := mustTask(t, c, "POST", g.path+"/status/start", nil); st["exitstatus"] != "OK" {
			t.Fatalf("start %s: %v", g.path, st)
		}
		expect("destroy running "+g.path, c.Call("DELETE", g.path, nil), 500, g.running)
		if st := mustTask(t, c, "POST", g.path+"/status/stop", nil); st["exitstatus"] != "OK" {
			t.Errorf("stop %s: %v", g.path, st)
		}
		if g.stopped != "" {
			expect("stop stopped "+g.path, c.Call("POST", g.path+"/status/stop", nil), 500, g.stopped)
		} else if st := mustTask(t, c, "POST", g.path+"/status/shutdown", nil); st["exitstatus"] != "OK" {
			t.Errorf("shutdown of a stopped VM is no error: %v", st)
		}
		if st := mustTask(t, c, "DELETE", g.path, nil); st["exitstatus"] != "OK" {
			t.Errorf("destroy %s: %v", g.path, st)
		}
	}
	for _, rel := range []string{"nodes/pve01/lxc/200.conf", "nodes/pve01/qemu-server/100.conf"} {
		if _, ok, _ := s.ReadPmxcfs("pve01", rel); ok {
			t.Errorf("%s survives the destroy", rel)
		}
	}
	p := c.Call("GET", "/pools/p1", nil).Must(t, "pool").Obj()
	if m, _ := p["members"].([]any); len(m) != 0 {
		t.Errorf("destroyed guests stay pool members: %v", m)
	}
}
