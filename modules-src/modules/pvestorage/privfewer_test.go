package pvestorage

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// The privileges pve_storage needs (the module's requirements), proven from
// both sides against the lab's permission checks (the schema `permissions`
// of /storage, /storage/{storage} and the node's storage content): a
// privilege-separated token holding exactly these on / creates a storage
// for the cluster, reruns without a change and removes it (state=absent
// without force looks for guest volumes first, which takes Datastore.Audit:
// K19, an empty list is no proof); with one fewer a step fails, its message
// naming the privilege PVE refused, and changed says what the lab accepted.
// PVE 8 and 9.
var storagePrivs = []string{"Datastore.Allocate", "Datastore.Audit"}

func TestDocumentedPrivilegesOneFewer(t *testing.T) {
	pveapitest.OneFewer(t, func(int) []string { return storagePrivs }, func(t *testing.T, v int, drop string, kept []string) {
		w := newWorld(t, v)
		id, secret := pveapitest.PrivsepToken(t, w.sim, "pve01", kept)
		w.conn["api_token_id"], w.conn["api_token_secret"] = id, secret
		run := func(args map[string]any) func() map[string]any {
			return func() map[string]any { return w.run(args, false) }
		}
		named := regexp.MustCompile(`/[\w./-]*, ([\w.]+\|)*` + regexp.QuoteMeta(drop) + `\b`)
		pveapitest.StepsOneFewer(t, w.sim, drop, named, []pveapitest.Step{
			{Name: "create", Changed: true, Run: run(zfsArgs())},
			{Name: "rerun", Changed: false, Run: run(zfsArgs())},
			{Name: "absent", Changed: true, Run: run(map[string]any{"storage": "nvme-vm", "state": "absent"})},
		})
	})
}

// node_status reads each node's storage status, which PVE shows only with
// Datastore.Audit or Datastore.AllocateSpace on the storage (the option's
// doc): a token with Datastore.Allocate alone still converges the storage,
// and each node's entry carries PVE's refusal naming what it needs.
func TestNodeStatusWithoutAuditNamesThePrivilege(t *testing.T) {
	w := newWorld(t, 9)
	id, secret := pveapitest.PrivsepToken(t, w.sim, "pve01", []string{"Datastore.Allocate"})
	w.conn["api_token_id"], w.conn["api_token_secret"] = id, secret
	args := zfsArgs()
	args["node_status"] = true
	res := w.run(args, false)
	if failed(res) || res["changed"] != true {
		t.Fatalf("create with node_status: changed %v, %v", res["changed"], res["msg"])
	}
	sts, _ := res["node_status"].(map[string]any)
	if len(sts) == 0 {
		t.Fatalf("node_status: %v, want an entry per node", res["node_status"])
	}
	for node, v := range sts {
		st, _ := v.(map[string]any)
		if msg := pveapi.String(st["error"]); !strings.Contains(msg, "Datastore.Audit") {
			t.Errorf("node_status[%s] = %v, want PVE's refusal naming Datastore.Audit", node, v)
		}
	}
}
