package pvecluster

// Job slicing (issue 19) on the simulator: the primary's slice runs
// before the others' have made their root keys. The module judged from
// peer_keys alone that a keyless non-member must be a node whose key task
// failed, and refused; a node left out of the play is told apart by
// peers_outside_play, its key left to its own run (C7), which the role
// then authorizes through the primary before the join.

import (
	"fmt"
	"strings"
	"testing"

	hostssh "github.com/gopve/proxmox/modules-src/host/ssh"
)

func TestSlicedPrimaryLeavesOutsidePeersToTheirRunC7(t *testing.T) {
	l := newLab(t, 9, 3)
	prep := func(n string) string {
		res := l.run(n, l.args(map[string]any{"prepare": []any{"ssh_key"}, "form": false}), false)
		if failed(res) {
			t.Fatalf("key pair on %s: %v", n, res["msg"])
		}
		return res["ssh_public_key"].(string)
	}
	// slice 1 = pve01: only its own key task ran; pve02 and pve03 have none
	keys := map[string]any{"pve01": prep("pve01"), "pve02": "", "pve03": ""}

	before := l.snapshot()
	l.sim.ResetRequests()
	res := l.run("pve01", l.args(map[string]any{"peer_keys": keys}), false)
	if msg, _ := res["msg"].(string); !failed(res) || !strings.Contains(msg, "peer_keys.pve02") || !strings.Contains(msg, "peers_outside_play") {
		t.Errorf("a keyless non-member not declared outside the play must be refused naming peer_keys.pve02 and peers_outside_play: %v", res["msg"])
	}
	noChange(t, l, "keyless peers, none declared outside the play", res, before)

	// bad input: named, nothing read or written
	for _, c := range []struct {
		outside []any
		want    string
	}{
		{[]any{"pve09"}, "peers_outside_play[0]: \"pve09\" is not in nodes"},
		{[]any{"pve02", "pve01"}, "peers_outside_play[1]: \"pve01\" is this node"},
	} {
		res := l.run("pve01", l.args(map[string]any{"peer_keys": keys, "peers_outside_play": c.outside}), false)
		if msg, _ := res["msg"].(string); !failed(res) || !strings.Contains(msg, c.want) {
			t.Errorf("peers_outside_play %v: %v, want %q", c.outside, res["msg"], c.want)
		}
		noChange(t, l, fmt.Sprint("peers_outside_play ", c.outside), res, before)
	}

	args := l.args(map[string]any{"peer_keys": keys, "peers_outside_play": []any{"pve02", "pve03"}})
	check := l.run("pve01", args, true)
	if failed(check) {
		t.Fatalf("check: %v", check["msg"])
	}
	noChange(t, l, "check mode", map[string]any{"changed": false}, before)
	for _, c := range check["changes"].([]any) {
		if s := fmt.Sprint(c); strings.HasPrefix(s, "authorize") && (strings.Contains(s, "pve02") || strings.Contains(s, "pve03")) {
			t.Errorf("check mode predicts authorizing keys of peers outside the play (their own run does it): %s", s)
		}
	}
	real := l.run("pve01", args, false)
	if failed(real) || real["changed"] != true || !clusterOf(real).holds("pve01") {
		t.Fatalf("the primary's slice must create the cluster: %v %v", real["msg"], clusterOf(real))
	}
	if got, want := fmt.Sprint(real["changes"]), fmt.Sprint(check["changes"]); got != want {
		t.Errorf("check mode predicted %s, the run did %s", want, got)
	}
	if w := fmt.Sprint(real["warnings"]); !strings.Contains(w, "pve02, pve03") || !strings.Contains(w, "C7") {
		t.Errorf("no warning naming the peers left to their own run (C7): %v", real["warnings"])
	}
	ak, err := l.roots["pve01"].ReadFile(hostssh.AuthorizedKeys)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ak.Content), strings.TrimSpace(keys["pve01"].(string))) {
		t.Errorf("the primary's own key is not authorized:\n%s", ak.Content)
	}

	// slice 2 = pve02,pve03, the primary outside: keys, authorized through
	// the primary (the role's delegated task), then the joins
	keys["pve02"], keys["pve03"] = prep("pve02"), prep("pve03")
	auth := l.run("pve01", l.args(map[string]any{"peer_keys": keys, "prepare": []any{"authorized_keys"}, "form": false}), false)
	if failed(auth) || auth["changed"] != true {
		t.Fatalf("authorizing the joiners through the primary: %v", auth["msg"])
	}
	for _, n := range []string{"pve02", "pve03"} {
		res := l.run(n, l.args(map[string]any{"peer_keys": keys, "peers_outside_play": []any{"pve01"}}), false)
		if failed(res) || !clusterOf(res).holds(n) {
			t.Fatalf("slice 2: %s must join: %v", n, res["msg"])
		}
	}
	if ci, _ := l.sim.Cluster("pve01"); len(ci.Nodes) != 3 || !ci.Quorate {
		t.Errorf("after both slices: %+v", ci)
	}
	// converged: the whole group changes nothing
	for _, n := range l.sim.NodeNames() {
		if res := l.run(n, l.args(map[string]any{"peer_keys": keys}), false); failed(res) || res["changed"] != false {
			t.Errorf("whole group after the slices, %s: changed=%v %v", n, res["changed"], res["msg"])
		}
	}
}
