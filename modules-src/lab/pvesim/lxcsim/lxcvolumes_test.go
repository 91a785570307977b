package lxcsim_test

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
)

// A container's rootfs as pve-container's create_vm reads it: a bare size
// goes on `storage` (default local), no rootfs means "$storage:4", and the
// allocated volume is the plugin's vm-<id>-disk-N with its size; a storage
// without rootdir content is a 400 on `storage` before any task. A bare
// size is root@pam's alone (lxcperm.go: check_ct_modify_config_perm sees
// it before the storage is prefixed), so these run as root@pam.
func TestContainerRootfsAllocation(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("pve%d", v), func(t *testing.T) {
			t.Parallel()
			s := simtest.Start(t, pvesim.New, simtest.Opts{Version: v, TaskDuration: 30 * time.Millisecond})
			c := simtest.NewClient(t, s, "pve01").Root()
			tmpl := "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"
			for _, g := range []struct {
				vmid   int
				params url.Values
				rootfs string
			}{
				{200, url.Values{"rootfs": {"4"}, "storage": {"local-lvm"}}, "local-lvm:vm-200-disk-0,size=4G"},
				{201, url.Values{"rootfs": {"local-lvm:2"}}, "local-lvm:vm-201-disk-0,size=2G"},
				{202, url.Values{"storage": {"local-lvm"}}, "local-lvm:vm-202-disk-0,size=4G"},
				{203, url.Values{"rootfs": {"1"}, "mp0": {"local-lvm:2,mp=/data"}, "storage": {"local-lvm"}}, "local-lvm:vm-203-disk-0,size=1G"},
			} {
				p := url.Values{"vmid": {fmt.Sprint(g.vmid)}, "ostemplate": {tmpl}}
				for k, v := range g.params {
					p[k] = v
				}
				if st := simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc", p); st["exitstatus"] != "OK" {
					t.Fatalf("create %d: %v", g.vmid, st)
				}
				conf := c.Call("GET", fmt.Sprintf("/nodes/pve01/lxc/%d/config", g.vmid), nil).Must(t, "config").Obj()
				if conf["rootfs"] != g.rootfs {
					t.Errorf("CT %d rootfs = %v, want %s", g.vmid, conf["rootfs"], g.rootfs)
				}
				if g.vmid == 203 && conf["mp0"] != "local-lvm:vm-203-disk-1,mp=/data,size=2G" {
					t.Errorf("CT 203 mp0 = %v", conf["mp0"])
				}
			}
			r := c.Call("POST", "/nodes/pve01/lxc", url.Values{"vmid": {"210"}, "ostemplate": {tmpl}, "rootfs": {"4"}})
			if r.Status != 400 || r.Errs["storage"] != "storage 'local' does not support container directories" {
				t.Errorf("rootfs on local (no rootdir): %d %v", r.Status, r.Errs)
			}
			if r := c.Call("POST", "/nodes/pve01/lxc", url.Values{"vmid": {"211"}, "ostemplate": {tmpl}, "rootfs": {"nope:4"}}); r.Status != 500 || r.Reason != "storage 'nope' does not exist" {
				t.Errorf("unknown storage: %d %q", r.Status, r.Reason)
			}
			if _, ok, _ := s.ReadPmxcfs("pve01", "nodes/pve01/lxc/210.conf"); ok {
				t.Error("a refused create left a config")
			}
		})
	}
}
