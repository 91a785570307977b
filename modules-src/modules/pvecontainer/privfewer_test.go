package pvecontainer

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// The privileges the module's notes list for creating, configuring,
// growing and starting an unprivileged CT, proven from both sides against
// the lab's permission checks (schema `permissions` and pve-container's
// own: lab/pvesim/lxcsim/perm.go): a privilege-separated token holding exactly
// these on / creates the CT (hostname, CPU, memory, a NIC on a VLAN, the
// nesting feature, onboot, tags, a rootfs on tank) and starts it, then a
// second run grows memory and the rootfs; with any one of them fewer a run
// fails, its message naming the privilege PVE refused and where — for
// create's VM.Allocate, whose failed "or" PVE answers without naming
// anything, the module names what the call needs; for VM.Audit and
// Datastore.AllocateSpace, whose lack only empties PVE's lists (K19), the
// module names the privilege that would show the object. Not in the list:
// Datastore.Audit (Datastore.AllocateSpace lists the storages and the
// templates as well) and Sys.Modify (PVE 9 asks it only for a privileged
// CT). PVE 8 and 9.
var ctPrivs = []string{"Datastore.AllocateSpace", "SDN.Use", "Sys.Audit", "VM.Allocate", "VM.Audit", "VM.Config.CPU",
	"VM.Config.Disk", "VM.Config.Memory", "VM.Config.Network", "VM.Config.Options", "VM.PowerMgmt"}

func TestDocumentedPrivilegesOneFewer(t *testing.T) {
	t.Parallel()
	create := map[string]any{
		"vmid": 201, "hostname": "web-1", "node": "pve02", "ostemplate": tmpl, "unprivileged": true, "cores": 2, "memory": 1024,
		"rootfs": map[string]any{"storage": "tank", "size": "8G"}, "features": map[string]any{"nesting": true},
		"nets":   map[string]any{"net0": map[string]any{"name": "eth0", "bridge": "vmbr1", "tag": 30, "ip": "dhcp"}},
		"onboot": true, "tags": []any{"web"}, "state": "started",
	}
	grow := map[string]any{"vmid": 201, "hostname": "web-1", "memory": 2048, "rootfs": map[string]any{"size": "10G"}}
	pveapitest.OneFewer(t, func(int) []string { return ctPrivs }, func(t *testing.T, v int, drop string, kept []string) {
		w := newWorld(t, v)
		id, secret := pveapitest.PrivsepToken(t, w.sim, "pve01", kept)
		delete(w.conn, "api_user")
		delete(w.conn, "api_password")
		w.conn["api_token_id"], w.conn["api_token_secret"] = id, secret
		var res map[string]any
		for i, args := range []map[string]any{create, grow} {
			w.sim.ResetRequests()
			res = w.run(args, false)
			// A refusal after an accepted write (the CT made, its
			// start refused) leaves something changed: changed says
			// what the lab accepted, as in every failed run.
			if accepted := pveapitest.Accepted(w.sim); res["changed"] != (len(accepted) > 0) {
				t.Errorf("run %d without %q: changed %v, the lab accepted %v", i+1, drop, res["changed"], accepted)
			}
			if failed(res) {
				break
			}
		}
		if drop == "" {
			if failed(res) || res["changed"] != true {
				t.Fatalf("with every documented privilege: %s", msg(res))
			}
			if c := w.config("pve02", 201, false); c["memory"] != "2048" || !strings.Contains(c["rootfs"], "size=10G") || c["features"] != "nesting=1" {
				t.Errorf("CT 201 not configured: %v", c)
			}
			return
		}
		named := regexp.MustCompile(`/[\w./-]*, ([\w.]+\|)*` + regexp.QuoteMeta(drop) + `\b|\b` + regexp.QuoteMeta(drop) + ` on /`)
		if !failed(res) || !named.MatchString(msg(res)) {
			t.Errorf("without %s: failed %v, the message does not name what PVE refused: %s", drop, failed(res), msg(res))
		}
		t.Logf("without %s: changed %v: %s", drop, res["changed"], msg(res))
	})
}
