package pvesim

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os/exec"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
)

// The lab's pools and HA resources against a client nobody here wrote:
// Debian 12's python3-proxmoxer (1.2), called directly — community.general
// 6.6.2 in Debian has no pool or HA resource module. Each call's expected
// answer is what real PVE answers, cited from its code; proxmoxer turns a
// PVE error into ResourceException(status, reason), the reason being PVE's
// die message.
const proxmoxerScript = `
import json, sys
from proxmoxer import ProxmoxAPI
from proxmoxer.core import ResourceException
host, port, user, token, secret = sys.argv[1:6]
px = ProxmoxAPI(host, port=int(port), user=user, token_name=token, token_value=secret, verify_ssl=False)
out = {}
def call(step, f):
    try:
        out[step] = {"ok": True, "data": f()}
    except ResourceException as e:
        out[step] = {"ok": False, "status": e.status_code, "msg": str(e.content)}
call("pool create", lambda: px.pools.post(poolid="tenant", comment="tenant a"))
call("pool create again", lambda: px.pools.post(poolid="tenant"))
call("pool create digit", lambda: px.pools.post(poolid="9tenant"))
call("pool create orphan", lambda: px.pools.post(poolid="org/tenant"))
call("pool list", lambda: px.pools.get())
call("pool add vm", lambda: px.pools("tenant").put(vms="201"))
call("pool add vm again", lambda: px.pools("tenant").put(vms="201"))
call("pool read", lambda: px.pools("tenant").get())
call("pool delete busy", lambda: px.pools("tenant").delete())
call("pool remove vm", lambda: px.pools("tenant").put(vms="201", delete=1))
call("pool delete", lambda: px.pools("tenant").delete())
call("pool list empty", lambda: px.pools.get())
call("ha create missing vm", lambda: px.cluster.ha.resources.post(sid="vm:999"))
call("ha create", lambda: px.cluster.ha.resources.post(sid="vm:201", state="stopped", max_restart=2, comment="web"))
call("ha create again", lambda: px.cluster.ha.resources.post(sid="vm:201"))
call("ha list", lambda: px.cluster.ha.resources.get())
call("ha read", lambda: px.cluster.ha.resources("vm:201").get())
call("ha update", lambda: px.cluster.ha.resources("vm:201").put(state="ignored", comment="web 2"))
call("ha read updated", lambda: px.cluster.ha.resources("vm:201").get())
call("ha delete", lambda: px.cluster.ha.resources("vm:201").delete())
call("ha delete again", lambda: px.cluster.ha.resources("vm:201").delete())
call("ha read deleted", lambda: px.cluster.ha.resources("vm:201").get())
print(json.dumps(out))
`

func TestProxmoxerPoolsAndHAResources(t *testing.T) {
	testenv.NeedTools(t, debianPython)
	if out, err := exec.Command(debianPython, "-c", "import proxmoxer, requests").CombinedOutput(); err != nil {
		testenv.Skipf(t, "python3-proxmoxer is missing (make deps): %v %s", err, out)
	}
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("pve%d", v), func(t *testing.T) {
			t.Parallel()
			s, a, _ := twoNodes(t, simOpts{Version: v, TaskDuration: 30 * time.Millisecond})
			createVM(t, a, 201, url.Values{"name": {"web-01"}})
			res := runProxmoxer(t, s, proxmoxerScript)
			ok := func(step string) json.RawMessage {
				t.Helper()
				r, found := res[step]
				if !found || !r.OK {
					t.Errorf("%s: %+v, want success", step, r)
				}
				return r.Data
			}
			refused := func(step, msg string) {
				t.Helper()
				if r := res[step]; r.OK || r.Status != 500 || r.Msg != msg {
					t.Errorf("%s: %+v, want 500 %q", step, r, msg)
				}
			}
			// pve-manager PVE/API2/Pool.pm: create_pool returns null; inside
			// lock_user_config("create pool failed") it dies on an existing
			// pool, a leaf not starting with a letter, a missing parent.
			if d := ok("pool create"); string(d) != "null" {
				t.Errorf("create_pool returns null, got %s", d)
			}
			refused("pool create again", "create pool failed: pool 'tenant' already exists")
			refused("pool create digit", "create pool failed: pool name must start with a letter")
			refused("pool create orphan", "create pool failed: parent 'org' of pool 'org/tenant' does not exist")
			var pools []map[string]any
			_ = json.Unmarshal(ok("pool list"), &pools)
			if len(pools) != 1 || pools[0]["poolid"] != "tenant" || pools[0]["comment"] != "tenant a" {
				t.Errorf("index: %v", pools)
			}
			// update_pool: members added once ("VM 201 is already a pool
			// member"); read_pool lists guests as extract_vm_stats entries
			// (id qemu/201, type qemu, vmid, node).
			ok("pool add vm")
			refused("pool add vm again", "update pools failed: VM 201 is already a pool member")
			var pool struct {
				Comment string           `json:"comment"`
				Members []map[string]any `json:"members"`
			}
			_ = json.Unmarshal(ok("pool read"), &pool)
			if len(pool.Members) != 1 || pool.Members[0]["id"] != "qemu/201" || pool.Members[0]["type"] != "qemu" ||
				pool.Members[0]["vmid"] != float64(201) || pool.Members[0]["node"] != "pve01" {
				t.Errorf("read_pool members: %+v", pool)
			}
			// delete_pool refuses a pool with members, then deletes it.
			refused("pool delete busy", "delete pool failed: pool 'tenant' is not empty (contains VM 201)")
			ok("pool remove vm")
			ok("pool delete")
			if d := ok("pool list empty"); string(d) != "[]" {
				t.Errorf("index after delete: %s", d)
			}

			// pve-ha-manager PVE/API2/HA/Resources.pm: create checks the guest
			// exists (Resources/PVEVM.pm exists), then under
			// lock_ha_domain("create resource failed") that the sid is new.
			refused("ha create missing vm", "resource 'vm:999' does not exist in cluster")
			if d := ok("ha create"); string(d) != "null" {
				t.Errorf("create returns null, got %s", d)
			}
			refused("ha create again", "create resource failed: resource ID 'vm:201' already defined")
			// index and read copy the section as stored ($api_copy_config over
			// read_resources_config): sid, type, digest and only the keys
			// given — max_relocate is not filled in (the root of
			// community.proxmox's always-changed HA resources, anchors §1.4).
			var list []map[string]any
			_ = json.Unmarshal(ok("ha list"), &list)
			if len(list) != 1 || list[0]["sid"] != "vm:201" || list[0]["type"] != "vm" || list[0]["state"] != "stopped" ||
				fmt.Sprint(list[0]["max_restart"]) != "2" || list[0]["comment"] != "web" || list[0]["digest"] == nil {
				t.Errorf("HA index: %v", list)
			} else if _, filled := list[0]["max_relocate"]; filled {
				t.Errorf("HA index filled a default PVE does not: %v", list[0])
			}
			var one map[string]any
			_ = json.Unmarshal(ok("ha read"), &one)
			if one["sid"] != "vm:201" || one["state"] != "stopped" || one["digest"] == nil {
				t.Errorf("HA read: %v", one)
			}
			ok("ha update")
			_ = json.Unmarshal(ok("ha read updated"), &one)
			if one["state"] != "ignored" || one["comment"] != "web 2" {
				t.Errorf("HA read after update: %v", one)
			}
			// delete: "cannot delete service 'vm:201', not HA managed!" once
			// gone; read: $api_copy_config's "no such resource".
			ok("ha delete")
			refused("ha delete again", "cannot delete service 'vm:201', not HA managed!")
			refused("ha read deleted", "no such resource 'vm:201'")

			// Every write the client sent reached the lab as one mutating
			// request, refusals included.
			writes := 0
			for _, r := range s.Requests() {
				if r.Mutating() && r.Path != "/access/ticket" {
					writes++
				}
			}
			if writes != 15 {
				t.Errorf("the lab saw %d mutating requests, the script sent 15", writes)
			}
		})
	}
}
