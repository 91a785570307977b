package pvestorage

import (
	"context"
	"io"
	"maps"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// world is one in-process simulator and the connection options to reach it.
type world struct {
	t    *testing.T
	sim  *pvesim.Sim
	conn map[string]any
}

func newWorld(t *testing.T, version int) *world {
	s := pveapitest.Start(t, version, 3)
	pveapitest.Cluster(t, s)
	c := pveapitest.TokenConn(t, s, "pve01")
	return &world{t: t, sim: s, conn: map[string]any{
		"api_host": c.Host, "api_port": c.Port, "api_token_id": c.TokenID, "api_token_secret": c.TokenSecret,
		"api_fingerprint": c.Fingerprint,
	}}
}

// run invokes pve_storage like Ansible would, with diff mode on.
func (w *world) run(args map[string]any, check bool) map[string]any {
	w.t.Helper()
	full := map[string]any{}
	for k, v := range w.conn {
		full[k] = v
	}
	for k, v := range args {
		full[k] = v
	}
	m := New(pveapi.Options{Retry: &pveapitest.FastRetry})
	env := func(string) (string, bool) { return "", false }
	return ansible.Execute(context.Background(), &m, &ansible.Invocation{Params: full, CheckMode: check, Diff: true}, env, io.Discard)
}

func (w *world) gets(path string) int {
	n := 0
	for _, r := range w.sim.Requests() {
		if r.Method == "GET" && (path == "" || r.Path == path) {
			n++
		}
	}
	return n
}

func failed(res map[string]any) bool { return res["failed"] == true }

func zfsArgs() map[string]any {
	return map[string]any{"storage": "nvme-vm", "type": "zfspool", "pool": "nvme-vm",
		"content": []any{"rootdir", "images"}, "sparse": true, "nodes": []any{"pve01", "pve02", "pve03"}}
}

// S1/S2: created once for the cluster; check mode writes nothing and
// predicts the real run; a no-op run costs two GETs and no write.
func TestCreateCheckNoop(t *testing.T) {
	for _, v := range []int{8, 9} {
		w := newWorld(t, v)
		check := w.run(zfsArgs(), true)
		if failed(check) || check["changed"] != true {
			t.Fatalf("PVE %d check: %v", v, check["msg"])
		}
		if m := pveapitest.Mutating(w.sim); len(m) != 0 {
			t.Fatalf("PVE %d check mode wrote: %+v", v, m)
		}
		real := w.run(zfsArgs(), false)
		if failed(real) || real["changed"] != true {
			t.Fatalf("PVE %d create: %v", v, real["msg"])
		}
		if pveapi.String(real["changes"]) != pveapi.String(check["changes"]) {
			t.Errorf("PVE %d: real %v != predicted %v", v, real["changes"], check["changes"])
		}
		st := real["storage"].(map[string]any)
		if st["content"] != "images,rootdir" || pveapi.String(st["sparse"]) != "1" || st["nodes"] != "pve01,pve02,pve03" || st["pool"] != "nvme-vm" {
			t.Errorf("PVE %d final config %v", v, st)
		}
		diff := pveapi.String(real["diff"])
		if !strings.Contains(pveapi.String(real["diff"].([]any)[0].(map[string]any)["after"]), "zfspool: nvme-vm") {
			t.Errorf("PVE %d create diff: %s", v, diff)
		}
		// S1: every member sees it, through its own API.
		for _, n := range []string{"pve02", "pve03"} {
			conn := pveapitest.TokenConn(t, w.sim, n)
			c, _ := pveapi.Connect(context.Background(), conn, pveapi.Options{})
			var cfg map[string]any
			if err := c.Get(context.Background(), "/storage/nvme-vm", nil, &cfg); err != nil {
				t.Errorf("PVE %d: %s does not see the storage: %v", v, n, err)
			}
		}

		w.sim.ResetRequests()
		again := w.run(zfsArgs(), false)
		if failed(again) || again["changed"] != false {
			t.Fatalf("PVE %d no-op: %v %v", v, again["msg"], again["changes"])
		}
		if n, all := w.gets(""), len(w.sim.Requests()); n > 2 || all != n {
			t.Errorf("PVE %d no-op run made %d requests (%d GETs), want at most two GETs: %+v", v, all, n, w.sim.Requests())
		}
		w.sim.ResetRequests()
		if res := w.run(zfsArgs(), true); failed(res) || res["changed"] != false || len(pveapitest.Mutating(w.sim)) != 0 {
			t.Errorf("PVE %d no-op check: %v", v, res["msg"])
		}
	}
}

// Issue 15 item 7: a node that is not a member (a join that failed, a node
// still to join) is left out of the storage's nodes with a warning naming
// it; the rerun converges and changes nothing; nodes of which none is a
// member fail before any write. Check mode predicts a non-member as given,
// warning, only when created_earlier names it (in a check run of the whole
// site the joins before this task are predictions only: K15,
// ansible.NotYet); any other non-member (a typo) is predicted as the real
// run handles it: left out with the same warning, or refused.
func TestNonMemberNodesLeftOut(t *testing.T) {
	for _, v := range []int{8, 9} {
		w := newWorld(t, v)
		args := zfsArgs()
		args["nodes"] = []any{"pve01", "pve02", "pve03", "pve07"}
		assumed := maps.Clone(args)
		assumed["created_earlier"] = map[string]any{"nodes": []any{"pve07"}}
		check := w.run(assumed, true)
		if failed(check) || check["changed"] != true || !strings.Contains(pveapi.String(check["warnings"]), "nodes: cluster node pve07 does not exist yet; check mode assumes an earlier task of this run creates it (created_earlier.nodes names it) and predicts it in the storage's nodes; a real run leaves it out while it is not a member (the members now: pve01, pve02, pve03)") {
			t.Fatalf("PVE %d check: %v %v", v, check["msg"], check["warnings"])
		}
		if st := check["storage"].(map[string]any); st["nodes"] != "pve01,pve02,pve03,pve07" {
			t.Errorf("PVE %d check: predicted nodes %v, want them as given", v, st["nodes"])
		}
		// Not named in created_earlier: predicted as the real run does it.
		typo := w.run(args, true)
		if failed(typo) || typo["changed"] != true || typo["not_yet"] != nil || !strings.Contains(pveapi.String(typo["warnings"]), "nodes: pve07 left out of storage nvme-vm") {
			t.Errorf("PVE %d check without created_earlier: %v %v", v, typo["msg"], typo["warnings"])
		}
		if st := typo["storage"].(map[string]any); st["nodes"] != "pve01,pve02,pve03" {
			t.Errorf("PVE %d check without created_earlier: predicted nodes %v, want the members only", v, st["nodes"])
		}
		if m := pveapitest.Mutating(w.sim); len(m) != 0 {
			t.Fatalf("PVE %d check mode wrote: %+v", v, m)
		}
		real := w.run(args, false)
		if failed(real) || real["changed"] != true {
			t.Fatalf("PVE %d create: %v", v, real["msg"])
		}
		if st := real["storage"].(map[string]any); st["nodes"] != "pve01,pve02,pve03" {
			t.Errorf("PVE %d: nodes %v, want the members only", v, st["nodes"])
		}
		again := w.run(args, false)
		if failed(again) || again["changed"] != false || !strings.Contains(pveapi.String(again["warnings"]), "pve07 left out") {
			t.Errorf("PVE %d rerun: changed %v %v warnings %v", v, again["changed"], again["msg"], again["warnings"])
		}
		w.sim.ResetRequests()
		none := zfsArgs()
		none["storage"], none["nodes"] = "other", []any{"pve08", "pve09"}
		res := w.run(none, false)
		if !failed(res) || res["changed"] != false || !strings.Contains(pveapi.String(res["msg"]), "nodes: none of pve08, pve09 is a member") {
			t.Errorf("PVE %d no member: %v %v", v, res["changed"], res["msg"])
		}
		if c := w.run(none, true); !failed(c) || c["changed"] != false || c["msg"] != res["msg"] {
			t.Errorf("PVE %d no member, check mode: %v %v, want the real run's %v", v, c["changed"], c["msg"], res["msg"])
		}
		if m := pveapitest.Mutating(w.sim); len(m) != 0 {
			t.Errorf("PVE %d: a refused run wrote %+v", v, m)
		}
	}
}
