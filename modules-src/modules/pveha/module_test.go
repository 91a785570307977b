package pveha

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// world is one in-process simulator of a three-node cluster with the seed's
// ZFS pool storage "tank" on every node, and the connection options.
type world struct {
	t    *testing.T
	sim  *pvesim.Sim
	api  *pveapi.Client
	conn map[string]any
}

// newWorld starts PVE version with the HA stack and pvesr on short lab
// delays (a CRM round, a replication minute), so the chain's waits are
// real polls of real background work, only faster.
func newWorld(t *testing.T, version int) *world { return newWorldWith(t, version, nil) }

// newWorldWith is newWorld with more lab settings (tune runs last).
func newWorldWith(t *testing.T, version int, tune func(*pvesim.Config)) *world {
	t.Helper()
	s := pveapitest.StartWith(t, version, 3, func(c *pvesim.Config) {
		c.ReplicationInterval = 300 * time.Millisecond
		c.HADelay = 200 * time.Millisecond
		c.FenceDelay = time.Second
		c.FailbackDelay = 2 * time.Second
		if tune != nil {
			tune(c)
		}
	})
	pveapitest.Cluster(t, s)
	conn := pveapitest.TokenConn(t, s, "pve01")
	api, err := pveapi.Connect(context.Background(), conn, pveapi.Options{Retry: &pveapitest.FastRetry, TaskPoll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, sim: s, api: api, conn: map[string]any{
		"api_host": conn.Host, "api_port": conn.Port, "api_token_id": conn.TokenID, "api_token_secret": conn.TokenSecret,
		"api_fingerprint": conn.Fingerprint,
	}}
	pveapitest.Write(t, api, "POST", "/storage", url.Values{"storage": {"tank"}, "type": {"zfspool"}, "pool": {"tank"},
		"content": {"images,rootdir"}})
	return w
}

// seedGuests makes the seed's two guests, both stopped: the runner
// container ct:200 on pve01 and Dokploy's VM vm:201 on pve02, disks on tank.
func (w *world) seedGuests() {
	w.t.Helper()
	var upid string
	ctx := context.Background()
	o, err := w.api.Dispatch(ctx, pveapi.Write{Method: "POST", Path: "/nodes/pve01/lxc", What: "test: the runner container",
		Params: url.Values{"vmid": {"200"}, "hostname": {"runner"},
			"ostemplate": {"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"}, "rootfs": {"tank:4"}},
		Settle: func(context.Context) (bool, error) { return false, nil }, SettleWithin: time.Millisecond})
	if err != nil {
		w.t.Fatal(err)
	}
	if err := o.Decode(&upid); err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.api.WaitTask(ctx, upid); err != nil {
		w.t.Fatal(err)
	}
	if err := w.sim.AddGuest("pve02", pvesim.GuestSpec{VMID: 201, Config: map[string]string{
		"name": "dokploy", "scsi0": "tank:4", "net0": "virtio,bridge=vmbr0"}}); err != nil {
		w.t.Fatal(err)
	}
}

// run invokes pve_ha like Ansible would, with diff mode on.
func (w *world) run(args map[string]any, check bool) map[string]any {
	w.t.Helper()
	full := map[string]any{}
	for k, v := range w.conn {
		full[k] = v
	}
	for k, v := range args {
		full[k] = v
	}
	m := New(pveapi.Options{Retry: &pveapitest.FastRetry, TaskPoll: 20 * time.Millisecond})
	env := func(string) (string, bool) { return "", false }
	return ansible.Execute(context.Background(), &m, &ansible.Invocation{Params: full, CheckMode: check, Diff: true}, env, io.Discard)
}

// writes lists the mutating requests the lab saw, "METHOD path", once it
// is idle.
func (w *world) writes() []string {
	w.sim.WaitIdle()
	var out []string
	for _, r := range pveapitest.Mutating(w.sim) {
		if r.Method == "POST" && r.Path == "/access/ticket" {
			continue
		}
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}

func (w *world) ctx() context.Context { return context.Background() }

func failed(res map[string]any) bool { return res["failed"] == true }

func runnerArgs() map[string]any {
	return map[string]any{"vmid": 200, "type": "ct", "state": "started", "max_restart": 1, "max_relocate": 1,
		"comment": "Managed by Ansible", "node_affinity": map[string]any{"pve01": 100}, "wait_first_sync": true, "wait_timeout": 30}
}

func dokployArgs() map[string]any {
	return map[string]any{"vmid": 201, "state": "started", "node_affinity": map[string]any{"pve02": 100}, "wait_first_sync": true,
		"wait_timeout": 30}
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// TestSeedChainFromNothing is seed 003's chain built from nothing, on PVE 8
// (an HA group) and PVE 9 (a node-affinity rule), H1/H2/H4: check mode first
// (the whole plan, zero writes by the request log), then the real run (the
// same changes, jobs before the resource, the resource before the rule, the
// guest started by HA and polled), then a second run with changed=0 and no
// write at all.
func TestSeedChainFromNothing(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE %d", v), func(t *testing.T) {
			w := newWorld(t, v)
			w.seedGuests()
			for _, args := range []map[string]any{runnerArgs(), dokployArgs()} {
				w.sim.ResetRequests()
				check := w.run(args, true)
				if failed(check) || check["changed"] != true {
					t.Fatalf("check: %v", check["msg"])
				}
				if m := w.writes(); len(m) != 0 {
					t.Fatalf("check mode wrote: %v", m)
				}
				if d, _ := check["diff"].([]any); len(d) != len(check["changes"].([]any)) {
					t.Errorf("check mode: a diff for every change: %d diffs, changes %v", len(d), check["changes"])
				}

				w.sim.ResetRequests()
				real := w.run(args, false)
				if failed(real) || real["changed"] != true {
					t.Fatalf("real run: %v", real["msg"])
				}
				if pveapi.String(real["changes"]) != pveapi.String(check["changes"]) {
					t.Errorf("real changes %v, predicted %v", real["changes"], check["changes"])
				}
				writes := w.writes()
				wantWrites := []string{"POST /cluster/replication", "POST /cluster/replication", "POST /cluster/ha/resources"}
				mech := "rules"
				if v == 8 {
					// The group exists before the resource names it.
					wantWrites = []string{"POST /cluster/replication", "POST /cluster/replication", "POST /cluster/ha/groups", "POST /cluster/ha/resources"}
					mech = "groups"
				} else {
					wantWrites = append(wantWrites, "POST /cluster/ha/rules")
				}
				if !slices.Equal(writes, wantWrites) {
					t.Errorf("writes, in order: %v, want %v", writes, wantWrites)
				}
				if real["mechanism"] != mech || real["pve_version"] != v {
					t.Errorf("mechanism %v version %v", real["mechanism"], real["pve_version"])
				}
				jobs, _ := real["jobs"].([]any)
				if len(jobs) != 2 {
					t.Fatalf("jobs %v", real["jobs"])
				}
				for _, j := range jobs {
					j := j.(map[string]any)
					if pveapi.String(j["last_sync"]) == "0" || j["schedule"] != "*/15" || pveapi.String(j["fail_count"]) != "0" {
						t.Errorf("H1: wait_first_sync returned before the job synced: %v", j)
					}
				}
				res := real["resource"].(map[string]any)
				live, _ := res["live"].(map[string]any)
				if res["state"] != "started" || live["status"] != "running" {
					t.Errorf("H4: the HA manager was to start the guest: %v", res)
				}

				w.sim.ResetRequests()
				start := time.Now()
				again := w.run(args, false)
				t.Logf("vmid %v: a no-op run took %s and %d requests", args["vmid"], time.Since(start).Round(time.Millisecond), len(w.sim.Requests()))
				groupsReads := 0
				for _, r := range w.sim.Requests() {
					if r.Method == "GET" && r.Path == "/cluster/ha/groups" {
						groupsReads++
					}
				}
				// H2: PVE 9's "migrated to rules" answer is the mechanism,
				// read once per run, never retried as a temporary 500.
				if v == 9 && groupsReads > 1 {
					t.Errorf("GET /cluster/ha/groups read %d times in a no-op run", groupsReads)
				}
				if failed(again) || again["changed"] != false {
					t.Fatalf("second run: %v %v", again["msg"], again["changes"])
				}
				if m := w.writes(); len(m) != 0 {
					t.Errorf("second run wrote: %v", m)
				}
				if res := w.run(args, true); failed(res) || res["changed"] != false {
					t.Errorf("check after: %v %v", res["msg"], res["changes"])
				}
			}
		})
	}
}

// H6 and the one-rule-per-guest rule: refusals that the inputs and a read
// decide come before the first write, name the option, and leave nothing.
func TestRefusalsBeforeAnyWrite(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE %d", v), func(t *testing.T) {
			w := newWorld(t, v)
			w.seedGuests()
			// A VM on lvmthin: no replicate feature (H6).
			if err := w.sim.AddGuest("pve01", pvesim.GuestSpec{VMID: 300, Config: map[string]string{"scsi0": "local-lvm:4"}}); err != nil {
				t.Fatal(err)
			}
			// tank restricted to pve01, pve02: pve03 lacks the pool (H6).
			pveapitest.Write(t, w.api, "PUT", "/storage/tank", url.Values{"nodes": {"pve01,pve02"}})
			cases := []struct {
				name string
				args map[string]any
				want []string
			}{
				{"non-replicatable storage", map[string]any{"vmid": 300, "targets": []any{"pve02"}},
					[]string{"targets:", "disk scsi0", "local-lvm", "lvmthin"}},
				{"target without the pool", map[string]any{"vmid": 200},
					[]string{"targets:", "disk rootfs", "not available on node pve03"}},
				{"unknown target", map[string]any{"vmid": 200, "targets": []any{"pve09"}}, []string{"targets:", "pve09"}},
				{"unknown guest", map[string]any{"vmid": 999}, []string{"vmid:", "no guest 999"}},
				{"wrong type", map[string]any{"vmid": 201, "type": "ct"}, []string{"type:", "vm"}},
				{"node_affinity off the cluster", map[string]any{"vmid": 201, "targets": []any{"pve01"}, "node_affinity": map[string]any{"pve07": 1}},
					[]string{"node_affinity:", "pve07"}},
				{"schedule PVE refuses", map[string]any{"vmid": 201, "targets": []any{"pve01"}, "schedule": "every 15 minutes"},
					[]string{"schedule", "invalid calendar event 'every 15 minutes'"}},
			}
			for _, c := range cases {
				w.sim.ResetRequests()
				res := w.run(c.args, false)
				msg := pveapi.String(res["msg"])
				if !failed(res) || res["changed"] != false {
					t.Errorf("%s: %v %v", c.name, res["changed"], msg)
				}
				for _, s := range c.want {
					if !strings.Contains(msg, s) {
						t.Errorf("%s: message does not say %q: %s", c.name, s, msg)
					}
				}
				if m := w.writes(); len(m) != 0 {
					t.Errorf("%s: wrote %v", c.name, m)
				}
			}
			if v == 9 {
				// Two node-affinity rules for one guest: PVE allows one.
				args := map[string]any{"vmid": 201, "targets": []any{"pve01"}, "state": "stopped"}
				if res := w.run(args, false); failed(res) {
					t.Fatal(res["msg"])
				}
				pveapitest.Write(t, w.api, "POST", "/cluster/ha/rules", url.Values{"rule": {"other"}, "type": {"node-affinity"},
					"resources": {"vm:201"}, "nodes": {"pve01"}})
				w.sim.ResetRequests()
				args["node_affinity"] = map[string]any{"pve02": 10}
				res := w.run(args, false)
				msg := pveapi.String(res["msg"])
				if !failed(res) || res["changed"] != false || !strings.Contains(msg, "node_affinity:") || !strings.Contains(msg, "rule other") {
					t.Errorf("second node-affinity rule: %v %s", res["changed"], msg)
				}
				if m := w.writes(); len(m) != 0 {
					t.Errorf("second node-affinity rule: wrote %v", m)
				}
				// A resource-affinity rule naming a guest that is no HA resource.
				args = map[string]any{"vmid": 201, "targets": []any{"pve01"}, "state": "stopped",
					"resource_affinity": []any{map[string]any{"resources": []any{"200"}, "affinity": "negative"}}}
				res = w.run(args, false)
				msg = pveapi.String(res["msg"])
				if !failed(res) || res["changed"] != false || !strings.Contains(msg, "resource_affinity[0].resources: ct:200 is not an HA resource") {
					t.Errorf("unmanaged guest in a rule: %v %s", res["changed"], msg)
				}
			}
		})
	}
}

func pveapitestWrite(w *world, method, path string, params url.Values) {
	w.t.Helper()
	pveapitest.Write(w.t, w.api, method, path, params)
}

// A check run of the whole site meets a guest an earlier task (pve_clone)
// would create, which created_earlier names (K15, through ansible.NotYet): check mode predicts the chain as a whole with a warning and
// writes nothing; a real run without the guest still fails naming vmid,
// unchanged.
func TestCheckModeGuestNotYetCreated(t *testing.T) {
	for _, v := range []int{8, 9} {
		w := newWorld(t, v)
		w.sim.ResetRequests()
		check := w.run(map[string]any{"vmid": 777, "node_affinity": map[string]any{"pve02": 100},
			"created_earlier": map[string]any{"guests": []any{"web-9", 777}}}, true)
		if failed(check) || check["changed"] != true ||
			!strings.Contains(pveapi.String(check["warnings"]), "vmid: guest 777 does not exist yet; check mode assumes an earlier task of this run creates it (created_earlier.guests names it)") ||
			!strings.Contains(pveapi.String(check["changes"]), "make it highly available once it exists") {
			t.Errorf("PVE %d check: failed %v changed %v %v warnings %v", v, check["failed"], check["changed"], check["msg"], check["warnings"])
		}
		if m := w.writes(); len(m) != 0 {
			t.Errorf("PVE %d: check mode wrote %v", v, m)
		}
		if check["not_yet"] == nil {
			t.Errorf("PVE %d check: not_yet missing", v)
		}
		real := w.run(map[string]any{"vmid": 777}, false)
		if !failed(real) || real["changed"] != false || !strings.Contains(pveapi.String(real["msg"]), "vmid: no guest 777") {
			t.Errorf("PVE %d real: failed %v changed %v %v", v, real["failed"], real["changed"], real["msg"])
		}
		// K15 (typos): a guest created_earlier does not name (vmid 778 for
		// 777) fails the check run with the real run's message.
		typo := w.run(map[string]any{"vmid": 778, "created_earlier": map[string]any{"guests": []any{777}}}, true)
		if want := strings.ReplaceAll(pveapi.String(real["msg"]), "777", "778"); !failed(typo) || typo["changed"] != false ||
			typo["msg"] != want || typo["not_yet"] != nil {
			t.Errorf("PVE %d check, guest not named: failed %v changed %v %q, want %q", v, typo["failed"], typo["changed"], typo["msg"], want)
		}
		if m := w.writes(); len(m) != 0 {
			t.Errorf("PVE %d: the refused run wrote %v", v, m)
		}
	}
}

// K15 (a node joining in this run, issue 23 §6): in check mode a node that
// created_earlier.nodes names and that is not a member yet counts as a
// member to be — in the default targets (every other member, as the real
// run's /nodes lists it once it joined) and where targets or node_affinity
// name it — warned and listed in not_yet; one it does not name fails the
// check run with the real run's message; a real run refuses it unchanged.
func TestCheckModeJoinerCountsAsMember(t *testing.T) {
	for _, v := range []int{8, 9} {
		w := newWorld(t, v)
		w.seedGuests()
		w.sim.ResetRequests()
		joiner := map[string]any{"nodes": []any{"pve01", "pve04"}}
		check := w.run(map[string]any{"vmid": 201, "created_earlier": joiner}, true)
		changes := pveapi.String(check["changes"])
		if failed(check) || check["changed"] != true ||
			!strings.Contains(pveapi.String(check["warnings"]), "targets: cluster node pve04 does not exist yet; check mode assumes an earlier task of this run creates it (created_earlier.nodes names it)") ||
			!strings.Contains(changes, "to pve01") || !strings.Contains(changes, "to pve03") || !strings.Contains(changes, "of guest 201 to pve04") ||
			!strings.Contains(pveapi.String(check["not_yet"]), "cluster node pve04") {
			t.Errorf("PVE %d check, default targets: failed %v changed %v %v warnings %v not_yet %v changes %s",
				v, check["failed"], check["changed"], check["msg"], check["warnings"], check["not_yet"], changes)
		}
		if strings.Contains(pveapi.String(check["not_yet"]), "pve01") {
			t.Errorf("PVE %d: a member is not assumed: not_yet %v", v, check["not_yet"])
		}
		named := w.run(map[string]any{"vmid": 201, "targets": []any{"pve04"}, "node_affinity": map[string]any{"pve02": 2, "pve04": 1},
			"created_earlier": joiner}, true)
		if failed(named) || named["changed"] != true || !strings.Contains(pveapi.String(named["changes"]), "of guest 201 to pve04") ||
			!strings.Contains(pveapi.String(named["warnings"]), "node_affinity: cluster node pve04 does not exist yet") {
			t.Errorf("PVE %d check, targets and node_affinity naming the joiner: failed %v %v warnings %v changes %v",
				v, named["failed"], named["msg"], named["warnings"], named["changes"])
		}
		if m := w.writes(); len(m) != 0 {
			t.Errorf("PVE %d: check mode wrote %v", v, m)
		}
		for _, c := range []struct {
			args map[string]any
			msg  string
		}{
			{map[string]any{"targets": []any{"pve04"}}, "targets: pve04 is not a member of the cluster (members: pve01, pve02, pve03)"},
			{map[string]any{"targets": []any{}, "node_affinity": map[string]any{"pve04": 1}}, "node_affinity: pve04 is not a member of the cluster (members: pve01, pve02, pve03)"},
		} {
			args := map[string]any{"vmid": 201, "created_earlier": map[string]any{"nodes": []any{"pve05"}}}
			maps.Copy(args, c.args)
			typo := w.run(args, true)
			args["created_earlier"] = joiner
			real := w.run(args, false)
			for what, r := range map[string]map[string]any{"check, not named": typo, "real run": real} {
				if !failed(r) || r["changed"] != false || r["msg"] != c.msg || r["not_yet"] != nil {
					t.Errorf("PVE %d %s %v: failed %v changed %v %q not_yet %v, want %q", v, what, c.args, r["failed"], r["changed"], r["msg"], r["not_yet"], c.msg)
				}
			}
			if m := w.writes(); len(m) != 0 {
				t.Errorf("PVE %d: the refused runs wrote %v", v, m)
			}
		}
	}
}

// H8: only full clones can move under HA. A linked clone of a template on
// a local ZFS pool is refused before any write, naming the disk and its
// base (the lab refuses its migration as qemu-server does); a full clone
// of the same template is accepted.
func TestLinkedCloneRefusedH8(t *testing.T) {
	w := newWorld(t, 9)
	w.seedGuests()
	if err := w.sim.AddGuest("pve01", pvesim.GuestSpec{VMID: 9001, Template: true, Config: map[string]string{
		"name": "tpl", "scsi0": "tank:4", "net0": "virtio,bridge=vmbr0"}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		vmid int
		full string
	}{{301, "0"}, {302, "1"}} {
		o, err := w.api.Dispatch(ctx, pveapi.Write{Method: "POST", Path: "/nodes/pve01/qemu/9001/clone", What: "test: a clone",
			Params:       url.Values{"newid": {fmt.Sprint(c.vmid)}, "full": {c.full}},
			Settle:       func(context.Context) (bool, error) { return false, nil },
			SettleWithin: time.Millisecond})
		var upid string
		if err != nil || o.Decode(&upid) != nil {
			t.Fatalf("clone %d: %v", c.vmid, err)
		}
		if _, err := w.api.WaitTask(ctx, upid); err != nil {
			t.Fatal(err)
		}
	}
	w.sim.ResetRequests()
	res := w.run(map[string]any{"vmid": 301, "targets": []any{"pve02"}, "state": "stopped"}, false)
	msg := pveapi.String(res["msg"])
	if !failed(res) || res["changed"] != false || !strings.Contains(msg, "H8") || !strings.Contains(msg, "linked clone of base-9001-disk-0") || !strings.Contains(msg, "disk scsi0") {
		t.Errorf("linked clone: changed=%v %s", res["changed"], msg)
	}
	if m := w.writes(); len(m) != 0 {
		t.Errorf("linked clone: wrote %v", m)
	}
	if res := w.run(map[string]any{"vmid": 302, "targets": []any{"pve02"}, "state": "stopped"}, false); failed(res) || res["changed"] != true {
		t.Errorf("full clone: %v %v", res["changed"], res["msg"])
	}
}
