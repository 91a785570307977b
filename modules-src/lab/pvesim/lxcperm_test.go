package pvesim

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// ctPermPrivs are what an unprivileged CT's create below needs from
// pve-container (lxcperm.go): VM.Allocate (create_vm, and the nesting
// feature), the VM.Config.* of each option (hostname is
// VM.Config.Network's), SDN.Use on the NIC's VLAN and
// Datastore.AllocateSpace on the rootfs' storage (and, or
// Datastore.Audit, on the template's).
var ctPermPrivs = []string{"Datastore.AllocateSpace", "SDN.Use", "VM.Allocate", "VM.Config.CPU", "VM.Config.Disk",
	"VM.Config.Memory", "VM.Config.Network", "VM.Config.Options"}

// permToken is a privilege-separated token of root@pam holding privs on /.
func permToken(t *testing.T, s *Sim, name string, privs []string) *apiClient {
	t.Helper()
	id, secret, err := s.AddToken("pve01", TokenSpec{User: "root@pam", Name: name, Privsep: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Grant("pve01", "/", id, "priv:"+strings.Join(privs, ","), true); err != nil {
		t.Fatal(err)
	}
	return newClient(t, s, "pve01").WithToken(id, secret)
}

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
	createPrivilegesOneFewer(t, ctPermPrivs, want, "/nodes/pve01/lxc", ctCreateParams(200), "nodes/pve01/lxc/200.conf")
}

// createPrivilegesOneFewer runs a guest create on PVE 8 and 9 with a token
// holding exactly privs on /, then with each one fewer: all of them
// suffice (the task ends OK and conf exists), and without one the POST is
// PVE's 403 with want[dropped] as its message and leaves no conf.
func createPrivilegesOneFewer(t *testing.T, privs []string, want map[string]string, path string, params url.Values, conf string) {
	t.Helper()
	for _, v := range []int{8, 9} {
		for _, drop := range append([]string{""}, privs...) {
			t.Run(fmt.Sprintf("pve%d/without_%s", v, drop), func(t *testing.T) {
				t.Parallel()
				s := startSim(t, simOpts{Version: v, TaskDuration: 10 * time.Millisecond})
				c := permToken(t, s, "create", slices.DeleteFunc(slices.Clone(privs), func(p string) bool { return p == drop }))
				if drop == "" {
					if st := mustTask(t, c, "POST", path, params); st["exitstatus"] != "OK" {
						t.Fatalf("with every privilege: %v", st)
					}
					if _, ok, _ := s.ReadPmxcfs("pve01", conf); !ok {
						t.Error("an accepted create left no config")
					}
					return
				}
				r := c.Call("POST", path, params)
				if r.Status != 403 || r.Reason != want[drop] {
					t.Errorf("without %s: %d %q, want 403 %q", drop, r.Status, r.Reason, want[drop])
				}
				if _, ok, _ := s.ReadPmxcfs("pve01", conf); ok {
					t.Error("a refused create left a config")
				}
			})
		}
	}
}

// What only root@pam may do, the privileged CT's Sys.Modify (PVE 9 only,
// pve-container 6.0.6), and resize's VM.Config.Options and
// Datastore.AllocateSpace.
func TestCTPermissionEdges(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("pve%d", v), func(t *testing.T) {
			t.Parallel()
			s := startSim(t, simOpts{Version: v, TaskDuration: 10 * time.Millisecond})
			c := permToken(t, s, "ct", ctPermPrivs)
			refused := func(what string, r resp, status int, reason string) {
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

			if st := mustTask(t, c, "POST", "/nodes/pve01/lxc", ctCreateParams(200)); st["exitstatus"] != "OK" {
				t.Fatalf("create: %v", st)
			}
			// Taking out the NIC checks the bridge it was on.
			for i, lack := range []struct{ priv, path, call string }{
				{"SDN.Use", "/sdn/zones/localnetwork/vmbr0/30", "delete=net0"},
				{"VM.Config.Options", "/vms/200", "resize"},
				{"Datastore.AllocateSpace", "/storage/local-lvm", "resize"},
			} {
				c := permToken(t, s, fmt.Sprintf("lack%d", i), slices.DeleteFunc(slices.Clone(ctPermPrivs), func(p string) bool { return p == lack.priv }))
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
			if st := mustTask(t, c, "PUT", "/nodes/pve01/lxc/200/resize", url.Values{"disk": {"rootfs"}, "size": {"3G"}}); st["exitstatus"] != "OK" {
				t.Errorf("resize with every privilege: %v", st)
			}
		})
	}
}
