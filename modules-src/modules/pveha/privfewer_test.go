package pveha

import (
	"regexp"
	"testing"

	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// haPrivs are the privileges the module's notes list for replication and
// an HA resource with a placement (PVE 9: a rule; PVE 8: a group), on one
// VM: VM.Audit (the guest, its jobs), Datastore.Audit (its storage on the
// targets), Sys.Audit and Sys.Console (reading and writing HA), and the
// replication writes' privilege: VM.Replicate on PVE 9, Datastore.Allocate
// on /storage on PVE 8.
func haPrivs(v int) []string {
	p := []string{"Datastore.Audit", "Sys.Audit", "Sys.Console", "VM.Audit"}
	if v == 9 {
		return append(p, "VM.Replicate")
	}
	return append(p, "Datastore.Allocate")
}

// A privilege-separated token with exactly haPrivs on / makes the VM
// highly available (replication, first sync, placement, resource started);
// with any one fewer the run fails naming the privilege PVE refused, or
// that the module found missing, and where. PVE 8 and 9.
func TestDocumentedPrivilegesOneFewer(t *testing.T) {
	t.Parallel()
	pveapitest.OneFewer(t, haPrivs, func(t *testing.T, v int, drop string, kept []string) {
		w := newWorld(t, v)
		w.seedGuests()
		id, secret := pveapitest.PrivsepToken(t, w.sim, "pve01", kept)
		w.conn["api_token_id"], w.conn["api_token_secret"] = id, secret
		w.sim.ResetRequests()
		res := w.run(dokployArgs(), false)
		m, _ := res["msg"].(string)
		if drop == "" {
			if failed(res) || res["changed"] != true {
				t.Fatalf("with every documented privilege: %s", m)
			}
			return
		}
		named := regexp.MustCompile(`/[\w./-]*, ([\w.]+\|)*` + regexp.QuoteMeta(drop) + `\b|\b` + regexp.QuoteMeta(drop) + ` on /`)
		if !failed(res) || !named.MatchString(m) {
			t.Errorf("without %s: failed %v, the message does not name what PVE refused: %s", drop, failed(res), m)
		}
		// A refusal after an accepted write (the clone made, its
		// config refused) leaves something changed: changed says
		// what the lab accepted, as in every failed run.
		if accepted := pveapitest.Accepted(w.sim); res["changed"] != (len(accepted) > 0) {
			t.Errorf("without %s: changed %v, the lab accepted %v", drop, res["changed"], accepted)
		}
		t.Logf("without %s: %s", drop, m)
	})
}
