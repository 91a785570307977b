package pveclone

import (
	"regexp"
	"testing"

	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// The privileges a clone needs (the module's notes), proven from both
// sides against the lab's permission checks (schema `permissions` and
// qemu-server's own: lab/pvesim/qemusim/perm.go): a privilege-separated token
// holding exactly these on / clones a template, configures (CPU, memory, a
// NIC on a VLAN, cloud-init) and grows the VM; with any one of them fewer
// the run fails, its message naming the privilege PVE refused and where —
// for the clone call's VM.Allocate, whose failed "or" PVE answers without
// naming anything, the module names what the call needs; for VM.Audit and
// Datastore.AllocateSpace, whose lack only empties PVE's lists (K19), the
// module names the privilege that would show the object. Not in the list:
// VM.Config.Cloudinit (PVE takes it or VM.Config.Network for the
// cloud-init options, which the NIC needs anyway) and Datastore.Audit
// (this path reads no storage definition). PVE 8 and 9.
var clonePrivs = []string{"Datastore.AllocateSpace", "SDN.Use", "VM.Allocate", "VM.Audit", "VM.Clone",
	"VM.Config.CPU", "VM.Config.Disk", "VM.Config.Memory", "VM.Config.Network"}

func TestDocumentedPrivilegesOneFewer(t *testing.T) {
	t.Parallel()
	args := map[string]any{
		"vmid": 201, "name": "web-1", "template": "debian-12", "node": "pve02", "cores": 2, "memory": 4096,
		"nets": map[string]any{"net0": map[string]any{"bridge": "vmbr1", "tag": 30}}, "disks": map[string]any{"scsi0": "8G"},
		"ciuser": "debian", "ipconfig": map[string]any{"ipconfig0": "ip=10.0.0.5/24,gw=10.0.0.1"},
	}
	pveapitest.OneFewer(t, func(int) []string { return clonePrivs }, func(t *testing.T, v int, drop string, kept []string) {
		w := newWorld(t, v)
		id, secret := pveapitest.PrivsepToken(t, w.sim, "pve01", kept)
		w.conn["api_token_id"], w.conn["api_token_secret"] = id, secret
		w.sim.ResetRequests()
		res := w.run(args, false)
		if drop == "" {
			if failed(res) || res["changed"] != true {
				t.Fatalf("with every documented privilege: %s", msg(res))
			}
			if c := w.config("pve02", 201, false); c.Values["memory"] != "4096" || c.Values["ciuser"] != "debian" {
				t.Errorf("VM 201 not configured: %v", c.Values)
			}
			return
		}
		named := regexp.MustCompile(`/[\w./-]*, ([\w.]+\|)*` + regexp.QuoteMeta(drop) + `\b|\b` + regexp.QuoteMeta(drop) + ` on /`)
		if !failed(res) || !named.MatchString(msg(res)) {
			t.Errorf("without %s: failed %v, the message does not name what PVE refused: %s", drop, failed(res), msg(res))
		}
		// A refusal after an accepted write (the clone made, its
		// config refused) leaves something changed: changed says
		// what the lab accepted, as in every failed run.
		if accepted := pveapitest.Accepted(w.sim); res["changed"] != (len(accepted) > 0) {
			t.Errorf("without %s: changed %v, the lab accepted %v", drop, res["changed"], accepted)
		}
		t.Logf("without %s: changed %v: %s", drop, res["changed"], msg(res))
	})
}
