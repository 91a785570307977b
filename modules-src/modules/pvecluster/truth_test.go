package pvecluster

// The truth when the cluster is not the happy path (issue 15), on the
// simulator with the fake runner of sim_test.go: every assertion about
// changed is checked against what the simulator and the nodes' files show.

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
	xssh "golang.org/x/crypto/ssh"
)

// formed is a lab whose first n nodes form cluster "lab" (pve01 primary),
// every node prepared by the module (keys, known_hosts).
func formed(t *testing.T, version, nodes, members int) (*lab, map[string]any) {
	t.Helper()
	l := newLab(t, version, nodes)
	keys := map[string]any{}
	for _, n := range l.sim.NodeNames() {
		res := l.run(n, l.args(map[string]any{"prepare": []any{"ssh_key"}, "form": false}), false)
		if failed(res) {
			t.Fatalf("key pair on %s: %v", n, res["msg"])
		}
		keys[n] = res["ssh_public_key"]
	}
	for _, n := range l.sim.NodeNames()[:members] {
		if res := l.run(n, l.args(map[string]any{"peer_keys": keys}), false); failed(res) {
			t.Fatalf("forming on %s: %v", n, res["msg"])
		}
	}
	return l, keys
}

// noChange asserts that a run changed nothing anywhere: no file on any
// node, no write in the simulator's request log.
func noChange(t *testing.T, l *lab, what string, res map[string]any, before map[string]string) {
	t.Helper()
	if res["changed"] != false {
		t.Errorf("%s: changed=%v", what, res["changed"])
	}
	if !mapsEqual(before, l.snapshot()) {
		t.Errorf("%s: files changed on a node", what)
	}
	for _, w := range pveapitest.Mutating(l.sim) {
		if w.Path != "/access/ticket" { // a login changes no state
			t.Errorf("%s: API write %+v", what, w)
		}
	}
}

// C6 by membership: pve02 is in a quorate cluster named "lab" with pve03,
// not in the primary pve01's (also "lab"). The name matches; the
// membership does not: refused, nothing changed (issue 15, item 1).
func TestSameNameOtherClusterC6(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("pve%d", v), func(t *testing.T) {
			l := newLab(t, v, 3)
			for _, c := range []struct{ primary, joiner string }{{"pve01", ""}, {"pve02", "pve03"}} {
				info, _ := l.sim.Node(c.primary)
				if _, err := l.sim.CreateCluster(c.primary, "lab", info.Addr); err != nil {
					t.Fatal(err)
				}
				if c.joiner != "" {
					if _, err := l.sim.AddNode(c.primary, c.joiner, "", false); err != nil {
						t.Fatal(err)
					}
				}
			}
			before := l.snapshot()
			l.sim.ResetRequests()
			for _, check := range []bool{true, false} {
				res := l.run("pve02", l.args(nil), check)
				msg, _ := res["msg"].(string)
				if !failed(res) || !strings.Contains(msg, "C6") || !strings.Contains(msg, "another cluster with the same name") || !strings.Contains(msg, "pve03") {
					t.Fatalf("check=%v: pve02 in the other cluster lab: failed=%v %s", check, res["failed"], msg)
				}
				noChange(t, l, fmt.Sprintf("C6 same name (check=%v)", check), res, before)
			}
			if ci, _ := l.sim.Cluster("pve02"); len(ci.Nodes) != 2 {
				t.Errorf("pve02's cluster changed: %+v", ci)
			}
		})
	}
}

// Refusals decidable from the inputs and a read come before the first
// write (issue 15, item 4): a joiner whose primary is in a cluster of
// another name, and a primary that does not answer (a wrong address).
// Every preparation step is asked for; nothing is written anywhere.
func TestRefusalsBeforeAnyWriteC6(t *testing.T) {
	l := newLab(t, 9, 3)
	info, _ := l.sim.Node("pve01")
	if _, err := l.sim.CreateCluster("pve01", "other", info.Addr); err != nil {
		t.Fatal(err)
	}
	before := l.snapshot()
	l.sim.ResetRequests()
	res := l.run("pve03", l.args(map[string]any{"peer_keys": map[string]any{}}), false)
	msg, _ := res["msg"].(string)
	if !failed(res) || !strings.Contains(msg, `primary pve01 belongs to cluster "other"`) || !strings.Contains(msg, "C6") {
		t.Fatalf("wrong cluster name on a joiner: %s", msg)
	}
	noChange(t, l, "C6 wrong cluster name", res, before)

	// an unknown primary: nodes gives it an address nothing answers at
	nodes := l.nodes()
	nodes[0].(map[string]any)["address"] = "127.0.0.254"
	res = l.run("pve03", l.args(map[string]any{"nodes": nodes}), false)
	msg, _ = res["msg"].(string)
	if !failed(res) || !strings.Contains(msg, "pve01") || !strings.Contains(msg, "127.0.0.254") || !strings.Contains(msg, "nothing was changed") {
		t.Fatalf("unknown primary: %s", msg)
	}
	noChange(t, l, "unknown primary", res, before)
}

// A join PVE leaves half done (issue 15, item 2): the primary's addnode ran,
// pve02's finish_join failed (the simulator's finish-join fault). The task
// reports changed (the primary's corosync.conf now lists pve02), names the
// primary's state (1 of 2 votes, not quorate) and PVE's way back, and
// blames no host key. A rerun refuses before any write with the same advice.
func TestHalfDoneJoinIsChangedC4C10(t *testing.T) {
	for _, method := range []string{"ssh", "api"} {
		t.Run(method, func(t *testing.T) {
			l, keys := formed(t, 9, 2, 1)
			if _, err := l.sim.Faults().Add(pvesim.Fault{Kind: pvesim.FaultFinishJoin, Node: "pve02"}); err != nil {
				t.Fatal(err)
			}
			args := l.args(map[string]any{"peer_keys": keys, "join_method": method, "api_password": l.sim.RootPassword(), "validate_certs": false})
			res := l.run("pve02", args, false)
			msg, _ := res["msg"].(string)
			t.Logf("half-done join (%s): %s", method, msg)
			ci, _ := l.sim.Cluster("pve01")
			if len(ci.Nodes) != 2 {
				t.Fatalf("the fault did not leave the primary listing pve02: %+v", ci)
			}
			for _, want := range []string{"pve01's corosync.conf lists pve02", "1 of 2 votes online, quorum 2", "NOT quorate", "pvecm expected 1", "pvecm delnode pve02", "Remove a Cluster Node", "this run changed the cluster"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the message lacks %q: %s", want, msg)
				}
			}
			if strings.Contains(msg, "host key") {
				t.Errorf("a half-done join is not a host key problem: %s", msg)
			}
			if !failed(res) || res["changed"] != true {
				t.Errorf("half-done join: failed=%v changed=%v, want a failure with changed=true", res["failed"], res["changed"])
			}

			// the rerun: refused in stage 1, before any write, same advice
			before := l.snapshot()
			l.sim.ResetRequests()
			res = l.run("pve02", args, false)
			msg, _ = res["msg"].(string)
			if !failed(res) || !strings.Contains(msg, "only the first half happened") || !strings.Contains(msg, "pvecm expected 1") || !strings.Contains(msg, "nothing was changed by this run") {
				t.Errorf("rerun after a half-done join: %s", msg)
			}
			noChange(t, l, "rerun after a half-done join", res, before)
		})
	}
}

// One member down (issue 15, item 7; C10). On a cluster of four with pve03
// off, pve05 joins (3 of 5 votes online if it stalled: still quorate), and
// check mode predicts it first; the converged members report ok with a
// warning naming pve03. On a cluster of three with pve03 off, pve04's join is
// refused before any write, check mode included: a stalled join would leave
// 2 of 4 votes, below quorum.
func TestMemberDownJoinMarginC10(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("pve%d", v), func(t *testing.T) {
			t.Run("three members, one off", func(t *testing.T) {
				l, keys := formed(t, v, 4, 3)
				if err := l.sim.SetOnline("pve03", false); err != nil {
					t.Fatal(err)
				}
				before := l.snapshot()
				l.sim.ResetRequests()
				for _, check := range []bool{true, false} {
					res := l.run("pve04", l.args(map[string]any{"peer_keys": keys}), check)
					msg, _ := res["msg"].(string)
					if !failed(res) || !strings.Contains(msg, "would cost the cluster its quorum (2 of 4") || !strings.Contains(msg, "pve03") {
						t.Errorf("check=%v: want the join refused for the quorum margin, got failed=%v: %s", check, res["failed"], msg)
					}
					noChange(t, l, fmt.Sprintf("margin refusal (check=%v)", check), res, before)
				}
			})
			t.Run("four members, one off", func(t *testing.T) {
				l, keys := formed(t, v, 5, 4)
				if err := l.sim.SetOnline("pve03", false); err != nil {
					t.Fatal(err)
				}
				args := l.args(map[string]any{"peer_keys": keys})
				for _, n := range []string{"pve01", "pve02", "pve04"} {
					res := l.run(n, args, false)
					if failed(res) || res["changed"] != false || !strings.Contains(fmt.Sprint(res["warnings"]), "pve03 offline") {
						t.Errorf("converged %s with pve03 down: failed=%v changed=%v warnings=%v %v", n, res["failed"], res["changed"], res["warnings"], res["msg"])
					}
				}
				check := l.run("pve05", args, true)
				if failed(check) || check["changed"] != true || !strings.Contains(fmt.Sprint(check["changes"]), "join pve05") {
					t.Fatalf("check mode on pve05: %v %v", check["msg"], check["changes"])
				}
				res := l.run("pve05", args, false)
				if failed(res) || res["changed"] != true || !clusterOf(res).holds("pve05") {
					t.Fatalf("pve05 joins with pve03 off: %v", res["msg"])
				}
				if fmt.Sprint(check["changes"]) != fmt.Sprint(res["changes"]) {
					t.Errorf("check mode predicted %v, the run made %v", check["changes"], res["changes"])
				}
				if ci, _ := l.sim.Cluster("pve01"); len(ci.Nodes) != 5 || !ci.Quorate {
					t.Errorf("after pve05's join: %+v", ci)
				}
			})
		})
	}
}

// A peer's host key that changed (a reinstalled node, or someone in
// between) fails before any write unless accept_changed_host_keys is set;
// then the replaced line is reported (issue 15, item 8; C2, C3).
func TestChangedHostKeyC2C3(t *testing.T) {
	l, keys := formed(t, 9, 2, 2)
	info, _ := l.sim.Node("pve02")
	old := l.hostKeys[info.Addr]
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	k, _ := xssh.NewPublicKey(pub)
	l.hostKeys[info.Addr] = k
	peerHostKeys := map[string]any{"pve02": strings.TrimSpace(string(xssh.MarshalAuthorizedKey(k)))}
	args := l.args(map[string]any{"peer_keys": keys, "peer_host_keys": peerHostKeys})
	before := l.snapshot()
	l.sim.ResetRequests()
	res := l.run("pve01", args, false)
	msg, _ := res["msg"].(string)
	if !failed(res) || !strings.Contains(msg, "host key of pve02 changed") || !strings.Contains(msg, xssh.FingerprintSHA256(old)) || !strings.Contains(msg, "accept_changed_host_keys") {
		t.Fatalf("changed host key: failed=%v %s", res["failed"], msg)
	}
	noChange(t, l, "changed host key", res, before)

	args["accept_changed_host_keys"] = true
	res = l.run("pve01", args, false)
	if failed(res) || res["changed"] != true {
		t.Fatalf("accepted host key change: %v", res["msg"])
	}
	replaced, _ := res["known_hosts_replaced"].([]any)
	if len(replaced) != 1 || !strings.Contains(fmt.Sprint(replaced[0]), strings.Fields(string(xssh.MarshalAuthorizedKey(old)))[1]) || !strings.Contains(fmt.Sprint(res["warnings"]), "lines are replaced") {
		t.Errorf("the replaced line must be reported: %v %v", res["known_hosts_replaced"], res["warnings"])
	}
	if !l.trusts("pve01", info.Addr) {
		t.Error("known_hosts does not hold pve02's new key")
	}
	// converged: the new key is recorded, nothing more to do
	delete(args, "accept_changed_host_keys")
	if res := l.run("pve01", args, false); failed(res) || res["changed"] != false {
		t.Errorf("rerun: failed=%v changed=%v %v", res["failed"], res["changed"], res["msg"])
	}
}

// Connection errors name pve_cluster's own options (issue 15, item 9): the
// primary's certificate is pinned by primary_api_fingerprint, its address
// is an entry of nodes, the user is always root@pam. Both refusals come
// before any write.
func TestConnectionErrorsNameClusterOptions(t *testing.T) {
	l, keys := formed(t, 9, 2, 1)
	wrong := strings.TrimSuffix(strings.Repeat("AB:", 32), ":")
	api := map[string]any{"peer_keys": keys, "join_method": "api", "api_password": l.sim.RootPassword(), "validate_certs": true, "primary_api_fingerprint": wrong}
	before := l.snapshot()
	l.sim.ResetRequests()
	res := l.run("pve02", l.args(api), false)
	msg, _ := res["msg"].(string)
	t.Logf("wrong primary fingerprint: %s", msg)
	if !failed(res) || !strings.Contains(msg, "primary_api_fingerprint") || strings.Contains(strings.ReplaceAll(msg, "primary_api_fingerprint", ""), "api_fingerprint") || strings.Contains(msg, "api_user") {
		t.Errorf("a wrong primary fingerprint must name primary_api_fingerprint (and no api_user): %s", msg)
	}
	noChange(t, l, "wrong primary fingerprint", res, before)

	nodes := l.nodes()
	nodes[0].(map[string]any)["address"] = "127.0.0.254"
	delete(api, "primary_api_fingerprint")
	api["validate_certs"] = false
	api["nodes"] = nodes
	res = l.run("pve02", l.args(api), false)
	msg, _ = res["msg"].(string)
	t.Logf("unreachable primary: %s", msg)
	if !failed(res) || !strings.Contains(msg, "nodes[0].address") || strings.Contains(msg, "api_host") || strings.Contains(msg, "api_user") || strings.Contains(msg, "api_timeout") {
		t.Errorf("an unreachable primary must name nodes[0].address: %s", msg)
	}
	noChange(t, l, "unreachable primary", res, before)
}
