package simtest

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/accesssim"
)

// Guests and their volumes as the tests of several packages (qemusim,
// lxcsim, and pvesim's tests of the whole simulator) set them up and read
// them back.

// VMConfig is GET /nodes/{node}/qemu/{vmid}/config's answer; it fails the
// test unless the call answers 200.
func VMConfig(t *testing.T, c *Client, node string, vmid int) map[string]any {
	t.Helper()
	return c.Call("GET", fmt.Sprintf("/nodes/%s/qemu/%d/config", node, vmid), nil).Must(t, "config").Obj()
}

// MakeTemplate creates vmid on c's node (CreateVM with extra) and turns it
// into a template.
func MakeTemplate(t *testing.T, c *Client, vmid int, extra url.Values) {
	t.Helper()
	CreateVM(t, c, vmid, extra)
	if st := MustTask(t, c, "POST", fmt.Sprintf("/nodes/%s/qemu/%d/template", c.Node, vmid), nil); st["exitstatus"] != "OK" {
		t.Fatalf("template: %v", st)
	}
}

// Volids lists a storage's volumes on c's node, sorted.
func Volids(t *testing.T, c *Client, storage string) []string {
	t.Helper()
	var out []string
	for _, e := range c.Call("GET", "/nodes/"+c.Node+"/storage/"+storage+"/content", nil).Must(t, "content").List() {
		out = append(out, e["volid"].(string))
	}
	slices.Sort(out)
	return out
}

// PutConfig updates VM vmid on c's node (PUT …/config) and fails the test
// unless it answers 200.
func PutConfig(t *testing.T, c *Client, vmid int, p url.Values) {
	t.Helper()
	c.Call("PUT", fmt.Sprintf("/nodes/%s/qemu/%d/config", c.Node, vmid), p).Must(t, fmt.Sprintf("PUT config %v", p))
}

// Pveum is a Sim with the lab's pveum stand-in (pvesim.Sim's
// accesssim.Pveum).
type Pveum interface {
	Sim
	AddToken(node string, spec accesssim.TokenSpec) (id, secret string, err error)
	Grant(node, path, ugid, role string, propagate bool) error
}

// PermToken is a client of pve01 with a privilege-separated token of
// root@pam holding privs on /.
func PermToken(t *testing.T, s Pveum, name string, privs []string) *Client {
	t.Helper()
	id, secret, err := s.AddToken("pve01", accesssim.TokenSpec{User: "root@pam", Name: name, Privsep: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Grant("pve01", "/", id, "priv:"+strings.Join(privs, ","), true); err != nil {
		t.Fatal(err)
	}
	return NewClient(t, s, "pve01").WithToken(id, secret)
}

// CreatePrivilegesOneFewer runs a guest create on PVE 8 and 9 with a token
// holding exactly privs on /, then with each one fewer: all of them
// suffice (the task ends OK and conf exists), and without one the POST is
// PVE's 403 with want[dropped] as its message and leaves no conf.
func CreatePrivilegesOneFewer[S Pveum](t *testing.T, newSim New[S], privs []string, want map[string]string, path string, params url.Values, conf string) {
	t.Helper()
	for _, v := range []int{8, 9} {
		for _, drop := range append([]string{""}, privs...) {
			t.Run(fmt.Sprintf("pve%d/without_%s", v, drop), func(t *testing.T) {
				t.Parallel()
				s := Start(t, newSim, Opts{Version: v, TaskDuration: 10 * time.Millisecond})
				c := PermToken(t, s, "create", slices.DeleteFunc(slices.Clone(privs), func(p string) bool { return p == drop }))
				if drop == "" {
					if st := MustTask(t, c, "POST", path, params); st["exitstatus"] != "OK" {
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
