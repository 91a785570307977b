package core

import (
	"net/url"
	"sort"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/vzdump"
)

// Every endpoint the simulator implements answers 200 at least once here,
// for PVE 8 and 9, in standalone and clustered states; the test client
// checks each answer against the version's `returns` schema. The final
// check makes sure no handler escaped the shape check.
func TestEveryHandlerFitsReturnsSchema(t *testing.T) {
	t.Parallel()
	for _, v := range []int{8, 9} {
		archive, err := vzdump.CTArchive(ctBackupConf, "zst")
		if err != nil {
			t.Fatal(err)
		}
		s := startSimWith(t, simOpts{version: v, nodes: 2, taskDuration: 50 * time.Millisecond, restartWindow: 200 * time.Millisecond}, func(c *Config) {
			c.BackupArchive = func(string, StorageInfo, string) ([]byte, error) { return archive, nil }
		})
		root := newClient(t, s, "pve01").root()
		tok := newClient(t, s, "pve01").labToken()
		tour := func(c *apiClient, node string) {
			for _, p := range []string{"/version", "/nodes", "/nodes/" + node + "/status", "/nodes/" + node + "/tasks",
				"/nodes/" + node + "/storage", "/nodes/" + node + "/storage/local/status", "/nodes/" + node + "/storage/local/content", "/cluster/status",
				"/cluster/resources", "/cluster/config", "/cluster/config/totem", "/storage", "/storage/local",
				"/pools", "/access/permissions", "/access/ticket"} {
				c.call("GET", p, nil).must(t, "GET "+p)
			}
			c.call("GET", "/access/permissions", url.Values{"path": {"/storage/local"}}).must(t, "permissions for a path")
		}
		tour(tok, "pve01")
		accessTour(t, tok, root)

		tok.call("POST", "/storage", url.Values{"storage": {"d1"}, "type": {"dir"}, "path": {"/srv/d1"}}).must(t, "create storage")
		tok.call("PUT", "/storage/d1", url.Values{"content": {"iso"}}).must(t, "update storage")
		tok.call("DELETE", "/storage/d1", nil).must(t, "delete storage")
		tok.call("POST", "/pools", url.Values{"poolid": {"p1"}}).must(t, "create pool")
		tok.call("PUT", "/pools", url.Values{"poolid": {"p1"}, "comment": {"c"}}).must(t, "update pool")
		tok.call("GET", "/pools", url.Values{"poolid": {"p1"}}).must(t, "get pool")
		tok.call("PUT", "/pools/p1", url.Values{"comment": {"d"}}).must(t, "update pool (deprecated)")
		tok.call("GET", "/pools/p1", nil).must(t, "get pool (deprecated)")
		tok.call("DELETE", "/pools/p1", nil).must(t, "delete pool (deprecated)")
		tok.call("POST", "/pools", url.Values{"poolid": {"p2"}}).must(t, "create pool")
		tok.call("DELETE", "/pools", url.Values{"poolid": {"p2"}}).must(t, "delete pool")
		tok.call("POST", "/cluster/backup", url.Values{"id": {"b1"}, "schedule": {"01:00"}, "all": {"1"}, "exclude": {"100"}, "storage": {"local"}}).must(t, "create backup job")
		tok.call("GET", "/cluster/backup", nil).must(t, "backup jobs")
		tok.call("GET", "/cluster/backup/b1", nil).must(t, "backup job")
		tok.call("DELETE", "/cluster/backup/b1", nil).must(t, "delete backup job")
		body, ct := multipartBody(t, [][2]string{{"content", "iso"}}, "filename", "tour.iso", []byte("iso"))
		if r := tok.upload("local", body, ct); r.status != 200 {
			t.Errorf("upload: %+v", r)
		}
		lxcTour(t, tok, "pve01")
		guestTour(t, tok, "pve01") // pve01 keeps its guests into the cluster; pve02 joins without any

		upid := root.call("POST", "/cluster/config", url.Values{"clustername": {"tour"}}).must(t, "create").data.(string)
		waitTask(t, root, upid)
		root.call("GET", "/nodes/pve01/tasks/"+url.PathEscape(upid)+"/log", nil).must(t, "task log")
		eventually(t, "quorate", func() bool { return quorate(root, 1) })
		ji := root.call("GET", "/cluster/config/join", nil).must(t, "join info").obj()
		fp := ji["nodelist"].([]any)[0].(map[string]any)["pve_fp"].(string)
		joiner := newClient(t, s, "pve02").root()
		ju := joiner.call("POST", "/cluster/config/join", joinParams(s, "pve01", fp)).must(t, "join").data.(string)
		eventually(t, "2 nodes quorate", func() bool { return quorate(root, 2) })
		waitTask(t, tok, ju) // proxied by pve01 to pve02, the UPID's node
		root.call("GET", "/cluster/config/nodes", nil).must(t, "config nodes")
		tour(tok, "pve02") // clustered shapes, proxied to pve02
		replicationTour(t, root)
		haTour(t, s, root)
		contentTour(t, root)
		root.call("DELETE", "/cluster/config/nodes/pve02", nil).must(t, "delnode (C9)")

		covered := map[string]bool{}
		for _, e := range s.Requests() {
			if e.Status != 200 {
				continue
			}
			if m, _, err := s.schema.Lookup(e.Method, e.Path); err == nil {
				covered[e.Method+" "+m.Path] = true
			}
		}
		// No lab guest runs an agent: these only ever fail as PVE fails
		// without one (TestGuestAgentK20), so there is no 200 to check.
		neverOK := map[string]bool{
			"POST /nodes/{node}/qemu/{vmid}/agent/ping":                  true,
			"GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces": true,
		}
		var missing []string
		for k := range s.handlers() {
			if !covered[k] && !neverOK[k] {
				missing = append(missing, k)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("PVE %d: handlers never answered 200 in the tour (shape unchecked): %v", v, missing)
		}
	}
}

// K4-style late config: with a slow-config fault the task ends OK before its
// change is visible (here the new cluster's quorum).
func TestSlowConfigFaultK4(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{taskDuration: 50 * time.Millisecond})
	if _, err := s.Faults().Add(Fault{Method: "POST", Path: "/cluster/config", Kind: FaultSlowConfig, Delay: 700 * time.Millisecond, Count: 1}); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s, "pve01").root()
	upid := c.call("POST", "/cluster/config", url.Values{"clustername": {"slow"}}).must(t, "create").data.(string)
	if st := waitTask(t, c, upid); st["exitstatus"] != "OK" {
		t.Fatalf("task %v", st)
	}
	time.Sleep(150 * time.Millisecond)
	if quorate(c, 1) {
		t.Fatal("change visible right after the task despite the slow-config fault")
	}
	eventually(t, "late quorum", func() bool { return quorate(c, 1) })
}
