package pveclone

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
)

// K6: the pool must exist before the clone (PVE only takes it at
// creation). Missing and not asked for: refused before any write. Asked
// for (pool_create): created first, its own change, then the clone joins
// it; check mode predicts both and writes nothing; a lost answer to the
// pool's creation is settled by a read, never re-sent; the rerun changes
// nothing. PVE 8 and 9; every changed against the lab's mutating requests.
func TestPoolCreatedOnRequestK6(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", v), func(t *testing.T) {
			w := newWorld(t, v)
			args := with(webArgs(), "pool", "tenant-b")
			w.sim.ResetRequests()
			for _, c := range []struct {
				args map[string]any
				want string
			}{
				{args, "pool: pool 'tenant-b' does not exist; PVE only takes a pool when the VM is created (K6)"},
				{with(args, "pool", "tenant b", "pool_create", true), "pool: pool name 'tenant b' contains invalid characters"},
				{with(args, "pool", "9tenant", "pool_create", true), "pool: pool name must start with a letter"},
				{with(args, "pool", "org/tenant-b", "pool_create", true), "pool: parent 'org' of pool 'org/tenant-b' does not exist"},
			} {
				res := w.run(c.args, false)
				if !failed(res) || res["changed"] != false || !strings.Contains(msg(res), c.want) {
					t.Errorf("got changed=%v %q, want a failure with %q", res["changed"], msg(res), c.want)
				}
			}
			if m := writes(w.sim); len(m) != 0 {
				t.Fatalf("refusals wrote %+v", m)
			}

			args = with(args, "pool_create", true)
			check := w.run(args, true)
			changes := fmt.Sprint(check["changes"])
			if failed(check) || check["changed"] != true || len(writes(w.sim)) != 0 || !strings.Contains(changes, "create pool tenant-b") || !strings.Contains(changes, "clone of template") {
				t.Fatalf("check: %v %v writes %v", msg(check), changes, writes(w.sim))
			}
			if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: "/pools", Kind: pvesim.FaultLostAnswer, Count: 1}); err != nil {
				t.Fatal(err)
			}
			res := w.run(args, false)
			var order []string
			for _, r := range writes(w.sim) {
				if r.Path == "/pools" || strings.HasSuffix(r.Path, "/clone") {
					order = append(order, r.Method+" "+r.Path)
				}
			}
			if failed(res) || res["changed"] != true || strings.Join(order, ", ") != "POST /pools, POST /nodes/pve01/qemu/9000/clone" {
				t.Fatalf("pool_create: %v; writes %v", msg(res), order)
			}
			var pools []map[string]any
			if err := w.client().Get(context.Background(), "/pools", url.Values{"poolid": {"tenant-b"}}, &pools); err != nil || len(pools) != 1 {
				t.Fatalf("pool after the run: %v %v", pools, err)
			}
			if m, _ := pools[0]["members"].([]any); len(m) != 1 || m[0].(map[string]any)["id"] != "qemu/201" {
				t.Errorf("the clone did not join the created pool: %v", pools[0]["members"])
			}
			w.sim.ResetRequests()
			if again := w.run(args, false); failed(again) || again["changed"] != false || len(writes(w.sim)) != 0 {
				t.Errorf("rerun: %v %v", msg(again), writes(w.sim))
			}
		})
	}
}
