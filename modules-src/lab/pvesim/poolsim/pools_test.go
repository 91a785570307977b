package poolsim_test

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
)

// Guests in pools, as pve-manager's PVE/API2/Pool.pm update_pool and index
// handle them: `vms` adds or (delete=1) removes members, all or nothing; a
// guest already in another pool is refused unless allow-move; GET lists the
// members with their node and type from .vmlist, user.cfg keeps them by
// VMID and /cluster/resources names the pool. Both the 8.1+ form
// (PUT /pools?poolid=) and the deprecated PUT /pools/{poolid}, on PVE 8 and
// 9 (both schemas have both). K6 needs the pool; the module's proofs read
// membership back through these answers.
func TestPoolGuestMembersK6(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("pve%d", v), func(t *testing.T) {
			t.Parallel()
			s := simtest.Start(t, pvesim.New, simtest.Opts{Version: v, TaskDuration: 30 * time.Millisecond})
			c := simtest.NewClient(t, s, "pve01").LabToken()
			simtest.CreateVM(t, c, 100, nil)
			simtest.CreateVM(t, c, 101, nil)
			simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc", url.Values{"vmid": {"200"}, "ostemplate": {"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"},
				"rootfs": {"local-lvm:2"}, "hostname": {"ct200"}})
			for _, p := range []string{"web", "db"} {
				c.Call("POST", "/pools", url.Values{"poolid": {p}}).Must(t, "pool "+p)
			}
			// 8.1+ form for web, the deprecated one for db.
			c.Call("PUT", "/pools", url.Values{"poolid": {"web"}, "vms": {"100,200"}}).Must(t, "web members")
			c.Call("PUT", "/pools/db", url.Values{"vms": {"101"}}).Must(t, "db member (deprecated path)")

			members := func(pool string, extra url.Values) map[string]map[string]any {
				t.Helper()
				q := url.Values{"poolid": {pool}}
				for k, v := range extra {
					q[k] = v
				}
				l := c.Call("GET", "/pools", q).Must(t, "GET pool "+pool).List()
				out := map[string]map[string]any{}
				if len(l) != 1 {
					t.Fatalf("GET /pools?poolid=%s: %v", pool, l)
				}
				ms, _ := l[0]["members"].([]any)
				for _, m := range ms {
					e := m.(map[string]any)
					out[e["id"].(string)] = e
				}
				return out
			}
			web := members("web", nil)
			if len(web) != 2 || web["qemu/100"]["node"] != "pve01" || web["qemu/100"]["vmid"] != float64(100) ||
				web["lxc/200"]["type"] != "lxc" || web["qemu/100"]["name"] != "vm100" {
				t.Errorf("web members: %v", web)
			}
			if only := members("web", url.Values{"type": {"lxc"}}); len(only) != 1 || only["lxc/200"] == nil {
				t.Errorf("type=lxc filter: %v", only)
			}
			dep := c.Call("GET", "/pools/db", nil).Must(t, "deprecated GET").Obj()
			if m, _ := dep["members"].([]any); len(m) != 1 || m[0].(map[string]any)["id"] != "qemu/101" {
				t.Errorf("GET /pools/db: %v", dep)
			}

			expect := func(what string, r simtest.Resp, reason string) {
				t.Helper()
				if r.Status != 500 || r.Reason != reason {
					t.Errorf("%s: %d %q, want 500 %q", what, r.Status, r.Reason, reason)
				}
			}
			// A guest in another pool: refused, and the whole update with it
			// (101 is not added although it came first).
			expect("member of another pool", c.Call("PUT", "/pools", url.Values{"poolid": {"db"}, "vms": {"100"}}),
				"update pools failed: VM 100 belongs already to pool 'web' and 'allow-move' is not set")
			expect("member twice", c.Call("PUT", "/pools", url.Values{"poolid": {"web"}, "vms": {"100"}}),
				"update pools failed: VM 100 is already a pool member")
			expect("removing a non-member", c.Call("PUT", "/pools", url.Values{"poolid": {"db"}, "vms": {"100"}, "delete": {"1"}}),
				"update pools failed: VM 100 is not a pool member")
			if len(members("db", nil)) != 1 || len(members("web", nil)) != 2 {
				t.Errorf("a refused update changed members")
			}
			c.Call("PUT", "/pools", url.Values{"poolid": {"db"}, "vms": {"100"}, "allow-move": {"1"}}).Must(t, "allow-move")
			if db, web := members("db", nil), members("web", nil); db["qemu/100"] == nil || web["qemu/100"] != nil {
				t.Errorf("after allow-move: db %v web %v", db, web)
			}

			// user.cfg and /cluster/resources say the same.
			raw, _, _ := s.ReadPmxcfs("pve01", "user.cfg")
			if !strings.Contains(raw, "pool:db::100,101:") || !strings.Contains(raw, "pool:web::200:") {
				t.Errorf("user.cfg pools:\n%s", raw)
			}
			pools := map[string]any{}
			for _, e := range c.Call("GET", "/cluster/resources", url.Values{"type": {"vm"}}).Must(t, "resources").List() {
				pools[e["id"].(string)] = e["pool"]
			}
			if pools["qemu/100"] != "db" || pools["qemu/101"] != "db" || pools["lxc/200"] != "web" {
				t.Errorf("/cluster/resources pools: %v", pools)
			}

			c.Call("PUT", "/pools", url.Values{"poolid": {"db"}, "vms": {"101"}, "delete": {"1"}}).Must(t, "remove 101")
			if db := members("db", nil); len(db) != 1 || db["qemu/100"] == nil {
				t.Errorf("after delete=1: %v", db)
			}
			// A destroyed guest leaves its pool (remove_vm_access); a pool
			// holding only a VMID with no guest left can be deleted.
			simtest.MustTask(t, c, "DELETE", "/nodes/pve01/qemu/100", nil)
			if db := members("db", nil); len(db) != 0 {
				t.Errorf("destroyed VM still a member: %v", db)
			}
			c.Call("PUT", "/pools", url.Values{"poolid": {"db"}, "vms": {"555"}}).Must(t, "a VMID without a guest") // update_pool does not check
			if db := members("db", nil); len(db) != 0 {
				t.Errorf("a VMID without guest is listed: %v", db)
			}
			c.Call("DELETE", "/pools", url.Values{"poolid": {"db"}}).Must(t, "delete pool holding only a stale VMID")
			expect("delete a pool with a guest", c.Call("DELETE", "/pools", url.Values{"poolid": {"web"}}),
				"delete pool failed: pool 'web' is not empty (contains VM 200)")
		})
	}
}

// A pool member edited into user.cfg by hand is what the API shows next.
func TestPoolMembersFromUserCfg(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond})
	c := simtest.NewClient(t, s, "pve01").LabToken()
	simtest.CreateVM(t, c, 100, nil)
	c.Call("POST", "/pools", url.Values{"poolid": {"web"}}).Must(t, "pool")
	raw, _, _ := s.ReadPmxcfs("pve01", "user.cfg")
	edited := strings.Replace(raw, "pool:web:::", "pool:web::100:", 1)
	if edited == raw {
		t.Fatalf("no pool line in user.cfg:\n%s", raw)
	}
	if err := os.WriteFile(filepath.Join(s.EtcPveDir("pve01"), "user.cfg"), []byte(edited), 0o640); err != nil {
		t.Fatal(err)
	}
	l := c.Call("GET", "/pools", url.Values{"poolid": {"web"}}).Must(t, "pool").List()
	if m, _ := l[0]["members"].([]any); len(m) != 1 || m[0].(map[string]any)["id"] != "qemu/100" {
		t.Errorf("hand-edited member: %v", l)
	}
}

// update_pool checks each member as check_perm_modify does: Pool.Allocate
// on the pool lets one in (the schema's check), but a guest needs
// Permissions.Modify or VM.Allocate on /vms/<vmid> and a storage
// Permissions.Modify or Datastore.Allocate on /storage/<id>; the 403 dies
// inside lock_user_config, so it comes back wrapped, and nothing changes.
func TestPoolMemberNeedsPermModify(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond})
	c := simtest.NewClient(t, s, "pve01").LabToken()
	simtest.CreateVM(t, c, 100, nil)
	c.Call("POST", "/pools", url.Values{"poolid": {"web"}}).Must(t, "pool")
	id, secret, err := s.AddToken("pve01", pvesim.TokenSpec{User: "ops@pve", Name: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Grant("pve01", "/pool/web", "ops@pve", "priv:Pool.Allocate", true); err != nil {
		t.Fatal(err)
	}
	ops := simtest.NewClient(t, s, "pve01").WithToken(id, secret)
	for _, tc := range []struct{ param, value, want string }{
		{"vms", "100", "update pools failed: 403 Permission check failed (/vms/100, Permissions.Modify|VM.Allocate)"},
		{"storage", "local", "update pools failed: 403 Permission check failed (/storage/local, Permissions.Modify|Datastore.Allocate)"},
	} {
		if r := ops.Call("PUT", "/pools", url.Values{"poolid": {"web"}, tc.param: {tc.value}}); r.Status != 500 || r.Reason != tc.want {
			t.Errorf("%s=%s without the privilege: %d %q, want 500 %q", tc.param, tc.value, r.Status, r.Reason, tc.want)
		}
	}
	if err := s.Grant("pve01", "/vms/100", "ops@pve", "priv:VM.Allocate", true); err != nil {
		t.Fatal(err)
	}
	ops.Call("PUT", "/pools", url.Values{"poolid": {"web"}, "vms": {"100"}}).Must(t, "vms=100 with VM.Allocate on /vms/100")
	l := c.Call("GET", "/pools", url.Values{"poolid": {"web"}}).Must(t, "pool").List()
	if m, _ := l[0]["members"].([]any); len(m) != 1 {
		t.Errorf("members after the allowed add: %v", l)
	}
}
