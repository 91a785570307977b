package clustersim_test

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/tasks"
)

// C4, C5: create on the primary, wait for quorum, join one at a time; the
// joiner's API restarts and its certificate changes; joining before quorum
// fails in the task although the request was accepted.
func TestCreateJoinQuorumC4C5(t *testing.T) {
	t.Parallel()
	// The create task (1 s) plus quorum settling (0.5 s) leaves the early
	// join, whose quorum check comes after 0.25 s, a wide window.
	s := simtest.Start(t, pvesim.New, simtest.Opts{Nodes: 3, TaskDuration: time.Second, RestartWindow: 600 * time.Millisecond})
	p1 := simtest.NewClient(t, s, "pve01").Root()
	p2 := simtest.NewClient(t, s, "pve02").Root()
	p3 := simtest.NewClient(t, s, "pve03").Root()

	// Standalone shapes first.
	if r := p1.Call("GET", "/cluster/config/join", nil); r.Status != 424 || r.Reason != "node is not in a cluster, no join info available!" {
		t.Fatalf("standalone join info: %d %q", r.Status, r.Reason)
	}
	st := p1.Call("GET", "/cluster/status", nil).Must(t, "standalone status").List()
	if len(st) != 1 || st[0]["type"] != "node" || fmt.Sprint(st[0]["nodeid"]) != "0" {
		t.Fatalf("standalone /cluster/status %v", st)
	}
	// A node-local storage on pve03 that the join must wipe (Z7).
	p3.Call("POST", "/storage", url.Values{"storage": {"only-on-3"}, "type": {"dir"}, "path": {"/srv/x"}}).Must(t, "local storage")

	upid := simtest.CreateCluster(t, p1, "lab")
	if node, ok := tasks.ParseUPID(upid); !ok || node != "pve01" || !strings.Contains(upid, ":clustercreate:lab:root@pam:") {
		t.Fatalf("create UPID %q", upid)
	}
	if r := p1.Call("POST", "/cluster/config", url.Values{"clustername": {"again"}}); r.Status != 500 ||
		r.Reason != "cluster config '/etc/pve/corosync.conf' already exists" {
		t.Errorf("second create: %d %q", r.Status, r.Reason)
	}

	// Join right away: the request is accepted, the task fails (no quorum yet).
	fp1, _ := s.Node("pve01")
	early := p2.Call("POST", "/cluster/config/join", simtest.JoinParams(s, fp1.Addr, fp1.Fingerprint)).Must(t, "early join accepted")
	// Setup.pm join: the member's refusal is warned, then "Cluster join
	// aborted!" is the task's exit status.
	earlyStatus := simtest.WaitTask(t, p2, early.Data.(string))
	earlyLog := fmt.Sprint(p2.Call("GET", "/nodes/pve02/tasks/"+url.PathEscape(early.Data.(string))+"/log", nil).Must(t, "early join log").Data)
	if earlyStatus["exitstatus"] != "Cluster join aborted!" || !strings.Contains(earlyLog, "An error occurred on the cluster node: cluster not ready - no quorum?") {
		t.Fatalf("early join exitstatus %v, log %s", earlyStatus["exitstatus"], earlyLog)
	}

	if st := simtest.WaitTask(t, p1, upid); st["exitstatus"] != "OK" {
		t.Fatalf("create task: %v", st)
	}
	simtest.Eventually(t, "quorate with 1 node", func() bool { return simtest.Quorate(p1, 1) })

	ji := p1.Call("GET", "/cluster/config/join", nil).Must(t, "join info").Obj()
	nl := ji["nodelist"].([]any)[0].(map[string]any)
	if nl["nodeid"] != "1" || nl["quorum_votes"] != "1" {
		t.Errorf("join info must carry corosync strings: %v", nl)
	}
	if nl["pve_fp"] != fp1.Fingerprint {
		t.Errorf("pve_fp %v, want %s", nl["pve_fp"], fp1.Fingerprint)
	}

	before, _ := s.Node("pve02")
	join := p2.Call("POST", "/cluster/config/join", simtest.JoinParams(s, "pve01", nl["pve_fp"].(string))).Must(t, "join pve02").Data.(string)
	if node, _ := tasks.ParseUPID(join); node != "pve02" {
		t.Fatalf("join UPID names %s, want the joiner", node)
	}
	// Restart window: the joiner's API refuses connections.
	simtest.Eventually(t, "pve02 API down during join", func() bool {
		return p2.Call("GET", "/version", nil).Err != nil
	})
	// Its certificate changes: the old pin stops working even after the restart.
	simtest.Eventually(t, "pve02 back with a new certificate", func() bool {
		n, _ := s.Node("pve02")
		return n.Serving && n.Fingerprint != before.Fingerprint
	})
	if r := p2.Call("GET", "/version", nil); r.Err == nil || !strings.Contains(r.Err.Error(), "fingerprint") {
		t.Errorf("old pin after join: %v (status %d)", r.Err, r.Status)
	}
	after, _ := s.Node("pve02")
	p2.Pin = after.Fingerprint
	// The old ticket was signed by pve02's own /etc/pve, now replaced.
	if r := p2.Call("GET", "/version", nil); r.Status != 401 {
		t.Errorf("pre-join ticket after join: %d, want 401", r.Status)
	}
	p2.Root()
	if st := simtest.WaitTask(t, p2, join); st["exitstatus"] != "OK" {
		t.Fatalf("join task: %v", st)
	}
	simtest.Eventually(t, "2 nodes quorate", func() bool { return simtest.Quorate(p1, 2) })

	// Shared storage.cfg (S1): declared once on pve01, visible on pve02.
	p1.Call("POST", "/storage", url.Values{"storage": {"tank"}, "type": {"zfspool"}, "pool": {"tank"},
		"content": {"images,rootdir"}, "sparse": {"1"}}).Must(t, "zfs storage")
	if r := p2.Call("GET", "/storage/tank", nil); r.Status != 200 {
		t.Errorf("pve02 does not see storage declared on pve01: %d %q", r.Status, r.Reason)
	}

	fp1, _ = s.Node("pve01")
	before3, _ := s.Node("pve03")
	j3 := p3.Call("POST", "/cluster/config/join", simtest.JoinParams(s, "pve01", fp1.Fingerprint)).Must(t, "join pve03").Data.(string)
	simtest.Eventually(t, "pve03 back", func() bool {
		n, _ := s.Node("pve03")
		return n.Serving && n.Fingerprint != before3.Fingerprint
	})
	after3, _ := s.Node("pve03")
	p3.Pin = after3.Fingerprint
	p3.Root()
	if st := simtest.WaitTask(t, p3, j3); st["exitstatus"] != "OK" {
		t.Fatalf("join pve03: %v", st)
	}
	simtest.Eventually(t, "3 nodes quorate", func() bool { return simtest.Quorate(p1, 3) })

	// Z7: pve03's local storage is gone, the cluster's is there.
	if r := p3.Call("GET", "/storage/only-on-3", nil); r.Status != 500 {
		t.Errorf("joiner's local storage survived the join: %d", r.Status)
	}
	p3.Call("GET", "/storage/tank", nil).Must(t, "cluster storage on pve03")

	st = p3.Call("GET", "/cluster/status", nil).Must(t, "cluster status").List()
	if st[0]["type"] != "cluster" || st[0]["name"] != "lab" || fmt.Sprint(st[0]["nodes"]) != "3" {
		t.Errorf("cluster entry %v", st[0])
	}
	locals := 0
	for _, e := range st[1:] {
		if fmt.Sprint(e["local"]) == "1" {
			locals++
			if e["name"] != "pve03" {
				t.Errorf("local entry is %v, want pve03", e["name"])
			}
		}
	}
	if locals != 1 {
		t.Errorf("%d local entries", locals)
	}
	nodes := p1.Call("GET", "/cluster/config/nodes", nil).Must(t, "config nodes").List()
	if len(nodes) != 3 {
		t.Errorf("config nodes %v", nodes)
	}
	p1.Call("GET", "/cluster/config/totem", nil).Must(t, "totem")
	p1.Call("GET", "/nodes", nil).Must(t, "nodes")
	p1.Call("GET", "/cluster/resources", nil).Must(t, "resources")
	// proxyto: pve01 answers for pve03.
	p1.Call("GET", "/nodes/pve03/status", nil).Must(t, "proxied node status")
	info, ok := s.Cluster("pve02")
	if !ok || len(info.Nodes) != 3 || !info.Quorate || info.ExpectedVotes != 3 {
		t.Errorf("control view %+v", info)
	}
}

// C6: a node of another cluster is refused, never re-joined.
func TestJoinRefusesNodeOfAnotherClusterC6(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{Nodes: 2})
	if _, err := s.CreateCluster("pve01", "alpha", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateCluster("pve02", "beta", ""); err != nil {
		t.Fatal(err)
	}
	p2 := simtest.NewClient(t, s, "pve02").Root()
	n1, _ := s.Node("pve01")
	upid := p2.Call("POST", "/cluster/config/join", simtest.JoinParams(s, "pve01", n1.Fingerprint)).Must(t, "join accepted").Data.(string)
	st := simtest.WaitTask(t, p2, upid)
	if st["exitstatus"] != "Check if node may join a cluster failed!" {
		t.Fatalf("exitstatus %v", st["exitstatus"])
	}
	logText := fmt.Sprint(p2.Call("GET", "/nodes/pve02/tasks/"+url.PathEscape(upid)+"/log", nil).Must(t, "task log").Data)
	if !strings.Contains(logText, "cluster config '/etc/pve/corosync.conf' already exists") {
		t.Errorf("task log lacks the reason: %s", logText)
	}
	if info, _ := s.Cluster("pve02"); info.Name != "beta" || len(info.Nodes) != 1 {
		t.Errorf("pve02 changed cluster: %+v", info)
	}
	if _, err := s.AddNode("pve01", "pve02", "", false); err == nil || !strings.Contains(err.Error(), "Check if node may join") {
		t.Errorf("control AddNode of a clustered node: %v", err)
	}
}

// C4: two joins at once. The corosync.conf lock covers the member's addnode
// half only (join.go): the first addnode makes the one-node cluster wait for
// its joiner's vote (1 of 2), so the second addnode is refused for quorum
// while the first is still finishing. Exactly one join wins; the other ends
// "Cluster join aborted!" with the member's reason in its log.
func TestParallelJoinsC4(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{Nodes: 3, TaskDuration: 200 * time.Millisecond, RestartWindow: 400 * time.Millisecond, LockTimeout: 5 * time.Second})
	if _, err := s.CreateCluster("pve01", "lab", ""); err != nil {
		t.Fatal(err)
	}
	n1, _ := s.Node("pve01")
	var wg sync.WaitGroup
	results := make([]string, 2)
	logs := make([]string, 2)
	for i, node := range []string{"pve02", "pve03"} {
		c := simtest.NewClient(t, s, node).Root()
		upid := c.Call("POST", "/cluster/config/join", simtest.JoinParams(s, "pve01", n1.Fingerprint)).Must(t, "join").Data.(string)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Poll the joiner itself (a non-member cannot be reached
			// through pve01), re-pinning as its certificate changes.
			obs := simtest.NewClient(t, s, node).LabToken()
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				n, _ := s.Node(node)
				obs.Pin = n.Fingerprint
				r := obs.Call("GET", "/nodes/"+node+"/tasks/"+url.PathEscape(upid)+"/status", nil)
				if r.Status == 200 && r.Obj()["status"] == "stopped" {
					results[i] = fmt.Sprint(r.Obj()["exitstatus"])
					logs[i] = fmt.Sprint(obs.Call("GET", "/nodes/"+node+"/tasks/"+url.PathEscape(upid)+"/log", nil).Data)
					return
				}
				time.Sleep(30 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	ok := 0
	for i, r := range results {
		if r == "OK" {
			ok++
		} else if r != "Cluster join aborted!" || !strings.Contains(logs[i], "cluster not ready - no quorum?") {
			t.Errorf("unexpected join failure %q: %s", r, logs[i])
		}
	}
	if ok != 1 {
		t.Errorf("exactly one of two parallel joins should win: %v", results)
	}
	if info, _ := s.Cluster("pve01"); len(info.Nodes) != 2 || !info.Quorate {
		t.Errorf("after the winning join the cluster is %+v", info)
	}
}

// C10: 1 of 3 online → /etc/pve read-only; writes fail with PVE's message.
func TestQuorumLossC10(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{Nodes: 3, LockTimeout: 100 * time.Millisecond})
	if _, err := s.CreateCluster("pve01", "lab", ""); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"pve02", "pve03"} {
		if _, err := s.AddNode("pve01", n, "", false); err != nil {
			t.Fatal(err)
		}
	}
	c := simtest.NewClient(t, s, "pve01").LabToken()
	if !simtest.Quorate(c, 3) {
		t.Fatal("3 of 3 not quorate")
	}
	if err := s.SetOnline("pve03", false); err != nil {
		t.Fatal(err)
	}
	if !simtest.Quorate(c, 2) {
		t.Fatal("2 of 3 must stay quorate")
	}
	c.Call("POST", "/pools", url.Values{"poolid": {"two-of-three"}}).Must(t, "write with 2 of 3")
	if err := s.SetOnline("pve02", false); err != nil {
		t.Fatal(err)
	}
	if simtest.Quorate(c, 1) {
		t.Fatal("1 of 3 reported quorate")
	}
	start := time.Now()
	r := c.Call("POST", "/storage", url.Values{"storage": {"d1"}, "type": {"dir"}, "path": {"/srv/d1"}})
	if r.Status != 500 || r.Reason != "create storage failed: cfs-lock 'file-storage_cfg' error: no quorum!" {
		t.Errorf("storage create without quorum: %d %q", r.Status, r.Reason)
	}
	if time.Since(start) < 100*time.Millisecond {
		t.Error("no-quorum failure came before the lock timeout")
	}
	if r := c.Call("POST", "/pools", url.Values{"poolid": {"p"}}); r.Status != 500 || !strings.Contains(r.Reason, "no quorum!") {
		t.Errorf("pool create without quorum: %d %q", r.Status, r.Reason)
	}
	// Reads still work; the offline node is reported offline; proxying to it fails.
	c.Call("GET", "/storage", nil).Must(t, "read without quorum")
	if r := c.Call("GET", "/nodes/pve02/status", nil); r.Status != 595 {
		t.Errorf("proxy to offline node: %d %q", r.Status, r.Reason)
	}
	if err := s.SetOnline("pve02", true); err != nil {
		t.Fatal(err)
	}
	simtest.Eventually(t, "quorum back", func() bool { return simtest.Quorate(c, 2) })
	c.Call("POST", "/storage", url.Values{"storage": {"d1"}, "type": {"dir"}, "path": {"/srv/d1"}}).Must(t, "write after quorum is back")
	simtest.NewClient(t, s, "pve02").LabToken().Call("GET", "/storage/d1", nil).Must(t, "pve02 sees it")
}

// A join whose link0 is not an address of the joiner (the primary's IP, a
// typo) fails assert_joinable, like real PVE; the joiner stays standalone.
func TestJoinRefusesForeignLinkAddress(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{Nodes: 2})
	if _, err := s.CreateCluster("pve01", "lab", ""); err != nil {
		t.Fatal(err)
	}
	n1 := simtest.MustNode(t, s, "pve01")
	p2 := simtest.NewClient(t, s, "pve02").Root()
	params := simtest.JoinParams(s, "pve01", n1.Fingerprint)
	params.Set("link0", n1.Addr)
	upid := p2.Call("POST", "/cluster/config/join", params).Must(t, "join accepted").Data.(string)
	if st := simtest.WaitTask(t, p2, upid); st["exitstatus"] != "Check if node may join a cluster failed!" {
		t.Fatalf("exitstatus %v", st["exitstatus"])
	}
	logText := fmt.Sprint(p2.Call("GET", "/nodes/pve02/tasks/"+url.PathEscape(upid)+"/log", nil).Data)
	if !strings.Contains(logText, "link0: cannot use IP '"+n1.Addr+"', not found on local node!") {
		t.Errorf("log %s", logText)
	}
	if _, clustered := s.Cluster("pve02"); clustered {
		t.Error("pve02 joined with a foreign link address")
	}
}
