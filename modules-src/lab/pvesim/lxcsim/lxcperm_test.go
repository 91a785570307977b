package lxcsim_test

import (
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
)

// ctPermPrivs are what an unprivileged CT's create below needs from
// pve-container (perm.go): VM.Allocate (create_vm, and the nesting
// feature), the VM.Config.* of each option (hostname is
// VM.Config.Network's), SDN.Use on the NIC's VLAN and
// Datastore.AllocateSpace on the rootfs' storage (and, or
// Datastore.Audit, on the template's).
var ctPermPrivs = []string{"Datastore.AllocateSpace", "SDN.Use", "VM.Allocate", "VM.Config.CPU", "VM.Config.Disk",
	"VM.Config.Memory", "VM.Config.Network", "VM.Config.Options"}

func ctCreateParams(vmid int) url.Values {
	return url.Values{"vmid": {fmt.Sprint(vmid)}, "ostemplate": {"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"},
		"unprivileged": {"1"}, "hostname": {"web"}, "cores": {"2"}, "memory": {"1024"}, "rootfs": {"local-lvm:2"},
		"net0": {"name=eth0,bridge=vmbr0,tag=30,ip=dhcp"}, "features": {"nesting=1"}, "onboot": {"1"}}
}

// A create with exactly ctPermPrivs succeeds; with one fewer PVE's 403
// names the privilege and its path, except VM.Allocate, whose failed
// alternatives (/vms/<vmid>, /pool/<pool>) raise_perm_exc() answers
// without a detail.
func TestCTCreatePrivilegesOneFewer(t *testing.T) {
	want := map[string]string{
		"Datastore.AllocateSpace": "Permission check failed (/storage/local-lvm, Datastore.AllocateSpace)",
		"SDN.Use":                 "Permission check failed (/sdn/zones/localnetwork/vmbr0/30, SDN.Use)",
		"VM.Allocate":             "Permission check failed",
		"VM.Config.CPU":           "Permission check failed (/vms/200, VM.Config.CPU)",
		"VM.Config.Disk":          "Permission check failed (/vms/200, VM.Config.Disk)",
		"VM.Config.Memory":        "Permission check failed (/vms/200, VM.Config.Memory)",
		"VM.Config.Network":       "Permission check failed (/vms/200, VM.Config.Network)",
		"VM.Config.Options":       "Permission check failed (/vms/200, VM.Config.Options)",
	}
	simtest.CreatePrivilegesOneFewer(t, pvesim.New, ctPermPrivs, want, "/nodes/pve01/lxc", ctCreateParams(200), "nodes/pve01/lxc/200.conf")
}

// What only root@pam may do, the privileged CT's Sys.Modify (PVE 9 only,
// pve-container 6.0.6), and resize's VM.Config.Options and
// Datastore.AllocateSpace.
func TestCTPermissionEdges(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("pve%d", v), func(t *testing.T) {
			t.Parallel()
			s := simtest.Start(t, pvesim.New, simtest.Opts{Version: v, TaskDuration: 10 * time.Millisecond})
			c := simtest.PermToken(t, s, "ct", ctPermPrivs)
			refused := func(what string, r simtest.Resp, status int, reason string) {
				t.Helper()
				if r.Status != status || r.Reason != reason {
					t.Errorf("%s: %d %q, want %d %q", what, r.Status, r.Reason, status, reason)
				}
			}
			p := ctCreateParams(201)
			p.Set("unprivileged", "0")
			p.Del("features")
			r := c.Call("POST", "/nodes/pve01/lxc", p)
			if v == 9 {
				refused("privileged CT", r, 403, "Permission check failed (/, Sys.Modify)")
			} else if r.Status != 200 {
				t.Errorf("privileged CT on PVE 8 (no Sys.Modify check): %d %q", r.Status, r.Reason)
			}
			p = ctCreateParams(202)
			p.Set("features", "nesting=1,keyctl=1")
			refused("keyctl", c.Call("POST", "/nodes/pve01/lxc", p), 403,
				"Permission check failed (changing feature flags (except nesting) is only allowed for root@pam)")
			p = ctCreateParams(202)
			p.Set("rootfs", "2")
			refused("bare size", c.Call("POST", "/nodes/pve01/lxc", p), 500, "Only root can pass arbitrary filesystem paths.")
			p = ctCreateParams(202)
			p.Set("mp0", "/srv,mp=/srv")
			refused("bind mount", c.Call("POST", "/nodes/pve01/lxc", p), 403,
				"Permission check failed (mount point type bind is only allowed for root@pam)")

			if st := simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc", ctCreateParams(200)); st["exitstatus"] != "OK" {
				t.Fatalf("create: %v", st)
			}
			// Taking out the NIC checks the bridge it was on.
			for i, lack := range []struct{ priv, path, call string }{
				{"SDN.Use", "/sdn/zones/localnetwork/vmbr0/30", "delete=net0"},
				{"VM.Config.Options", "/vms/200", "resize"},
				{"Datastore.AllocateSpace", "/storage/local-lvm", "resize"},
			} {
				c := simtest.PermToken(t, s, fmt.Sprintf("lack%d", i), slices.DeleteFunc(slices.Clone(ctPermPrivs), func(p string) bool { return p == lack.priv }))
				r := c.Call("PUT", "/nodes/pve01/lxc/200/config", url.Values{"delete": {"net0"}})
				if lack.call == "resize" {
					r = c.Call("PUT", "/nodes/pve01/lxc/200/resize", url.Values{"disk": {"rootfs"}, "size": {"3G"}})
				}
				refused(lack.call+" without "+lack.priv, r, 403, fmt.Sprintf("Permission check failed (%s, %s)", lack.path, lack.priv))
			}
			conf := c.Call("GET", "/nodes/pve01/lxc/200/config", nil)
			if conf.Status != 403 {
				t.Errorf("GET config without VM.Audit: %d", conf.Status)
			}
			if st := simtest.MustTask(t, c, "PUT", "/nodes/pve01/lxc/200/resize", url.Values{"disk": {"rootfs"}, "size": {"3G"}}); st["exitstatus"] != "OK" {
				t.Errorf("resize with every privilege: %v", st)
			}
		})
	}
}
