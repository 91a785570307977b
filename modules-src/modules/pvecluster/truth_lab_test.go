package pvecluster

// The module invoked on lab nodes (real sshd and ssh, the lab's pvecm and
// pvesh) where the simulator-only tests of pitfalls_test.go used fakes:
//
//   - C2 end to end: the module's own read of the primary trusts its host
//     key, but pvecm's ssh meets a changed key; the lab's pvecm add exits 0
//     without joining, the module fails with the evidence and a truthful
//     changed, and a rerun once the trust is fixed joins;
//   - C10: two of three members powered off, the survivor waits for quorum
//     within wait_timeout and fails saying so with nothing written; a join
//     against the quorum-less primary is refused before any join request;
//     with two of three online the survivor proceeds.

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
	xssh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// onNode runs the module on node the way Ansible runs a binary module (an
// args file, one JSON result), installing the binary there first if needed.
func onNode(t *testing.T, lab *labctl.Lab, bin, node string, args map[string]any, check bool) map[string]any {
	t.Helper()
	installOn(t, lab, bin, node)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	full := map[string]any{"_gopve_module": "pve_cluster", "_ansible_check_mode": check, "_ansible_diff": true, "_ansible_version": "2.14.18"}
	for k, v := range args {
		full[k] = v
	}
	data, _ := json.Marshal(full)
	res, err := lab.Run(ctx, node, "f=$(mktemp) && cat > $f && "+labtest.NodeBinary+" $f; rc=$?; rm -f $f; exit $rc", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil {
		t.Fatalf("pve_cluster on %s did not print one JSON object (%v):\nstdout: %s\nstderr: %s", node, err, res.Stdout, res.Stderr)
	}
	return out
}

// installOn copies the gopve binary to node unless it is there already.
func installOn(t *testing.T, lab *labctl.Lab, bin, node string) {
	t.Helper()
	if out, _ := lab.SSH(node, "test -x "+labtest.NodeBinary+" && echo yes"); strings.Contains(out, "yes") {
		return
	}
	f, err := os.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := lab.Run(ctx, node, "cat > "+labtest.NodeBinary+" && chmod 755 "+labtest.NodeBinary, f)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("copying gopve to %s: %v %s", node, err, res.Stderr)
	}
}

// labArgs are the module's options for the lab's nodes.
func labArgs(lab *labctl.Lab, node string, extra map[string]any) map[string]any {
	var nodes []any
	for _, n := range lab.Nodes() {
		nodes = append(nodes, map[string]any{"name": n.Name, "address": n.Addr})
	}
	a := map[string]any{"cluster_name": "lab", "primary": "pve01", "nodes": nodes, "node": node, "domain": "lab.example"}
	for k, v := range extra {
		a[k] = v
	}
	return a
}

func msgOf(res map[string]any) string { s, _ := res["msg"].(string); return s }

// isPvecmSSH is true when an ancestor of the ssh evaluating it is `pvecm
// add`: root's ssh config on the joiner uses it to give pvecm's own ssh a
// known_hosts holding a changed key for the primary, while every other ssh
// (the module's read of the primary) keeps the real one.
const isPvecmSSH = `#!/bin/sh
p=$PPID
for _ in 1 2 3 4 5 6; do
	if tr '\0' ' ' </proc/$p/cmdline | grep -q '^pvecm add '; then exit 0; fi
	p=$(sed -n 's/^PPid:[[:space:]]*//p' /proc/$p/status)
	[ -n "$p" ] && [ "$p" -gt 1 ] || exit 1
done
exit 1
`

// C2 end to end on PVE 9. pvecm's own ssh meets a changed host key for the
// primary (a key regenerated after the trust was set up, as pvecm sees
// it): ssh cannot ask under automation, and pvecm add exits 0 without
// joining (the lab's stand-in, as real pvecm: the join worker dies, the
// CLI exits 0). The module's read of the primary still works, so this is
// past its pre-join check: only the membership read back catches it.
func TestLabSilentJoinC2PVE9(t *testing.T) {
	t.Parallel()
	lab, bin := labtest.Start(t, 9, 2)
	sim := lab.Sim()
	primary := lab.Nodes()[0]

	keys := map[string]any{}
	for _, n := range lab.Nodes() {
		res := onNode(t, lab, bin, n.Name, labArgs(lab, n.Name, map[string]any{"prepare": []any{"ssh_key"}, "form": false}), false)
		if failed(res) {
			t.Fatalf("key pair on %s: %s", n.Name, msgOf(res))
		}
		keys[n.Name] = res["ssh_public_key"]
	}
	if res := onNode(t, lab, bin, "pve01", labArgs(lab, "pve01", map[string]any{"peer_keys": keys}), false); failed(res) {
		t.Fatalf("create on pve01: %s", msgOf(res))
	}

	// pvecm's ssh on pve02: a changed key for the primary.
	_, stale, _ := ed25519.GenerateKey(rand.Reader)
	stalePub, err := xssh.NewPublicKey(stale.Public())
	if err != nil {
		t.Fatal(err)
	}
	line := knownhosts.Line([]string{primary.Addr}, stalePub) + "\n"
	putFile(t, lab, "pve02", "/root/.ssh/known_hosts.pvecm", line, "600")
	putFile(t, lab, "pve02", "/usr/local/sbin/is-pvecm-ssh", isPvecmSSH, "755")
	putFile(t, lab, "pve02", "/root/.ssh/config", "Match exec /usr/local/sbin/is-pvecm-ssh\n\tUserKnownHostsFile /root/.ssh/known_hosts.pvecm\n\tGlobalKnownHostsFile /dev/null\n", "600")
	args := labArgs(lab, "pve02", map[string]any{"peer_keys": keys, "wait_timeout": 30})
	res := onNode(t, lab, bin, "pve02", args, false)
	msg := msgOf(res)
	t.Logf("C2 on the lab: %s\nevidence: %v", msg, res["evidence"])
	if !failed(res) || !strings.Contains(msg, "pvecm add exited 0 but did not join") || !strings.Contains(msg, "pve02 is still standalone") || !strings.Contains(msg, "C2") {
		t.Fatalf("C2: want the silent non-join caught by the membership read back, got failed=%v: %s", res["failed"], msg)
	}
	ev, _ := json.Marshal(res["evidence"])
	if !strings.Contains(string(ev), "Host key verification failed") || !strings.Contains(msg, "Host key verification failed") {
		t.Errorf("C2: the evidence must hold pvecm's output (ssh's refusal): %s", ev)
	}
	// changed is truthful: the preparation of this run really wrote
	// (/etc/hosts, authorized_keys, known_hosts); the join did not happen.
	if res["changed"] != true {
		t.Errorf("C2: the run wrote pve02's preparation, yet changed=%v (changes %v)", res["changed"], res["changes"])
	}
	if hosts, _ := lab.SSH("pve02", "cat /etc/hosts"); !strings.Contains(hosts, primary.Addr+" pve01.lab.example pve01") {
		t.Errorf("C2: changed=true but /etc/hosts lacks the primary:\n%s", hosts)
	}
	// pvecm add ran, so the join is changed, unverified (issue 23 §2: the
	// runtime never reports "nothing was changed" after a write was sent).
	if nr, _ := res["changes_unverified"].([]any); len(nr) != 1 || !strings.Contains(nr[0].(string), "join pve02") || !strings.Contains(msg, "counts as made, unverified") {
		t.Errorf("C2: the join that ran pvecm add must be listed as unverified: %v", res["changes_unverified"])
	}
	if ci, _ := sim.Cluster("pve02"); ci.Name != "" {
		t.Errorf("C2: pve02 is in cluster %q", ci.Name)
	}
	if ci, _ := sim.Cluster("pve01"); ci.Name != "lab" || len(ci.Nodes) != 1 {
		t.Errorf("C2: the primary's cluster changed: %+v", ci)
	}

	// Trust fixed: pvecm's known_hosts gets the primary's real key.
	if out, err := lab.SSH("pve02", "cp /root/.ssh/known_hosts /root/.ssh/known_hosts.pvecm && echo ok"); err != nil || !strings.Contains(out, "ok") {
		t.Fatalf("fixing the trust: %v %s", err, out)
	}
	res = onNode(t, lab, bin, "pve02", args, false)
	if failed(res) || res["changed"] != true || !clusterOf(res).holds("pve02") {
		t.Fatalf("rerun after fixing the trust: failed=%v changed=%v %s cluster %v", res["failed"], res["changed"], msgOf(res), clusterOf(res))
	}
	if ci, _ := sim.Cluster("pve01"); ci.Name != "lab" || len(ci.Nodes) != 2 {
		t.Errorf("after the rerun the primary sees %+v", ci)
	}
}

// putFile writes a file on a lab node.
func putFile(t *testing.T, lab *labctl.Lab, node, path, content, mode string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := lab.Run(ctx, node, "mkdir -p \"$(dirname "+path+")\" && cat > "+path+" && chmod "+mode+" "+path, strings.NewReader(content))
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("writing %s on %s: %v %s", path, node, err, r.Stderr)
	}
}

// C10 on PVE 8: a cluster of three (pve01..pve03) and a standalone pve04.
func TestLabQuorumLossC10PVE8(t *testing.T) {
	t.Parallel()
	lab, bin := labtest.Start(t, 8, 4)
	sim := lab.Sim()
	nodes := lab.Nodes()
	if _, err := sim.CreateCluster("pve01", "lab", nodes[0].Addr); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes[1:3] {
		if _, err := sim.AddNode("pve01", n.Name, n.Addr, false); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"pve02", "pve03"} {
		if err := sim.SetOnline(n, false); err != nil {
			t.Fatal(err)
		}
	}
	// /etc/pve is read-only on the survivor, as PVE has it
	if out, _ := lab.SSH("pve01", "pvesh create /pools --poolid probe 2>&1; echo rc=$?"); !strings.Contains(out, "no quorum") || strings.Contains(out, "rc=0") {
		t.Fatalf("C10: a write on the survivor did not fail for quorum: %s", out)
	}
	// the module on the survivor, every preparation step wanted
	// (/etc/hosts, known_hosts…): it waits for quorum, then fails, writing
	// nothing anywhere.
	installOn(t, lab, bin, "pve01")
	sim.ResetRequests()
	var res map[string]any
	start := time.Now()
	labtest.NoWrites(t, lab, "pve_cluster on a survivor without quorum", func() {
		res = onNode(t, lab, bin, "pve01", labArgs(lab, "pve01", map[string]any{"prepare": []any{"hosts", "known_hosts"}, "wait_timeout": 8}), false)
	})
	waited := time.Since(start)
	msg := msgOf(res)
	t.Logf("C10 survivor: %s (after %s)", msg, waited.Round(time.Second))
	if !failed(res) || !strings.Contains(msg, "quorum") || !strings.Contains(msg, "C10") || !strings.Contains(msg, "wait_timeout") ||
		!strings.Contains(msg, "NOT quorate") || !strings.Contains(msg, "nothing was changed") || res["changed"] != false {
		t.Errorf("C10: want a failure after waiting for quorum, changed=false; got failed=%v changed=%v: %s", res["failed"], res["changed"], msg)
	}
	if waited < 8*time.Second {
		t.Errorf("C10: failed after %s, before wait_timeout (8s): it did not wait", waited)
	}
	if w := pveapitest.Mutating(sim); len(w) != 0 {
		t.Errorf("C10: API writes without quorum: %+v", w)
	}

	// a join against the quorum-less primary (API method, so a join would
	// be a request in the log): refused before any join request.
	sim.ResetRequests()
	api := map[string]any{"join_method": "api", "api_password": lab.Credentials().Password, "validate_certs": false, "prepare": []any{}, "wait_timeout": 8}
	installOn(t, lab, bin, "pve04")
	before := nodeDigest(t, lab, "pve04")
	res = onNode(t, lab, bin, "pve04", labArgs(lab, "pve04", api), false)
	msg = msgOf(res)
	t.Logf("C10 join: %s", msg)
	if !failed(res) || !strings.Contains(msg, "wait_timeout") || !strings.Contains(msg, "C10") || !strings.Contains(msg, "NOT quorate") || res["changed"] != false {
		t.Errorf("C10: a join against a primary without quorum must fail after waiting, changed=false; got failed=%v changed=%v: %s", res["failed"], res["changed"], msg)
	}
	for _, r := range sim.Requests() {
		if r.Method == "POST" && r.Path == "/cluster/config/join" {
			t.Errorf("C10: a join request was sent to %s without quorum on the primary", r.Node)
		}
	}
	if ci, _ := sim.Cluster("pve04"); ci.Name != "" {
		t.Errorf("C10: pve04 joined %q", ci.Name)
	}
	if diff := labtest.DigestDiff(before, nodeDigest(t, lab, "pve04")); len(diff) != 0 {
		t.Errorf("C10: pve04 changed:\n%s", strings.Join(diff, "\n"))
	}

	// 2 of 3 online: quorate again, the survivor's run proceeds and writes.
	if err := sim.SetOnline("pve02", true); err != nil {
		t.Fatal(err)
	}
	res = onNode(t, lab, bin, "pve01", labArgs(lab, "pve01", map[string]any{"prepare": []any{"hosts"}, "wait_timeout": 30}), false)
	if failed(res) || res["changed"] != true || clusterOf(res) == nil || !clusterOf(res).Quorate {
		t.Errorf("C10: with 2 of 3 online the run must proceed: failed=%v changed=%v %s cluster %v", res["failed"], res["changed"], msgOf(res), clusterOf(res))
	}
	if hosts, _ := lab.SSH("pve01", "cat /etc/hosts"); !strings.Contains(hosts, nodes[3].Addr+" pve04.lab.example pve04") {
		t.Errorf("C10: with quorum back /etc/hosts was not written:\n%s", hosts)
	}
}
