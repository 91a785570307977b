package core

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

var ctNetRe = regexp.MustCompile(`^name=eth0,bridge=vmbr0,hwaddr=BC:24:11:[0-9A-F:]{8},ip=dhcp,type=veth$`)

// Containers: created by a vzcreate task with a sized rootfs volume and a
// generated MAC, listed with the VMs, started and stopped as pct does
// (already running / not running answered before any task), HA-managed
// starts are requests (H4), and the root password never lands anywhere.
func TestContainersBasics(t *testing.T) {
	t.Parallel()
	s := startSimWith(t, simOpts{taskDuration: 30 * time.Millisecond}, func(c *Config) { c.HADelay = 300 * time.Millisecond })
	c := newClient(t, s, "pve01").labToken()
	const pw = "Ct-Root-Pw-1"
	st := mustTask(t, c, "POST", "/nodes/pve01/lxc", url.Values{"vmid": {"200"}, "ostemplate": {"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"},
		"rootfs": {"local-lvm:8"}, "hostname": {"ct200"}, "net0": {"name=eth0,bridge=vmbr0,ip=dhcp"}, "password": {pw},
		"memory": {"1024"}, "unprivileged": {"1"}})
	if st["type"] != "vzcreate" || st["exitstatus"] != "OK" {
		t.Fatalf("create: %v", st)
	}
	conf := c.call("GET", "/nodes/pve01/lxc/200/config", nil).must(t, "config").obj()
	if conf["rootfs"] != "local-lvm:vm-200-disk-0,size=8G" || !ctNetRe.MatchString(fmt.Sprint(conf["net0"])) ||
		conf["hostname"] != "ct200" || conf["ostype"] != "debian" || conf["unprivileged"] != float64(1) {
		t.Errorf("CT config: %v", conf)
	}
	raw, ok, _ := s.ReadPmxcfs("pve01", "nodes/pve01/lxc/200.conf")
	if !ok || strings.Contains(raw, pw) {
		t.Errorf("CT config file %q (must exist, without the password)", raw)
	}
	r := c.call("POST", "/nodes/pve01/qemu", url.Values{"vmid": {"200"}})
	if r.status != 500 || r.reason != "unable to create VM 200 - CT 200 already exists on node 'pve01'" {
		t.Errorf("VM over a CT's VMID: %d %q", r.status, r.reason)
	}
	if st := mustTask(t, c, "POST", "/nodes/pve01/lxc/200/status/start", nil); st["type"] != "vzstart" || st["exitstatus"] != "OK" {
		t.Fatalf("start: %v", st)
	}
	if r := c.call("POST", "/nodes/pve01/lxc/200/status/start", nil); r.status != 500 || r.reason != "CT 200 already running" {
		t.Errorf("second start: %d %q", r.status, r.reason)
	}
	var listed bool
	for _, e := range c.call("GET", "/cluster/resources", url.Values{"type": {"vm"}}).must(t, "resources").list() {
		if e["id"] == "lxc/200" && e["type"] == "lxc" && e["status"] == "running" && e["name"] == "ct200" {
			listed = true
		}
	}
	if !listed {
		t.Error("lxc/200 not listed as a running container")
	}
	old := fmt.Sprint(conf["net0"])
	c.call("PUT", "/nodes/pve01/lxc/200/config", url.Values{"net0": {"name=eth0,bridge=vmbr0,ip=dhcp"}}).must(t, "PUT net0")
	if now := fmt.Sprint(c.call("GET", "/nodes/pve01/lxc/200/config", nil).must(t, "config").obj()["net0"]); now == old || !ctNetRe.MatchString(now) {
		t.Errorf("net0 without hwaddr: %s (was %s), want a new MAC (K16)", now, old)
	}
	if st := mustTask(t, c, "POST", "/nodes/pve01/lxc/200/status/shutdown", nil); st["exitstatus"] != "OK" {
		t.Errorf("shutdown: %v", st)
	}
	if r := c.call("POST", "/nodes/pve01/lxc/200/status/stop", nil); r.status != 500 || r.reason != "CT 200 not running" {
		t.Errorf("stop of a stopped CT: %d %q", r.status, r.reason)
	}
	// H4 for containers.
	c.call("POST", "/cluster/ha/resources", url.Values{"sid": {"ct:200"}, "state": {"stopped"}}).must(t, "HA resource")
	if st := mustTask(t, c, "POST", "/nodes/pve01/lxc/200/status/start", nil); st["type"] != "hastart" {
		t.Errorf("start of an HA container: %v", st)
	}
	eventually(t, "CRM starts the CT", func() bool {
		return c.call("GET", "/nodes/pve01/lxc/200/status/current", nil).must(t, "status").obj()["status"] == "running"
	})
	for _, e := range s.Requests() {
		if strings.Contains(fmt.Sprint(e.Params), pw) {
			t.Errorf("request log shows the CT password: %v", e.Params)
		}
	}
}

// lxcTour answers every container endpoint once with 200.
func lxcTour(t *testing.T, c *apiClient, node string) {
	t.Helper()
	p := "/nodes/" + node + "/lxc"
	mustTask(t, c, "POST", p, url.Values{"vmid": {"250"}, "ostemplate": {"local:vztmpl/alpine-3.20-default_20240908_amd64.tar.xz"}, "rootfs": {"local-lvm:2"}})
	c.call("GET", p, nil).must(t, "CT list")
	c.call("GET", p+"/250/config", nil).must(t, "CT config")
	c.call("PUT", p+"/250/config", url.Values{"cores": {"2"}}).must(t, "CT PUT config")
	c.call("GET", p+"/250/pending", nil).must(t, "CT pending")
	mustTask(t, c, "PUT", p+"/250/resize", url.Values{"disk": {"rootfs"}, "size": {"+1G"}})
	c.call("GET", p+"/250/status/current", nil).must(t, "CT status")
	mustTask(t, c, "POST", p+"/250/status/start", nil)
	mustTask(t, c, "POST", p+"/250/status/shutdown", nil)
	mustTask(t, c, "POST", p+"/250/status/start", nil)
	c.call("GET", p+"/250/interfaces", nil).must(t, "CT interfaces")
	mustTask(t, c, "POST", p+"/250/status/stop", nil)
	mustTask(t, c, "DELETE", p+"/250", nil)
	c.call("GET", "/nodes/"+node+"/vzdump/extractconfig", url.Values{"volume": {ctBackup}}).must(t, "extractconfig")
	mustTask(t, c, "POST", p, url.Values{"vmid": {"251"}, "ostemplate": {ctBackup}, "restore": {"1"}, "storage": {"local-lvm"}})
	mustTask(t, c, "DELETE", p+"/251", nil)
}
