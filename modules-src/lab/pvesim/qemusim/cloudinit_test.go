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

// testSSHKey is a real public key (ssh-keygen -l accepts it).
const testSSHKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBG1ItY248Mfwe3I2YSbaLG7WXY69KgKTJn40uyFX9Gs"

// pyQuote is urllib.parse.quote(s, safe=""), what community.proxmox sends.
func pyQuote(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }

// Cloud-init as qemu-server takes it (K12, S4): the drive is
// vm-<id>-cloudinit,media=cdrom; sshkeys arrives URL-encoded, is stored as
// sent and must decode to keys ssh-keygen accepts; ipconfigN is checked
// against pve-qm-ipconfig with a 400 naming the parameter; bad input
// creates nothing. The custom snippets are read at start: a missing one, or
// a volume that is no snippet, fails the start.
func TestCloudInitK12S4(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("pve%d", v), func(t *testing.T) {
			t.Parallel()
			files := simtest.NewFakeFiles("local:snippets/vendor.yaml", "local:iso/debian.iso")
			s := simtest.StartWith(t, pvesim.New, simtest.Opts{Version: v, TaskDuration: 30 * time.Millisecond}, files.Install)
			c := simtest.NewClient(t, s, "pve01").LabToken()
			keys := pyQuote(testSSHKey + " a@lab\n" + testSSHKey + " b@lab")
			simtest.CreateVM(t, c, 100, url.Values{"ide2": {"local-lvm:cloudinit"}, "ciuser": {"debian"}, "sshkeys": {keys},
				"ipconfig0": {"ip=10.0.0.5/24,gw=10.0.0.1"}, "ipconfig1": {"ip6=auto"}, "citype": {"nocloud"},
				"cicustom": {"vendor=local:snippets/vendor.yaml"}})
			conf := simtest.VMConfig(t, c, "pve01", 100)
			if conf["ide2"] != "local-lvm:vm-100-cloudinit,media=cdrom" || conf["sshkeys"] != keys ||
				conf["ipconfig0"] != "ip=10.0.0.5/24,gw=10.0.0.1" || conf["citype"] != "nocloud" {
				t.Errorf("cloud-init config: %v", conf)
			}
			if st := simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/100/status/start", nil); st["exitstatus"] != "OK" {
				t.Errorf("start with an existing vendor snippet: %v", st)
			}

			expect400 := func(what string, r simtest.Resp, param, msg string) {
				t.Helper()
				if r.Status != 400 || r.Errs[param] != msg {
					t.Errorf("%s: %d %q errors %v, want 400 with %s: %q", what, r.Status, r.Reason, r.Errs, param, msg)
				}
			}
			create := func(extra url.Values) simtest.Resp {
				p := url.Values{"vmid": {"101"}, "ide2": {"local-lvm:cloudinit"}}
				for k, v := range extra {
					p[k] = v
				}
				return c.Call("POST", "/nodes/pve01/qemu", p)
			}
			expect400("malformed ipconfig0", create(url.Values{"ipconfig0": {"ip=10.0.0.5"}}), "ipconfig0",
				"invalid format - format error\nipconfig0.ip: invalid format - value does not look like a valid ipv4 network configuration")
			expect400("gateway without ip", create(url.Values{"ipconfig2": {"gw=10.0.0.1"}}), "ipconfig2",
				"invalid format - format error\nipconfig2.ip: missing property - 'gw' requires this property")
			expect400("sshkeys not encoded", create(url.Values{"sshkeys": {testSSHKey}}), "sshkeys",
				"invalid format - invalid urlencoded string: "+testSSHKey)
			expect400("citype", create(url.Values{"citype": {"cloudbase"}}), "citype",
				"value 'cloudbase' does not have a value in the enumeration 'configdrive2, nocloud, opennebula'")
			if r := create(url.Values{"sshkeys": {pyQuote("ssh-ed25519 not-a-key")}}); r.Status != 500 || r.Reason != "SSH public key validation error" {
				t.Errorf("invalid key: %d %q", r.Status, r.Reason)
			}
			if _, ok, _ := s.ReadPmxcfs("pve01", "nodes/pve01/qemu-server/101.conf"); ok {
				t.Error("a refused create left a config")
			}
			expect400("PUT malformed ipconfig0", c.Call("PUT", "/nodes/pve01/qemu/100/config", url.Values{"ipconfig0": {"ip=dhcp,gw=10.0.0.1,ip6=10.0.0.9/64"}}),
				"ipconfig0", "invalid format - format error\nipconfig0.ip6: invalid format - value does not look like a valid ipv6 network configuration")
			if r := c.Call("PUT", "/nodes/pve01/qemu/100/config", url.Values{"sshkeys": {pyQuote("garbage")}}); r.Status != 500 || r.Reason != "SSH public key validation error" {
				t.Errorf("PUT invalid key: %d %q", r.Status, r.Reason)
			}

			// S4: the snippets are read at start.
			simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/100/status/stop", nil)
			for _, g := range []struct{ cicustom, want string }{
				{"vendor=local:snippets/missing.yaml", "can't find file 'local:snippets/missing.yaml'"},
				{"user=local:iso/debian.iso", "local:iso/debian.iso is not in the snippets directory"},
			} {
				simtest.PutConfig(t, c, 100, url.Values{"cicustom": {g.cicustom}})
				if st := simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu/100/status/start", nil); st["exitstatus"] != g.want {
					t.Errorf("start with cicustom %s: %v", g.cicustom, st["exitstatus"])
				}
			}
		})
	}
}

// An ISO that is not on its storage fails the create at once with
// Plugin.pm activate_volume's words, and leaves no config; one that is
// there is attached with its size, as volume_size_info gives it; an ISO
// needs media=cdrom and a snippet is no disk ($check_drive_param,
// check_storage_access).
func TestISOMustExist(t *testing.T) {
	t.Parallel()
	files := simtest.NewFakeFiles("local:iso/debian.iso", "local:snippets/vendor.yaml")
	s := simtest.StartWith(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond}, files.Install)
	c := simtest.NewClient(t, s, "pve01").LabToken()
	st := simtest.MustTask(t, c, "POST", "/nodes/pve01/qemu", url.Values{"vmid": {"120"}, "ide2": {"local:iso/missing.iso,media=cdrom"}, "scsi0": {"local-lvm:1"}})
	if st["exitstatus"] != "unable to create VM 120 - volume 'local:iso/missing.iso' does not exist" {
		t.Errorf("missing ISO: %v", st["exitstatus"])
	}
	if _, ok, _ := s.ReadPmxcfs("pve01", "nodes/pve01/qemu-server/120.conf"); ok {
		t.Error("config left behind")
	}
	if got := simtest.Volids(t, c, "local-lvm"); len(got) != 0 {
		t.Errorf("volumes left behind: %v", got)
	}
	simtest.CreateVM(t, c, 121, url.Values{"ide2": {"local:iso/debian.iso,media=cdrom"}})
	if conf := simtest.VMConfig(t, c, "pve01", 121); conf["ide2"] != "local:iso/debian.iso,media=cdrom,size=4K" {
		t.Errorf("ide2 = %v", conf["ide2"])
	}
	for _, g := range []struct{ key, val, msg string }{
		{"ide3", "local:iso/debian.iso", "explicit 'media=cdrom' is required for iso images"},
		{"scsi1", "local:snippets/vendor.yaml", "content type needs to be 'images' or 'iso'"},
	} {
		if r := c.Call("PUT", "/nodes/pve01/qemu/121/config", url.Values{g.key: {g.val}}); r.Status != 400 || r.Errs[g.key] != g.msg {
			t.Errorf("%s=%s: %d %v", g.key, g.val, r.Status, r.Errs)
		}
	}
	if r := c.Call("PUT", "/nodes/pve01/qemu/121/config", url.Values{"ide3": {"local:iso/gone.iso,media=cdrom"}}); r.Status != 500 ||
		r.Reason != "volume 'local:iso/gone.iso' does not exist" {
		t.Errorf("PUT a missing ISO: %d %q", r.Status, r.Reason)
	}
}

// A cloud-init drive is allocated under a fixed name (issue 23 §7): asking
// for "store:cloudinit" again on the key that holds it makes qemu-server's
// create_disks allocate vm-<id>-cloudinit a second time, which the storage
// plugin refuses (ZFS: dataset already exists; a directory: disk image
// already exists), the config unchanged; on another key it is
// has_cloudinit's refusal, before any allocation.
func TestCloudInitSecondAllocation(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("pve%d", v), func(t *testing.T) {
			t.Parallel()
			s := simtest.Start(t, pvesim.New, simtest.Opts{Version: v, TaskDuration: 30 * time.Millisecond})
			c := simtest.NewClient(t, s, "pve01").LabToken()
			c.Call("POST", "/storage", url.Values{"storage": {"tank"}, "type": {"zfspool"}, "pool": {"tank"}, "content": {"images"}}).Must(t, "zfspool")
			c.Call("POST", "/storage", url.Values{"storage": {"d1"}, "type": {"dir"}, "path": {"/srv/d1"}, "content": {"images"}}).Must(t, "dir")
			for i, g := range []struct{ store, volume, refusal string }{
				{"tank", "tank:vm-%d-cloudinit", "zfs error: cannot create 'tank/vm-%d-cloudinit': dataset already exists"},
				{"d1", "d1:%d/vm-%d-cloudinit.qcow2", "disk image '/srv/d1/images/%d/vm-%d-cloudinit.qcow2' already exists"},
			} {
				id := 110 + i
				vol := strings.ReplaceAll(g.volume, "%d", fmt.Sprint(id))
				refusal := strings.ReplaceAll(g.refusal, "%d", fmt.Sprint(id))
				simtest.CreateVM(t, c, id, url.Values{"ide2": {g.store + ":cloudinit"}})
				before := simtest.VMConfig(t, c, "pve01", id)
				if before["ide2"] != vol+",media=cdrom" {
					t.Fatalf("%s: ide2 %q", g.store, before["ide2"])
				}
				if r := c.Call("PUT", fmt.Sprintf("/nodes/pve01/qemu/%d/config", id), url.Values{"ide2": {g.store + ":cloudinit"}}); r.Status != 500 || r.Reason != refusal {
					t.Errorf("%s: second allocation: %d %q, want 500 %q", g.store, r.Status, r.Reason, refusal)
				}
				if r := c.Call("PUT", fmt.Sprintf("/nodes/pve01/qemu/%d/config", id), url.Values{"sata0": {g.store + ":cloudinit"}}); r.Status != 500 ||
					r.Reason != "sata0 - cloud-init drive is already attached at 'ide2'" {
					t.Errorf("%s: a second cloud-init drive: %d %q", g.store, r.Status, r.Reason)
				}
				after := simtest.VMConfig(t, c, "pve01", id)
				if _, has := after["sata0"]; has || after["ide2"] != before["ide2"] || after["digest"] != before["digest"] {
					t.Errorf("%s: a refused allocation changed the config: %v → %v", g.store, before, after)
				}
			}
		})
	}
}
