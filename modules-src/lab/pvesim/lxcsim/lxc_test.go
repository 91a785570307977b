package lxcsim_test

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
)

var ctNetRe = regexp.MustCompile(`^name=eth0,bridge=vmbr0,hwaddr=BC:24:11:[0-9A-F:]{8},ip=dhcp,type=veth$`)

// Containers: created by a vzcreate task with a sized rootfs volume and a
// generated MAC, listed with the VMs, started and stopped as pct does
// (already running / not running answered before any task), HA-managed
// starts are requests (H4), and the root password never lands anywhere.
func TestContainersBasics(t *testing.T) {
	t.Parallel()
	s := simtest.StartWith(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond}, func(c *pvesim.Config) { c.HADelay = 300 * time.Millisecond })
	c := simtest.NewClient(t, s, "pve01").LabToken()
	const pw = "Ct-Root-Pw-1"
	st := simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc", url.Values{"vmid": {"200"}, "ostemplate": {"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"},
		"rootfs": {"local-lvm:8"}, "hostname": {"ct200"}, "net0": {"name=eth0,bridge=vmbr0,ip=dhcp"}, "password": {pw},
		"memory": {"1024"}, "unprivileged": {"1"}})
	if st["type"] != "vzcreate" || st["exitstatus"] != "OK" {
		t.Fatalf("create: %v", st)
	}
	conf := c.Call("GET", "/nodes/pve01/lxc/200/config", nil).Must(t, "config").Obj()
	if conf["rootfs"] != "local-lvm:vm-200-disk-0,size=8G" || !ctNetRe.MatchString(fmt.Sprint(conf["net0"])) ||
		conf["hostname"] != "ct200" || conf["ostype"] != "debian" || conf["unprivileged"] != float64(1) {
		t.Errorf("CT config: %v", conf)
	}
	raw, ok, _ := s.ReadPmxcfs("pve01", "nodes/pve01/lxc/200.conf")
	if !ok || strings.Contains(raw, pw) {
		t.Errorf("CT config file %q (must exist, without the password)", raw)
	}
	r := c.Call("POST", "/nodes/pve01/qemu", url.Values{"vmid": {"200"}})
	if r.Status != 500 || r.Reason != "unable to create VM 200 - CT 200 already exists on node 'pve01'" {
		t.Errorf("VM over a CT's VMID: %d %q", r.Status, r.Reason)
	}
	if st := simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc/200/status/start", nil); st["type"] != "vzstart" || st["exitstatus"] != "OK" {
		t.Fatalf("start: %v", st)
	}
	if r := c.Call("POST", "/nodes/pve01/lxc/200/status/start", nil); r.Status != 500 || r.Reason != "CT 200 already running" {
		t.Errorf("second start: %d %q", r.Status, r.Reason)
	}
	var listed bool
	for _, e := range c.Call("GET", "/cluster/resources", url.Values{"type": {"vm"}}).Must(t, "resources").List() {
		if e["id"] == "lxc/200" && e["type"] == "lxc" && e["status"] == "running" && e["name"] == "ct200" {
			listed = true
		}
	}
	if !listed {
		t.Error("lxc/200 not listed as a running container")
	}
	old := fmt.Sprint(conf["net0"])
	c.Call("PUT", "/nodes/pve01/lxc/200/config", url.Values{"net0": {"name=eth0,bridge=vmbr0,ip=dhcp"}}).Must(t, "PUT net0")
	if now := fmt.Sprint(c.Call("GET", "/nodes/pve01/lxc/200/config", nil).Must(t, "config").Obj()["net0"]); now == old || !ctNetRe.MatchString(now) {
		t.Errorf("net0 without hwaddr: %s (was %s), want a new MAC (K16)", now, old)
	}
	if st := simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc/200/status/shutdown", nil); st["exitstatus"] != "OK" {
		t.Errorf("shutdown: %v", st)
	}
	if r := c.Call("POST", "/nodes/pve01/lxc/200/status/stop", nil); r.Status != 500 || r.Reason != "CT 200 not running" {
		t.Errorf("stop of a stopped CT: %d %q", r.Status, r.Reason)
	}
	// H4 for containers.
	c.Call("POST", "/cluster/ha/resources", url.Values{"sid": {"ct:200"}, "state": {"stopped"}}).Must(t, "HA resource")
	if st := simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc/200/status/start", nil); st["type"] != "hastart" {
		t.Errorf("start of an HA container: %v", st)
	}
	simtest.Eventually(t, "CRM starts the CT", func() bool {
		return c.Call("GET", "/nodes/pve01/lxc/200/status/current", nil).Must(t, "status").Obj()["status"] == "running"
	})
	for _, e := range s.Requests() {
		if strings.Contains(fmt.Sprint(e.Params), pw) {
			t.Errorf("request log shows the CT password: %v", e.Params)
		}
	}
}

// A container's description is stored as comment lines, each read back
// with its newline (pve-container parse_pct_config): a client sending
// "web" reads "web\n"; encode_text escapes ':' and the UTF-8 bytes but
// leaves '%' (pvecommon's test holds that to Perl). GET …/interfaces answers null for a stopped
// container and the interfaces of a running one.
func TestContainerDescriptionAndInterfaces(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond})
	c := simtest.NewClient(t, s, "pve01").Root()
	simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc", url.Values{"vmid": {"200"}, "ostemplate": {"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"},
		"rootfs": {"local-lvm:2"}, "description": {"web"}, "net0": {"name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:01,ip=10.0.0.5/24"}})
	if d := c.Call("GET", "/nodes/pve01/lxc/200/config", nil).Must(t, "config").Obj()["description"]; d != "web\n" {
		t.Errorf("description after create: %q", d)
	}
	c.Call("PUT", "/nodes/pve01/lxc/200/config", url.Values{"description": {"runner\n\nowner: ci (100% é)\n"}}).Must(t, "PUT description")
	raw, _, _ := s.ReadPmxcfs("pve01", "nodes/pve01/lxc/200.conf")
	if !strings.HasPrefix(raw, "#runner\n#\n#owner%3A ci (100% %C3%A9)\n") || strings.Contains(raw, "description:") {
		t.Errorf("config file (encode_text per line): %q", raw)
	}
	if d := c.Call("GET", "/nodes/pve01/lxc/200/config", nil).Must(t, "config").Obj()["description"]; d != "runner\n\nowner: ci (100% é)\n" {
		t.Errorf("description after update: %q", d)
	}
	c.Call("PUT", "/nodes/pve01/lxc/200/config", url.Values{"delete": {"description"}}).Must(t, "delete description")
	if d, ok := c.Call("GET", "/nodes/pve01/lxc/200/config", nil).Must(t, "config").Obj()["description"]; ok {
		t.Errorf("description after delete: %q", d)
	}

	if r := c.ExpectNull().Call("GET", "/nodes/pve01/lxc/200/interfaces", nil).Must(t, "stopped"); r.Data != nil {
		t.Errorf("interfaces of a stopped CT: %v, want null", r.Data)
	}
	simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc/200/status/start", nil)
	ifs := c.Call("GET", "/nodes/pve01/lxc/200/interfaces", nil).Must(t, "running").List()
	if len(ifs) != 2 || ifs[0]["name"] != "lo" || ifs[1]["name"] != "eth0" || ifs[1]["hwaddr"] != "bc:24:11:00:00:01" ||
		ifs[1]["inet"] != "10.0.0.5/24" || fmt.Sprint(ifs[1]["ip-addresses"]) != "[map[ip-address:10.0.0.5 ip-address-type:inet prefix:24]]" {
		t.Errorf("interfaces: %v", ifs)
	}
}
