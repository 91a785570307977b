package pveclone

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
)

// K18 with lost answers (issue 23 §1): two runs with one token clone one
// template at once under vmid: auto, and the answers of both clones are
// lost. A settle read must prove the VM it finds is the run's own (its
// task ran as our token, and the new VMID carries the name this run
// sent); a run never claims another VMID after a lost answer. Whatever
// the interleaving: each run sent its clone once; no name is held by two
// VMs; a run that says it made its VM holds it at the VMID it returns,
// and a run that could not prove its clone says changed (a write was
// sent), unverified, never "nothing was changed". Reruns converge: one VM
// per name. Before the fix, the loser took the winner's qmclone task (same
// type, same id: the template's VMID) for its own, or its "already exists"
// for a refusal and cloned again.
func TestK18VMIDAutoLostAnswersSettleOwnClone(t *testing.T) {
	for _, ver := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", ver), func(t *testing.T) {
			w := newWorld(t, ver)
			if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: "/nodes/*/qemu/*/clone", Kind: pvesim.FaultLostAnswer, Count: 2}); err != nil {
				t.Fatal(err)
			}
			w.sim.ResetRequests()
			names := []string{"web-a", "web-b"}
			results := map[string]chan map[string]any{}
			for _, n := range names {
				results[n] = make(chan map[string]any, 1)
				go func() { results[n] <- w.run(with(autoArgs(n, "2600-2609"), "node", nil), false) }()
			}
			res := map[string]map[string]any{}
			for _, n := range names {
				res[n] = <-results[n]
			}
			w.sim.WaitIdle()
			if n := len(clonesSent(w.sim)); n != 2 {
				t.Errorf("%d clone calls, want one per run (a lost answer is never re-sent, nor taken for a refusal)", n)
			}
			held := w.inRange(2600, 2609)
			made := 0
			for _, n := range names {
				r := res[n]
				t.Logf("%s: failed=%v changed=%v vmid=%v %s", n, r["failed"], r["changed"], r["vmid"], msg(r))
				if r["changed"] != true {
					t.Errorf("%s sent a clone and says changed=%v: %s", n, r["changed"], msg(r))
				}
				if !failed(r) {
					made++
					if ids := held.all(n); len(ids) != 1 || ids[0] != vmidOf(r) {
						t.Errorf("%s says it made VM %d; the range holds %v", n, vmidOf(r), held)
					}
					continue
				}
				if strings.Contains(msg(r), "nothing was changed") || !strings.Contains(msg(r), "not sent again") {
					t.Errorf("%s failed untruthfully: %s", n, msg(r))
				}
				if len(held.all(n)) != 0 {
					t.Errorf("%s failed but a VM of its name exists: %v", n, held)
				}
			}
			if made == 0 {
				t.Errorf("no run proved its clone; the range holds %v", held)
			}
			for name, ids := range held.byName {
				if len(ids) > 1 {
					t.Errorf("two VMs of one name (issue 23 §1): %s at %v", name, ids)
				}
			}
			// Reruns without faults: the run that could not prove its clone
			// makes it now; then nothing changes.
			for _, n := range names {
				if r := w.run(with(autoArgs(n, "2600-2609"), "node", nil), false); failed(r) {
					t.Errorf("rerun %s: %s", n, msg(r))
				}
			}
			w.sim.ResetRequests()
			for _, n := range names {
				if r := w.run(with(autoArgs(n, "2600-2609"), "node", nil), false); failed(r) || r["changed"] != false {
					t.Errorf("converged rerun %s: changed=%v %s", n, r["changed"], msg(r))
				}
			}
			if m := writes(w.sim); len(m) != 0 {
				t.Errorf("converged reruns wrote %+v", m)
			}
			final := w.inRange(2600, 2609)
			for _, n := range names {
				if len(final.all(n)) != 1 {
					t.Errorf("after the reruns %s is held by %v, want exactly one VM", n, final.all(n))
				}
			}
		})
	}
}

type heldRange struct{ byName map[string][]int }

func (h heldRange) all(name string) []int { return h.byName[name] }

func (h heldRange) String() string { return fmt.Sprint(h.byName) }

func (w *world) inRange(lo, hi int) heldRange {
	h := heldRange{byName: map[string][]int{}}
	for _, g := range w.guests() {
		if g.VMID >= lo && g.VMID <= hi {
			h.byName[g.Name] = append(h.byName[g.Name], g.VMID)
		}
	}
	return h
}
