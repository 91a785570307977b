package pvecluster

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"

	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// C2: with the peers' host keys not trusted and the SSH preparation
// skipped, pvecm add exits 0 without joining; the task fails with the
// evidence instead of reporting success; the refusal before pvecm runs is
// unchanged, the silent non-join after it ran is changed, unverified.
func TestUnknownHostKeyJoinFailsC2(t *testing.T) {
	l := newLab(t, 9, 2)
	if res := l.run("pve01", l.args(map[string]any{"prepare": []any{}}), false); failed(res) {
		t.Fatalf("create: %v", res["msg"])
	}
	res := l.run("pve02", l.args(map[string]any{"prepare": []any{}}), false)
	msg, _ := res["msg"].(string)
	if !failed(res) || !strings.Contains(msg, "C2") || !strings.Contains(msg, "Host key verification failed") || res["changed"] != false {
		t.Fatalf("want a failure naming the untrusted host key, changed=false; got failed=%v changed=%v: %s", res["failed"], res["changed"], msg)
	}
	// The host key trusted, pvecm add still exits 0 without joining: the
	// membership read back catches it.
	if res := l.run("pve02", l.args(map[string]any{"prepare": []any{"known_hosts"}, "form": false}), false); failed(res) {
		t.Fatal(res["msg"])
	}
	l.silentAdd = true
	res = l.run("pve02", l.args(map[string]any{"prepare": []any{}}), false)
	msg, _ = res["msg"].(string)
	if !failed(res) || !strings.Contains(msg, "still standalone") || !strings.Contains(msg, "pvecm add exited 0 but did not join") {
		t.Fatalf("want a failure naming the silent non-join, got failed=%v: %s", res["failed"], msg)
	}
	// pvecm add ran: whatever the read back shows, the runtime's rule
	// (issue 23 §2) makes the join changed, unverified — never "nothing
	// was changed" after a command that may have written.
	if nr, _ := res["changes_unverified"].([]any); res["changed"] != true || len(nr) != 1 || !strings.Contains(nr[0].(string), "join pve02") ||
		!strings.Contains(msg, "counts as made, unverified") {
		t.Errorf("pvecm add ran and did not join: changed=%v unverified=%v", res["changed"], res["changes_unverified"])
	}
	if ci, _ := l.sim.Cluster("pve02"); ci.Name != "" {
		t.Errorf("pve02 is in %q", ci.Name)
	}
}

// C6: a node already in another cluster fails, naming it, before any
// file changes; a primary whose cluster has another name fails too.
func TestOtherClusterC6(t *testing.T) {
	l := newLab(t, 8, 3)
	info, _ := l.sim.Node("pve03")
	if _, err := l.sim.CreateCluster("pve03", "other", info.Addr); err != nil {
		t.Fatal(err)
	}
	before := l.snapshot()
	res := l.run("pve03", l.args(nil), false)
	if msg, _ := res["msg"].(string); !failed(res) || !strings.Contains(msg, `"other"`) || !strings.Contains(msg, "C6") {
		t.Fatalf("pve03 in cluster other: %v", res["msg"])
	}
	if res["changed"] != false || !mapsEqual(before, l.snapshot()) {
		t.Errorf("C6 changed something: changed=%v", res["changed"])
	}
	// primary pve03 with cluster "lab" asked: its cluster is "other"
	res = l.run("pve01", l.args(map[string]any{"primary": "pve03", "prepare": []any{"known_hosts"}}), false)
	if msg, _ := res["msg"].(string); !failed(res) || !strings.Contains(msg, `primary pve03 belongs to cluster "other"`) {
		t.Fatalf("primary in another cluster: %v", res["msg"])
	}
	if ci, _ := l.sim.Cluster("pve01"); ci.Name != "" {
		t.Errorf("pve01 joined %q", ci.Name)
	}
}

// C9 and bad input: refused before anything is read or written, naming
// the option.
func TestRefusedInputC9(t *testing.T) {
	l := newLab(t, 9, 3)
	before := l.snapshot()
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"state": "absent"}, "pvecm delnode"},
		{map[string]any{"cluster_name": "this-name-is-far-too-long"}, "cluster_name:"},
		{map[string]any{"primary": "pve09"}, "primary:"},
		{map[string]any{"node": "node-b"}, "C8"},
		{map[string]any{"nodes": []any{map[string]any{"name": "pve01", "address": "not-an-ip"}}}, "nodes[0].address"},
		{map[string]any{"peer_keys": map[string]any{"pve02": "ssh-ed25519 garbage"}}, "peer_keys.pve02"},
		{map[string]any{"join_method": "api"}, "api_password"},
		{map[string]any{"link0": "eth0"}, "link0:"},
		{map[string]any{"wait_timeout": 0}, "wait_timeout"},
	} {
		args := l.args(c.args)
		if c.args["state"] == "absent" {
			args = map[string]any{"state": "absent"}
		}
		res := l.run("pve02", args, false)
		if msg, _ := res["msg"].(string); !failed(res) || !strings.Contains(msg, c.want) || res["changed"] != false {
			t.Errorf("%v: failed=%v changed=%v msg=%q, want a failure naming %q", c.args, res["failed"], res["changed"], msg, c.want)
		}
	}
	if !mapsEqual(before, l.snapshot()) || len(pveapitest.Mutating(l.sim)) != 0 {
		t.Error("refused input changed something")
	}
}

// C5, C8: the API join — join info from the primary, its fingerprint by
// node name, POST /cluster/config/join on the joiner with the password
// kept out of the result — survives the joiner's restart and new
// certificate, and is read back on both sides.
func TestAPIJoinC5(t *testing.T) {
	l := newLab(t, 9, 2)
	pw := l.sim.RootPassword()
	api := map[string]any{"join_method": "api", "api_password": pw, "validate_certs": false}
	if res := l.run("pve01", l.args(map[string]any{"prepare": []any{"hosts"}}), false); failed(res) {
		t.Fatalf("create: %v", res["msg"])
	}
	before, _ := l.sim.Node("pve02")
	args := l.args(api)
	args["prepare"] = []any{"hosts"}
	res := l.run("pve02", args, false)
	if failed(res) || res["changed"] != true {
		t.Fatalf("API join: %v %v", res["msg"], res["evidence"])
	}
	if c := clusterOf(res); c == nil || !c.holds("pve02") || len(c.Members) != 2 {
		t.Errorf("read back %v", c)
	}
	after, _ := l.sim.Node("pve02")
	if after.Fingerprint == before.Fingerprint {
		t.Error("the join did not change pve02's certificate: the test proves nothing about C5")
	}
	if strings.Contains(pveapiString(res), pw) {
		t.Error("the root password appears in the result")
	}
	// C4 in the simulator's log: the join went to the joiner, once
	n := 0
	for _, r := range pveapitest.Mutating(l.sim) {
		if r.Path == "/cluster/config/join" {
			n++
			if r.Node != "pve02" {
				t.Errorf("join sent to %s", r.Node)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d join requests, want 1", n)
	}
}

// C4, C10: a member of the primary's cluster listed but not online (a
// join in progress, or a node down) or a cluster without quorum is waited
// for, bounded by wait_timeout, and then the join fails saying so, with
// nothing changed and no join sent.
func TestJoinWaitsForPrimaryC4C10(t *testing.T) {
	// pve03 joined, then went down: listed in the cluster, not online
	l2 := newLab(t, 9, 3)
	if res := l2.run("pve01", l2.args(map[string]any{"prepare": []any{"known_hosts"}}), false); failed(res) {
		t.Fatal(res["msg"])
	}
	info, _ := l2.sim.Node("pve03")
	if _, err := l2.sim.AddNode("pve01", "pve03", info.Addr, false); err != nil {
		t.Fatal(err)
	}
	l2.sim.SetOnline("pve03", false)
	start := time.Now()
	// wait_timeout leaves room for a few reads over SSH on a loaded machine:
	// the message must come from a read that saw pve03 offline, not from a
	// read cut short by the deadline.
	res := l2.run("pve02", l2.args(map[string]any{"prepare": []any{"known_hosts"}, "wait_timeout": 5}), false)
	msg, _ := res["msg"].(string)
	if !failed(res) || !strings.Contains(msg, "C4") || !strings.Contains(msg, "pve03 (offline)") || res["changed"] != true {
		t.Fatalf("join with pve03 listed but offline: failed=%v changed=%v %s", res["failed"], res["changed"], msg)
	}
	if d := time.Since(start); d < 5*time.Second || d > 40*time.Second {
		t.Errorf("waited %s, want about wait_timeout (5s)", d)
	}
	if ci, _ := l2.sim.Cluster("pve02"); ci.Name != "" {
		t.Errorf("pve02 joined %q although the primary was not ready", ci.Name)
	}
	if nr, _ := res["changes_not_run"].([]any); len(nr) != 1 || !strings.Contains(nr[0].(string), "join pve02") {
		t.Errorf("the join must be listed as not run: %v", res["changes_not_run"])
	}
}

// Faults during an API join: the primary's API drops connections and the
// joiner's API answers errors and slowly while it restarts. The module
// keeps waiting within wait_timeout and succeeds; with a wait_timeout too
// short it fails saying what it waited for, and a rerun completes the job.
func TestAPIJoinSurvivesFaultsC5(t *testing.T) {
	l := newLab(t, 9, 3)
	api := map[string]any{"join_method": "api", "api_password": l.sim.RootPassword(), "validate_certs": false, "prepare": []any{"hosts"}}
	if res := l.run("pve01", l.args(map[string]any{"prepare": []any{"hosts"}}), false); failed(res) {
		t.Fatal(res["msg"])
	}
	// mid-join: the faults start once pve02's join request has been sent
	injected := l.onJoin(t, "pve02",
		pvesim.Fault{Node: "pve01", Method: "GET", Path: "/cluster/status", Kind: pvesim.FaultReset, Count: 6},
		pvesim.Fault{Node: "pve02", Method: "GET", Path: "/cluster/status", Kind: pvesim.FaultError, Status: 596, Message: "Connection timed out", Count: 8},
		pvesim.Fault{Node: "pve02", Method: "GET", Path: "/nodes/*/tasks/*/status", Kind: pvesim.FaultLatency, Delay: 300 * time.Millisecond, Count: 3})
	res := l.run("pve02", l.args(api), false)
	<-injected
	fired := 0
	for _, r := range l.sim.Requests() {
		if r.Fault != "" {
			fired++
		}
	}
	if fired < 10 {
		t.Errorf("only %d faults fired: the test does not exercise the waits", fired)
	}
	if failed(res) || res["changed"] != true || !clusterOf(res).holds("pve02") {
		t.Fatalf("API join under faults: %v %v", res["msg"], res["evidence"])
	}

	// pve03: the joiner's status keeps failing past a 1 s wait_timeout.
	injected = l.onJoin(t, "pve03", pvesim.Fault{Node: "pve03", Method: "GET", Path: "/cluster/status", Kind: pvesim.FaultError, Status: 500, Message: "pve-cluster restarting"})
	args := l.args(api)
	args["wait_timeout"] = 1
	args["api_password"] = l.sim.RootPassword()
	res = l.run("pve03", args, false)
	<-injected
	msg, _ := res["msg"].(string)
	if !failed(res) || !strings.Contains(msg, "wait_timeout") || !strings.Contains(msg, "as seen by pve03") || res["changed"] != true {
		t.Fatalf("want a clear timeout, got failed=%v: %s", res["failed"], msg)
	}
	l.sim.Faults().Clear()
	args["wait_timeout"] = 10
	res = l.run("pve03", args, false)
	if failed(res) || !clusterOf(res).holds("pve03") || len(clusterOf(res).Members) != 3 {
		t.Fatalf("rerun after the timeout: %v %v", res["msg"], clusterOf(res))
	}
}

// Parallel joins (a role without throttle): both joiners start at once.
// Each ends joined, or failed with PVE's reason and standalone; the
// membership is never corrupted (no member listed that is not in the
// cluster), and a serial rerun completes the cluster.
func TestParallelJoinsC4(t *testing.T) {
	l := newLab(t, 9, 3)
	keys := map[string]any{}
	for _, n := range l.sim.NodeNames() {
		res := l.run(n, l.args(map[string]any{"prepare": []any{"ssh_key"}, "form": false}), false)
		keys[n] = res["ssh_public_key"]
	}
	args := l.args(map[string]any{"peer_keys": keys, "prepare": []any{"hosts", "authorized_keys", "known_hosts"}})
	if res := l.run("pve01", args, false); failed(res) {
		t.Fatal(res["msg"])
	}
	var wg sync.WaitGroup
	results := map[string]map[string]any{}
	var mu sync.Mutex
	for _, n := range []string{"pve02", "pve03"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := l.run(n, args, false)
			mu.Lock()
			results[n] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	for n, r := range results {
		ci, _ := l.sim.Cluster(n)
		if failed(r) {
			t.Logf("%s failed: %v", n, r["msg"])
			if ci.Name != "" {
				t.Errorf("%s failed but is in cluster %q", n, ci.Name)
			}
		} else if !clusterOf(r).holds(n) || ci.Name != "lab" {
			t.Errorf("%s reported success but the simulator says %+v", n, ci)
		}
	}
	primary, _ := l.sim.Cluster("pve01")
	for _, m := range primary.Nodes {
		if ci, _ := l.sim.Cluster(m.Name); ci.Name != "lab" {
			t.Errorf("corrupted membership: %s is listed in the cluster but is standalone", m.Name)
		}
	}
	for _, n := range []string{"pve02", "pve03"} {
		if r := l.run(n, args, false); failed(r) || !clusterOf(r).holds(n) {
			t.Errorf("serial rerun on %s: %v", n, r["msg"])
		}
	}
	if ci, _ := l.sim.Cluster("pve01"); len(ci.Nodes) != 3 {
		t.Errorf("after the rerun: %+v", ci)
	}
}

// onJoin installs faults as soon as node's join request is in the request
// log (mid-join); the channel closes once they are installed.
func (l *lab) onJoin(t *testing.T, node string, faults ...pvesim.Fault) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
			for _, r := range l.sim.Requests() {
				if r.Method == "POST" && r.Path == "/cluster/config/join" && r.Node == node {
					for _, f := range faults {
						if _, err := l.sim.Faults().Add(f); err != nil {
							t.Error(err)
						}
					}
					return
				}
			}
		}
		t.Errorf("no join request from %s seen", node)
	}()
	return done
}

// C8: an inventory alias reaches the right machine, but PVE knows the node
// by its own name: the task fails naming both, before any change.
func TestAliasIsNotTheNodeNameC8(t *testing.T) {
	l := newLab(t, 8, 2)
	nodes := l.nodes()
	nodes[1].(map[string]any)["name"] = "node-b"
	before := l.snapshot()
	res := l.run("pve02", l.args(map[string]any{"nodes": nodes, "node": "node-b"}), false)
	msg, _ := res["msg"].(string)
	if !failed(res) || !strings.Contains(msg, `PVE calls this node "pve02", not "node-b"`) || !strings.Contains(msg, "C8") || res["changed"] != false {
		t.Fatalf("alias node-b for pve02: failed=%v changed=%v %s", res["failed"], res["changed"], msg)
	}
	if !mapsEqual(before, l.snapshot()) {
		t.Error("C8 failure changed files")
	}
}
