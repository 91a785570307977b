package pvestorage

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// storagePuts lists the PUTs of nvme-vm the lab saw, once it is idle, in
// the order they were sent (the log is in the order they ended: a PUT
// held in the lock ends after one sent later).
func (w *world) storagePuts() []pvesim.Request {
	w.sim.WaitIdle()
	var out []pvesim.Request
	for _, r := range pveapitest.Mutating(w.sim) {
		if r.Method == "PUT" && r.Path == "/storage/nvme-vm" {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b pvesim.Request) int { return a.Time.Compare(b.Time) })
	return out
}

// The rerun after an unverified update (issue 19 / S2): the first run's PUT
// is still inside PVE's storage.cfg lock when its answer is lost and the
// run ends (changed, unverified). The rerun read storage.cfg before that
// PUT wrote, so its own PUT — waiting for the lock, as PVE's cfs lock
// does for 10 s — carries a digest that is stale once the lock is free:
// PVE answers "detected modified configuration" and writes nothing. The
// module reads the storage again and sends only what still differs, once,
// with the fresh digest — nothing when the first PUT already made the
// change, only content when the rerun also asks for a different one.
func TestRerunAfterUnverifiedUpdateDigestMismatch(t *testing.T) {
	for _, tc := range []struct {
		name     string
		content  []any
		wantPuts int
	}{
		{"same options: nothing left to send", nil, 2},
		{"one more option: only it is sent", []any{"images"}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := pveapitest.StartWith(t, 9, 3, func(c *pvesim.Config) { c.LockTimeout = 10 * time.Second })
			pveapitest.Cluster(t, s)
			c := pveapitest.TokenConn(t, s, "pve01")
			w := &world{t: t, sim: s, conn: map[string]any{"api_host": c.Host, "api_port": c.Port, "api_token_id": c.TokenID,
				"api_token_secret": c.TokenSecret, "api_fingerprint": c.Fingerprint}}
			if res := w.run(zfsArgs(), false); failed(res) {
				t.Fatal(res["msg"])
			}
			w.sim.Faults().Add(pvesim.Fault{Method: "PUT", Path: "/storage/nvme-vm", Kind: pvesim.FaultSlowLocked, Delay: 4 * time.Second, Count: 1})
			w.sim.ResetRequests()
			first := zfsArgs()
			first["disable"], first["timeout"], first["api_timeout"] = true, 2, 1
			res := w.run(first, false)
			if !failed(res) || res["changed"] != true || !strings.Contains(pveapi.String(res["changes_unverified"]), "update storage nvme-vm") {
				t.Fatalf("first run: failed %v changed %v unverified %v: %v", res["failed"], res["changed"], res["changes_unverified"], res["msg"])
			}
			if cfg := w.config("nvme-vm"); cfg["disable"] != nil {
				t.Fatalf("the slow PUT wrote before the rerun read: %v", cfg)
			}
			rerun := zfsArgs()
			rerun["disable"] = true
			if tc.content != nil {
				rerun["content"] = tc.content
			}
			res = w.run(rerun, false)
			warns := pveapi.String(res["warnings"])
			if failed(res) || res["changed"] != true || !strings.Contains(warns, "detected modified configuration") {
				t.Fatalf("rerun: failed %v changed %v: %v %v", res["failed"], res["changed"], res["msg"], warns)
			}
			puts := w.storagePuts()
			if len(puts) != tc.wantPuts {
				t.Fatalf("PUTs the lab saw: %d, want %d: %+v", len(puts), tc.wantPuts, puts)
			}
			if puts[1].Status != 500 || puts[1].Params["digest"] != puts[0].Params["digest"] {
				t.Errorf("the rerun's first PUT: status %d digest %q, want PVE's digest refusal (500) of the digest the first run read too (%q): %+v",
					puts[1].Status, puts[1].Params["digest"], puts[0].Params["digest"], puts)
			}
			if tc.wantPuts == 3 {
				last := puts[2].Params
				if last["content"] != "images" || last["disable"] != "" || last["digest"] == "" || last["digest"] == puts[1].Params["digest"] {
					t.Errorf("the PUT after the refusal sends only what still differs, with the fresh digest: %v (refused one: %v)", last, puts[1].Params)
				}
			}
			cfg := w.config("nvme-vm")
			if pveapi.String(cfg["disable"]) != "1" {
				t.Errorf("the lab's storage: %v", cfg)
			}
			w.sim.ResetRequests()
			if again := w.run(rerun, false); failed(again) || again["changed"] != false || len(w.storagePuts()) != 0 {
				t.Errorf("third run: %v %v", again["msg"], again["changes"])
			}
		})
	}
}

// A storage edit that lands between pve_storage's read and its PUT (issue
// 23 §5, S1): the PUT carries the digest read, PVE refuses it without
// writing, and the module reads storage.cfg again and sends only what
// still differs, once, with the fresh digest, so the other write is kept
// (here its mountpoint, which the task does not manage). When the other
// write already made the task's change, nothing is sent again. PVE 8 and
// 9, the edit made by another client (pve02) exactly then (Fault.Before).
func TestConcurrentStorageEditKept(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", v), func(t *testing.T) {
			w := newWorld(t, v)
			if res := w.run(zfsArgs(), false); failed(res) {
				t.Fatal(res["msg"])
			}
			edit := func(params url.Values) func() error {
				var mu sync.Mutex
				var errs []error
				if _, err := w.sim.Faults().Add(pvesim.Fault{Node: "pve01", Method: "PUT", Path: "/storage/nvme-vm", Kind: pvesim.FaultLatency, Count: 1,
					Before: func() {
						if err := pveapitest.Send(context.Background(), w.client(), "PUT", "/storage/nvme-vm", params, nil); err != nil {
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
						}
					}}); err != nil {
					t.Fatal(err)
				}
				return func() error { mu.Lock(); defer mu.Unlock(); return errors.Join(errs...) }
			}
			statuses := func() []int {
				var out []int
				for _, r := range w.storagePuts() {
					out = append(out, r.Status)
				}
				return out
			}
			// Another writer sets the mountpoint; this task disables it.
			done := edit(url.Values{"mountpoint": {"/srv/nvme-vm"}})
			w.sim.ResetRequests()
			args := with(zfsArgs(), "disable", true)
			res := w.run(args, false)
			if err := done(); err != nil {
				t.Fatal(err)
			}
			if failed(res) || res["changed"] != true || !strings.Contains(pveapi.String(res["warnings"]), "only disable still differ") {
				t.Fatalf("failed %v changed %v: %v %v", res["failed"], res["changed"], res["msg"], res["warnings"])
			}
			if got := statuses(); !slices.Equal(got, []int{500, 200, 200}) {
				t.Errorf("PUTs by start: %v, want the module's refused one, the other writer's (sent while it waited), the module's second", got)
			}
			if cfg := w.config("nvme-vm"); pveapi.String(cfg["disable"]) != "1" || pveapi.String(cfg["mountpoint"]) != "/srv/nvme-vm" {
				t.Errorf("storage after the run: %v", cfg)
			}
			// Another writer makes exactly this task's change meanwhile.
			done = edit(url.Values{"delete": {"disable"}})
			w.sim.ResetRequests()
			res = w.run(with(zfsArgs(), "disable", false), false)
			if err := done(); err != nil {
				t.Fatal(err)
			}
			if failed(res) || !strings.Contains(pveapi.String(res["warnings"]), "nothing was sent again") {
				t.Fatalf("failed %v: %v %v", res["failed"], res["msg"], res["warnings"])
			}
			if got := statuses(); !slices.Equal(got, []int{500, 200}) {
				t.Errorf("PUTs by start: %v, want the module's refused one and the other writer's only", got)
			}
		})
	}
}
