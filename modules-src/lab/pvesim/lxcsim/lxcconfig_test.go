package lxcsim_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/volumes"
)

// A container's volumes per storage type, as pve-container allocates them
// (PVE::LXC create_disks → alloc_image): subvol-<vmid>-disk-N on zfspool
// (owned by the mapped root 100000 when unprivileged), vm-<vmid>-disk-N on
// lvm/lvmthin, a raw file <vmid>/vm-<vmid>-disk-N.raw on dir; unprivileged
// is the create default on PVE 9 only (pve-container 103068a) and only a
// true value is written.
func TestContainerVolumesPerStorageType(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("pve%d", v), func(t *testing.T) {
			t.Parallel()
			s := simtest.Start(t, pvesim.New, simtest.Opts{Version: v, TaskDuration: 20 * time.Millisecond})
			c := simtest.NewClient(t, s, "pve01").LabToken()
			c.Call("POST", "/storage", url.Values{"storage": {"tank"}, "type": {"zfspool"}, "pool": {"tank"}, "content": {"rootdir,images"}}).Must(t, "zfspool")
			c.Call("POST", "/storage", url.Values{"storage": {"ctdir"}, "type": {"dir"}, "path": {"/srv/ct"}, "content": {"rootdir"}}).Must(t, "dir")
			tmpl := "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"
			for _, g := range []struct {
				vmid   int
				rootfs string
				unpriv string // the parameter, "" = not sent
				want   string
				owner  string
			}{
				{300, "tank:2", "1", "tank:subvol-300-disk-0,size=2G", "100000:100000"},
				{301, "tank:2", "0", "tank:subvol-301-disk-0,size=2G", "0:0"},
				{302, "local-lvm:2", "", "local-lvm:vm-302-disk-0,size=2G", map[int]string{8: "0:0", 9: "100000:100000"}[v]},
				{303, "ctdir:1", "1", "ctdir:303/vm-303-disk-0.raw,size=1G", "100000:100000"},
			} {
				p := url.Values{"vmid": {fmt.Sprint(g.vmid)}, "ostemplate": {tmpl}, "rootfs": {g.rootfs}}
				if g.unpriv != "" {
					p.Set("unprivileged", g.unpriv)
				}
				if st := simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc", p); st["exitstatus"] != "OK" {
					t.Fatalf("create %d: %v", g.vmid, st)
				}
				conf := c.Call("GET", fmt.Sprintf("/nodes/pve01/lxc/%d/config", g.vmid), nil).Must(t, "config").Obj()
				if conf["rootfs"] != g.want {
					t.Errorf("CT %d rootfs = %v, want %s", g.vmid, conf["rootfs"], g.want)
				}
				_, unpriv := conf["unprivileged"]
				if wantUnpriv := g.owner != "0:0"; unpriv != wantUnpriv {
					t.Errorf("CT %d: unprivileged in config %v (%v), want %v", g.vmid, unpriv, conf["unprivileged"], wantUnpriv)
				}
				s.Mu.Lock()
				vol, _, err := (volumes.Model{Sim: s.Sim}).VolumeLocked("pve01", pvecommon.ParseProps(g.want, "volume").Get("volume"))
				s.Mu.Unlock()
				if err != nil || vol.Owner != g.owner {
					t.Errorf("CT %d volume owner %+v %v, want %s", g.vmid, vol, err, g.owner)
				}
			}
		})
	}
}

// update_pct_config on a running CT: the fast-plug options, memory/swap
// and NICs are live at once, the rest (a rootfs option, features) waits in
// the pending section until the next start (vm_start applies it);
// unprivileged is read-only; GET config shows pending values unless
// current=1. resize_vm refuses a shrink and the same size before any task.
// destroy_vm's early checks come in pve-container's order.
func TestContainerPendingResizeDestroy(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("pve%d", v), func(t *testing.T) {
			t.Parallel()
			s := simtest.Start(t, pvesim.New, simtest.Opts{Version: v, TaskDuration: 20 * time.Millisecond})
			c := simtest.NewClient(t, s, "pve01").Root() // features of a privileged CT (PVE 8's default) are root@pam's
			simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc", url.Values{"vmid": {"200"}, "ostemplate": {"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"},
				"rootfs": {"local-lvm:2"}, "hostname": {"ct200"}, "memory": {"512"}})
			simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc/200/status/start", nil)
			c.Call("PUT", "/nodes/pve01/lxc/200/config", url.Values{"memory": {"1024"}, "hostname": {"runner"}, "features": {"nesting=1"}}).Must(t, "PUT")
			cur := c.Call("GET", "/nodes/pve01/lxc/200/config", url.Values{"current": {"1"}}).Must(t, "current").Obj()
			next := c.Call("GET", "/nodes/pve01/lxc/200/config", nil).Must(t, "config").Obj()
			if cur["memory"] != float64(1024) || cur["hostname"] != "runner" || cur["features"] != nil || next["features"] != "nesting=1" {
				t.Errorf("running CT: current %v, next %v", cur, next)
			}
			var pendingFeatures bool
			for _, e := range c.Call("GET", "/nodes/pve01/lxc/200/pending", nil).Must(t, "pending").List() {
				if e["key"] == "features" && e["pending"] == "nesting=1" && e["value"] == nil {
					pendingFeatures = true
				}
				if e["key"] == "memory" && e["pending"] != nil {
					t.Errorf("memory is hot-plugged, not pending: %v", e)
				}
			}
			if !pendingFeatures {
				t.Error("features not listed as pending")
			}
			// A container's file heads the section [pve:pending]
			// (write_pct_config), not a VM's [PENDING].
			if raw, _, _ := s.ReadPmxcfs("pve01", "nodes/pve01/lxc/200.conf"); !strings.Contains(raw, "\n[pve:pending]\nfeatures: nesting=1\n") {
				t.Errorf("the container's file: %q", raw)
			}
			if r := c.Call("PUT", "/nodes/pve01/lxc/200/config", url.Values{"unprivileged": {"1"}}); r.Status != 500 || r.Reason != "unable to modify read-only option: 'unprivileged'" {
				t.Errorf("unprivileged change: %d %q", r.Status, r.Reason)
			}
			simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc/200/status/stop", nil)
			simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc/200/status/start", nil)
			if cur := c.Call("GET", "/nodes/pve01/lxc/200/config", url.Values{"current": {"1"}}).Must(t, "current").Obj(); cur["features"] != "nesting=1" {
				t.Errorf("after a restart features = %v", cur["features"])
			}
			for _, r := range []struct{ size, want string }{{"1G", "unable to shrink disk size"}, {"2G", "disk is already at specified size"}} {
				if got := c.Call("PUT", "/nodes/pve01/lxc/200/resize", url.Values{"disk": {"rootfs"}, "size": {r.size}}); got.Status != 500 || got.Reason != r.want {
					t.Errorf("resize %s: %d %q", r.size, got.Status, got.Reason)
				}
			}
			if st := simtest.MustTask(t, c, "PUT", "/nodes/pve01/lxc/200/resize", url.Values{"disk": {"rootfs"}, "size": {"3G"}}); st["type"] != "resize" || st["exitstatus"] != "OK" {
				t.Errorf("resize: %v", st)
			}
			if conf := c.Call("GET", "/nodes/pve01/lxc/200/config", nil).Must(t, "config").Obj(); conf["rootfs"] != "local-lvm:vm-200-disk-0,size=3G" {
				t.Errorf("rootfs after the resize: %v", conf["rootfs"])
			}
			c.Call("PUT", "/nodes/pve01/lxc/200/config", url.Values{"protection": {"1"}}).Must(t, "protection")
			c.Call("POST", "/cluster/ha/resources", url.Values{"sid": {"ct:200"}, "state": {"ignored"}}).Must(t, "HA")
			for _, d := range []struct {
				fix  url.Values
				want string
			}{
				{nil, "can't remove CT 200 - protection mode enabled"},
				{url.Values{"delete": {"protection"}}, "unable to remove CT 200 - used in HA resources and purge parameter not set."},
			} {
				if d.fix != nil {
					c.Call("PUT", "/nodes/pve01/lxc/200/config", d.fix).Must(t, "fix")
				}
				if r := c.Call("DELETE", "/nodes/pve01/lxc/200", nil); r.Status != 500 || r.Reason != d.want {
					t.Errorf("destroy: %d %q, want %q", r.Status, r.Reason, d.want)
				}
			}
			if r := c.Call("DELETE", "/nodes/pve01/lxc/200", url.Values{"purge": {"1"}}); r.Status != 500 || r.Reason != "unable to destroy CT 200 - container is running" {
				t.Errorf("destroy running: %d %q", r.Status, r.Reason)
			}
			simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc/200/status/stop", nil)
			if st := simtest.MustTask(t, c, "DELETE", "/nodes/pve01/lxc/200", url.Values{"purge": {"1"}}); st["type"] != "vzdestroy" || st["exitstatus"] != "OK" {
				t.Errorf("destroy: %v", st)
			}
			if l := c.Call("GET", "/cluster/ha/resources", nil).Must(t, "HA").List(); len(l) != 0 {
				t.Errorf("purge left HA resources %v", l)
			}
		})
	}
}

// The two loops of vmconfig_hotplug_pending on a running CT
// (src/PVE/LXC/Config.pm; reconstruction): delete=unusedN is applied at
// once and frees its volume (delete_mountpoint_volume), delete=net10 waits
// (the delete loop matches m/^net(\d)$/), a new dev0 is plugged at once
// (device_passthrough_hotplug). Before that, on the stopped CT,
// vmconfig_apply_pending keeps a replaced (apply_pending_mountpoint) or
// removed mp0's volume as unusedN, and write_pct_config drops an unusedN
// a mount point uses again. Only the keys an update names are applied.
func TestContainerHotplugPendingLoops(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{TaskDuration: 20 * time.Millisecond})
	c := simtest.NewClient(t, s, "pve01").Root() // device passthrough is root@pam's
	simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc", url.Values{"vmid": {"210"}, "ostemplate": {"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"},
		"rootfs": {"local-lvm:2"}, "mp0": {"local-lvm:1,mp=/data"}, "net10": {"name=eth10,bridge=vmbr0"}})
	const vol1, vol2 = "local-lvm:vm-210-disk-1", "local-lvm:vm-210-disk-2"
	volExists := func(vol string) bool {
		s.Mu.Lock()
		defer s.Mu.Unlock()
		_, _, err := (volumes.Model{Sim: s.Sim}).VolumeLocked("pve01", vol)
		return err == nil
	}
	current := func() map[string]any {
		return c.Call("GET", "/nodes/pve01/lxc/210/config", url.Values{"current": {"1"}}).Must(t, "config").Obj()
	}
	for _, step := range []struct {
		p                url.Values
		unused0, unused1 any
	}{
		{url.Values{"mp0": {"local-lvm:1,mp=/data"}}, vol1, nil}, // a new disk in place of vol1
		{url.Values{"mp0": {vol2 + ",mp=/srv"}}, vol1, nil},      // the same volume: no unusedN
		{url.Values{"delete": {"mp0"}}, vol1, vol2},              // removed: vol2 kept
	} {
		c.Call("PUT", "/nodes/pve01/lxc/210/config", step.p).Must(t, "stopped update")
		if cur := current(); cur["unused0"] != step.unused0 || cur["unused1"] != step.unused1 || !volExists(vol1) || !volExists(vol2) {
			t.Fatalf("stopped CT after %v: %v (volumes kept: %v %v), want unused0 %v, unused1 %v", step.p, cur, volExists(vol1), volExists(vol2), step.unused0, step.unused1)
		}
	}
	simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc/210/status/start", nil)
	c.Call("PUT", "/nodes/pve01/lxc/210/config", url.Values{"delete": {"unused0,unused1,net10"}, "dev0": {"/dev/null"}, "features": {"nesting=1"}}).Must(t, "running update")
	cur := current()
	if cur["unused0"] != nil || cur["unused1"] != nil || volExists(vol1) || volExists(vol2) {
		t.Errorf("delete=unused0,unused1 on the running CT: %v %v, volumes still there %v %v; want all gone", cur["unused0"], cur["unused1"], volExists(vol1), volExists(vol2))
	}
	if cur["dev0"] != "/dev/null" {
		t.Errorf("a new dev0 is hot-plugged: current dev0 = %v", cur["dev0"])
	}
	if cur["net10"] == nil {
		t.Error("net10 left the running CT's current config; its delete waits for the next start")
	}
	pending := map[string]map[string]any{}
	for _, e := range c.Call("GET", "/nodes/pve01/lxc/210/pending", nil).Must(t, "pending").List() {
		pending[fmt.Sprint(e["key"])] = e
	}
	if pending["net10"]["delete"] != float64(1) || pending["dev0"]["pending"] != nil || pending["unused0"] != nil {
		t.Errorf("pending: net10 %v, dev0 %v, unused0 %v; want only net10's delete pending", pending["net10"], pending["dev0"], pending["unused0"])
	}
	// update_pct_config applies only the keys it was given ($selection =
	// $modified): once stopped, an update of another key leaves net10's
	// delete and features pending; the start applies them.
	simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc/210/status/stop", nil)
	c.Call("PUT", "/nodes/pve01/lxc/210/config", url.Values{"cpuunits": {"200"}}).Must(t, "stopped update")
	if cur := current(); cur["net10"] == nil || cur["features"] != nil || cur["cpuunits"] != float64(200) {
		t.Errorf("stopped CT after cpuunits=200: net10 %v, features %v (neither is this update's), cpuunits %v", cur["net10"], cur["features"], cur["cpuunits"])
	}
	simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc/210/status/start", nil)
	if cur := current(); cur["net10"] != nil || cur["features"] != "nesting=1" {
		t.Errorf("after the start net10 = %v, features = %v; want the pending changes applied", cur["net10"], cur["features"])
	}
}
