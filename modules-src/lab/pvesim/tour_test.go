package pvesim

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
		s := startSimWith(t, simOpts{Version: v, Nodes: 2, TaskDuration: 50 * time.Millisecond, RestartWindow: 200 * time.Millisecond}, func(c *Config) {
			c.BackupArchive = func(string, StorageInfo, string) ([]byte, error) { return archive, nil }
		})
		root := newClient(t, s, "pve01").Root()
		tok := newClient(t, s, "pve01").LabToken()
		tour := func(c *apiClient, node string) {
			for _, p := range []string{"/version", "/nodes", "/nodes/" + node + "/status", "/nodes/" + node + "/tasks",
				"/nodes/" + node + "/storage", "/nodes/" + node + "/storage/local/status", "/nodes/" + node + "/storage/local/content", "/cluster/status",
				"/cluster/resources", "/cluster/config", "/cluster/config/totem", "/storage", "/storage/local",
				"/pools", "/access/permissions", "/access/ticket"} {
				c.Call("GET", p, nil).Must(t, "GET "+p)
			}
			c.Call("GET", "/access/permissions", url.Values{"path": {"/storage/local"}}).Must(t, "permissions for a path")
		}
		tour(tok, "pve01")
		accessTour(t, tok, root)

		tok.Call("POST", "/storage", url.Values{"storage": {"d1"}, "type": {"dir"}, "path": {"/srv/d1"}}).Must(t, "create storage")
		tok.Call("PUT", "/storage/d1", url.Values{"content": {"iso"}}).Must(t, "update storage")
		tok.Call("DELETE", "/storage/d1", nil).Must(t, "delete storage")
		tok.Call("POST", "/pools", url.Values{"poolid": {"p1"}}).Must(t, "create pool")
		tok.Call("PUT", "/pools", url.Values{"poolid": {"p1"}, "comment": {"c"}}).Must(t, "update pool")
		tok.Call("GET", "/pools", url.Values{"poolid": {"p1"}}).Must(t, "get pool")
		tok.Call("PUT", "/pools/p1", url.Values{"comment": {"d"}}).Must(t, "update pool (deprecated)")
		tok.Call("GET", "/pools/p1", nil).Must(t, "get pool (deprecated)")
		tok.Call("DELETE", "/pools/p1", nil).Must(t, "delete pool (deprecated)")
		tok.Call("POST", "/pools", url.Values{"poolid": {"p2"}}).Must(t, "create pool")
		tok.Call("DELETE", "/pools", url.Values{"poolid": {"p2"}}).Must(t, "delete pool")
		tok.Call("POST", "/cluster/backup", url.Values{"id": {"b1"}, "schedule": {"01:00"}, "all": {"1"}, "exclude": {"100"}, "storage": {"local"}}).Must(t, "create backup job")
		tok.Call("GET", "/cluster/backup", nil).Must(t, "backup jobs")
		tok.Call("GET", "/cluster/backup/b1", nil).Must(t, "backup job")
		tok.Call("DELETE", "/cluster/backup/b1", nil).Must(t, "delete backup job")
		body, ct := multipartBody(t, [][2]string{{"content", "iso"}}, "filename", "tour.iso", []byte("iso"))
		if r := upload(tok, "local", body, ct); r.Status != 200 {
			t.Errorf("upload: %+v", r)
		}
		lxcTour(t, tok, "pve01")
		guestTour(t, tok, "pve01") // pve01 keeps its guests into the cluster; pve02 joins without any

		upid := root.Call("POST", "/cluster/config", url.Values{"clustername": {"tour"}}).Must(t, "create").Data.(string)
		waitTask(t, root, upid)
		root.Call("GET", "/nodes/pve01/tasks/"+url.PathEscape(upid)+"/log", nil).Must(t, "task log")
		eventually(t, "quorate", func() bool { return quorate(root, 1) })
		ji := root.Call("GET", "/cluster/config/join", nil).Must(t, "join info").Obj()
		fp := ji["nodelist"].([]any)[0].(map[string]any)["pve_fp"].(string)
		joiner := newClient(t, s, "pve02").Root()
		ju := joiner.Call("POST", "/cluster/config/join", joinParams(s, "pve01", fp)).Must(t, "join").Data.(string)
		eventually(t, "2 nodes quorate", func() bool { return quorate(root, 2) })
		waitTask(t, tok, ju) // proxied by pve01 to pve02, the UPID's node
		root.Call("GET", "/cluster/config/nodes", nil).Must(t, "config nodes")
		tour(tok, "pve02") // clustered shapes, proxied to pve02
		replicationTour(t, root)
		haTour(t, s, root)
		contentTour(t, root)
		root.Call("DELETE", "/cluster/config/nodes/pve02", nil).Must(t, "delnode (C9)")

		covered := map[string]bool{}
		for _, e := range s.Requests() {
			if e.Status != 200 {
				continue
			}
			if m, _, err := s.Schema().Lookup(e.Method, e.Path); err == nil {
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
		for _, k := range s.Routes() {
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
	s := startSim(t, simOpts{TaskDuration: 50 * time.Millisecond})
	if _, err := s.Faults().Add(Fault{Method: "POST", Path: "/cluster/config", Kind: FaultSlowConfig, Delay: 700 * time.Millisecond, Count: 1}); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s, "pve01").Root()
	upid := c.Call("POST", "/cluster/config", url.Values{"clustername": {"slow"}}).Must(t, "create").Data.(string)
	if st := waitTask(t, c, upid); st["exitstatus"] != "OK" {
		t.Fatalf("task %v", st)
	}
	time.Sleep(150 * time.Millisecond)
	if quorate(c, 1) {
		t.Fatal("change visible right after the task despite the slow-config fault")
	}
	eventually(t, "late quorum", func() bool { return quorate(c, 1) })
}

// replicationTour answers every replication endpoint once with 200 on a
// cluster whose pve01 can hold a ZFS guest (TestEveryHandlerFitsReturnsSchema).
func replicationTour(t *testing.T, c *apiClient) {
	t.Helper()
	c.Call("POST", "/storage", url.Values{"storage": {"tank"}, "type": {"zfspool"}, "pool": {"tank"}, "content": {"images"}}).Must(t, "zfs storage")
	createVM(t, c, 300, url.Values{"scsi0": {"tank:1"}})
	c.Call("POST", "/cluster/replication", url.Values{"id": {"300-0"}, "type": {"local"}, "target": {"pve02"}}).Must(t, "create job")
	c.Call("GET", "/cluster/replication", nil).Must(t, "jobs")
	c.Call("PUT", "/cluster/replication/300-0", url.Values{"rate": {"5.5"}, "comment": {"tour"}}).Must(t, "update job")
	c.Call("GET", "/cluster/replication/300-0", nil).Must(t, "job")
	c.Call("GET", "/nodes/pve01/replication", nil).Must(t, "node replication")
	c.Call("GET", "/nodes/pve01/replication/300-0/status", nil).Must(t, "job status")
	c.Call("GET", "/nodes/pve01/replication/300-0/log", nil).Must(t, "job log")
	c.Call("POST", "/nodes/pve01/replication/300-0/schedule_now", nil).Must(t, "schedule now")
	c.Call("DELETE", "/cluster/replication/300-0", url.Values{"force": {"1"}}).Must(t, "delete job")
	if st := mustTask(t, c, "POST", "/nodes/pve01/qemu/300/migrate", url.Values{"target": {"pve02"}}); st["exitstatus"] != "OK" {
		t.Fatalf("migrate 300: %v", st)
	}
	mustTask(t, c, "POST", "/nodes/pve02/qemu/300/migrate", url.Values{"target": {"pve01"}})
}

// haTour answers every HA endpoint of the lab's version once with 200 (for
// TestEveryHandlerFitsReturnsSchema). VM 300 exists on pve01. On PVE 9 the
// groups answer only before the migration, so the tour writes a groups.cfg
// first, as an upgraded PVE 8 cluster has one, and deletes its last group.
func haTour(t *testing.T, s *Sim, c *apiClient) {
	t.Helper()
	if s.Version() >= 9 {
		if err := s.WritePmxcfs("pve01", "ha/groups.cfg", "group: old\n\tnodes pve01\n", false); err != nil {
			t.Fatal(err)
		}
	}
	c.Call("POST", "/cluster/ha/groups", url.Values{"group": {"g1"}, "nodes": {"pve01:2,pve02"}}).Must(t, "group")
	c.Call("GET", "/cluster/ha/groups", nil).Must(t, "groups")
	c.Call("PUT", "/cluster/ha/groups/g1", url.Values{"restricted": {"1"}}).Must(t, "update group")
	c.Call("GET", "/cluster/ha/groups/g1", nil).Must(t, "read group")
	c.Call("DELETE", "/cluster/ha/groups/g1", nil).Must(t, "delete group")
	if s.Version() >= 9 {
		c.Call("DELETE", "/cluster/ha/groups/old", nil).Must(t, "delete the last group")
	}
	c.Call("POST", "/cluster/ha/resources", url.Values{"sid": {"vm:300"}, "state": {"stopped"}}).Must(t, "resource")
	c.Call("GET", "/cluster/ha/resources", nil).Must(t, "resources")
	c.Call("PUT", "/cluster/ha/resources/vm:300", url.Values{"max_relocate": {"2"}}).Must(t, "update resource")
	c.Call("GET", "/cluster/ha/resources/300", nil).Must(t, "read resource")
	c.Call("GET", "/cluster/ha/status/current", nil).Must(t, "HA status")
	c.Call("POST", "/cluster/ha/resources/vm:300/migrate", url.Values{"node": {"pve02"}}).Must(t, "HA migrate")
	c.Call("POST", "/cluster/ha/resources/vm:300/relocate", url.Values{"node": {"pve01"}}).Must(t, "HA relocate")
	if s.Version() >= 9 {
		c.Call("POST", "/cluster/ha/rules", url.Values{"rule": {"r1"}, "type": {"node-affinity"}, "resources": {"vm:300"}, "nodes": {"pve01"}}).Must(t, "rule")
		c.Call("GET", "/cluster/ha/rules", nil).Must(t, "rules")
		c.Call("PUT", "/cluster/ha/rules/r1", url.Values{"type": {"node-affinity"}, "strict": {"1"}}).Must(t, "update rule")
		c.Call("GET", "/cluster/ha/rules/r1", nil).Must(t, "read rule")
		c.Call("DELETE", "/cluster/ha/rules/r1", nil).Must(t, "delete rule")
	}
	c.Call("DELETE", "/cluster/ha/resources/vm:300", nil).Must(t, "delete resource")
}

// lxcTour answers every container endpoint once with 200.
func lxcTour(t *testing.T, c *apiClient, node string) {
	t.Helper()
	p := "/nodes/" + node + "/lxc"
	mustTask(t, c, "POST", p, url.Values{"vmid": {"250"}, "ostemplate": {"local:vztmpl/alpine-3.20-default_20240908_amd64.tar.xz"}, "rootfs": {"local-lvm:2"}})
	c.Call("GET", p, nil).Must(t, "CT list")
	c.Call("GET", p+"/250/config", nil).Must(t, "CT config")
	c.Call("PUT", p+"/250/config", url.Values{"cores": {"2"}}).Must(t, "CT PUT config")
	c.Call("GET", p+"/250/pending", nil).Must(t, "CT pending")
	mustTask(t, c, "PUT", p+"/250/resize", url.Values{"disk": {"rootfs"}, "size": {"+1G"}})
	c.Call("GET", p+"/250/status/current", nil).Must(t, "CT status")
	mustTask(t, c, "POST", p+"/250/status/start", nil)
	mustTask(t, c, "POST", p+"/250/status/shutdown", nil)
	mustTask(t, c, "POST", p+"/250/status/start", nil)
	c.Call("GET", p+"/250/interfaces", nil).Must(t, "CT interfaces")
	mustTask(t, c, "POST", p+"/250/status/stop", nil)
	mustTask(t, c, "DELETE", p+"/250", nil)
	c.Call("GET", "/nodes/"+node+"/vzdump/extractconfig", url.Values{"volume": {ctBackup}}).Must(t, "extractconfig")
	mustTask(t, c, "POST", p, url.Values{"vmid": {"251"}, "ostemplate": {ctBackup}, "restore": {"1"}, "storage": {"local-lvm"}})
	mustTask(t, c, "DELETE", p+"/251", nil)
}
