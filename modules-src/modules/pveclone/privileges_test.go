package pveclone

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// privRe finds PVE privilege names in a permissions object (its check
// arrays and its description).
var privRe = regexp.MustCompile(`\b(?:VM|Datastore|SDN|Sys|Pool|Mapping)\.[A-Za-z.]*[A-Za-z]\b`)

// notNeeded are privileges a called endpoint's permissions name that no
// call of this module needs, each with why.
var notNeeded = map[string]string{
	"VM.Backup":                  "POST /nodes/{node}/qemu: only for a restore (archive), which the module never does",
	"VM.GuestAgent.Unrestricted": "agent/network-get-interfaces on PVE 9 takes VM.GuestAgent.Audit or it (any)",
}

// The docs name every privilege the module's calls need: the module is run
// through all of its paths (clone with pool_create, configuration, grow,
// start, agent wait, stop, bare create with an ISO, a lost answer settled
// from the task list, absent with purge of an HA VM) against the lab, every
// request the lab saw is looked up in the official schema of that PVE
// version, and each privilege its permissions name must be in the module's
// notes (or in notNeeded, with a reason). PVE 8 and 9.
func TestDocsListPrivileges(t *testing.T) {
	t.Parallel()
	notes := strings.Join(Module().Notes, " ")
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", v), func(t *testing.T) {
			w := newWorld(t, v, isoOnShared)
			w.sim.ResetRequests()
			steps := []map[string]any{
				with(webArgs(), "pool", "tenant-p", "pool_create", true, "state", "started", "agent_wait", 1),
				with(webArgs(), "state", "stopped"),
				seed002Bare(),
			}
			for _, a := range steps {
				w.run(a, false)
			}
			if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: "/nodes/*/qemu/*/clone", Kind: pvesim.FaultLostAnswer, Count: 1}); err != nil {
				t.Fatal(err)
			}
			w.run(with(webArgs(), "vmid", 202, "name", "web-2"), false)
			setupFrom := len(w.sim.Requests()) // the test's own write, not the module's
			pveapitest.Write(t, w.client(), "POST", "/cluster/ha/resources", url.Values{"sid": {"vm:202"}, "state": {"stopped"}})
			setupTo := len(w.sim.Requests())
			w.run(map[string]any{"vmid": 202, "name": "web-2", "state": "absent", "purge": true}, false)
			if g, ok := clusterguests.Find(w.guests(), 202); ok {
				t.Fatalf("the purge step did not run: %+v", g)
			}

			schema, err := pveschema.Load(v)
			if err != nil {
				t.Fatal(err)
			}
			need := map[string][]string{} // privilege → endpoints
			seen := map[string]bool{}
			for i, r := range w.sim.Requests() {
				if r.Path == "/access/ticket" || i >= setupFrom && i < setupTo {
					continue
				}
				m, _, err := schema.Lookup(r.Method, r.Path)
				if err != nil {
					t.Errorf("%s %s: %v", r.Method, r.Path, err)
					continue
				}
				ep := r.Method + " " + m.Path
				if seen[ep] {
					continue
				}
				seen[ep] = true
				for _, p := range privRe.FindAllString(string(m.Permissions), -1) {
					need[p] = append(need[p], ep)
				}
			}
			if len(seen) < 15 {
				t.Fatalf("only %d endpoints exercised: %v", len(seen), seen)
			}
			for _, p := range slices.Sorted(maps.Keys(need)) {
				if _, ok := notNeeded[p]; ok {
					continue
				}
				if !regexp.MustCompile(`\b`+regexp.QuoteMeta(p)+`\b`).MatchString(notes) && !(strings.HasPrefix(p, "VM.Config.") && strings.Contains(notes, strings.TrimPrefix(p, "VM.Config."))) {
					t.Errorf("the docs do not name %s, needed by %v", p, need[p])
				}
			}
			t.Logf("PVE %d: %d endpoints, privileges %v", v, len(seen), slices.Sorted(maps.Keys(need)))
		})
	}
}
