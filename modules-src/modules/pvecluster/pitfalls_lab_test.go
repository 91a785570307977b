package pvecluster

// Pitfalls on a real lab with the real ansible-playbook (PVE 8):
// bad input named with nothing changed; C2 (the lab's pvecm exits 0
// without joining when the primary's host key is unknown, and the task
// fails instead); C6 (a node pre-joined to another cluster fails naming
// it, and nothing on it changes).

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// One PVE version per scenario (issue 27 §3, CI time): the test has no
// version branch, and the other version runs the same module path in
// TestLabPlaybookPVE9 and TestLabGrowWithLimitAndMemberDownPVE9, so a twin would repeat a proof.
func TestLabPitfallsPVE8(t *testing.T) {
	t.Parallel()
	testPitfalls(t, 8)
}

// nodeDigest is UpperDigest restricted to one node.
func nodeDigest(t *testing.T, lab *labctl.Lab, node string) map[string]string {
	out := map[string]string{}
	for k, v := range labtest.UpperDigest(t, lab) {
		if strings.HasPrefix(k, node+":") {
			out[k] = v
		}
	}
	return out
}

// fatals are the failure lines of a playbook run, for the test log.
func fatals(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "fatal:") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func testPitfalls(t *testing.T, pve int) {
	lab, bin := labtest.Start(t, pve, 3)
	sim := lab.Sim()
	repo, _ := labctl.RepoRoot()
	coll := labtest.InstallCollection(t, repo, bin)
	dir := t.TempDir()
	writeVars := func(extra string) string {
		p := filepath.Join(dir, "vars.yml")
		if err := os.WriteFile(p, []byte(seedVars+extra), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pb := filepath.Join(repo, "playbooks", "cluster.yml")

	// Bad input: the module names the option, nothing anywhere changes.
	sim.ResetRequests()
	labtest.NoWrites(t, lab, "a cluster name of 25 characters", func() {
		out, err := labtest.Playbook(t, lab, coll, writeVars("pve_cluster_name: this-name-is-far-too-long\n"), pb)
		if err == nil || !strings.Contains(out, "cluster_name: \\\"this-name-is-far-too-long\\\" is not a valid cluster name") {
			t.Errorf("bad cluster name: want a failure naming cluster_name:\n%s", out)
		}
	})
	if w := pveapitest.Mutating(sim); len(w) != 0 {
		t.Errorf("bad input sent API writes: %+v", w)
	}

	// C2: the SSH preparation skipped, so pve02 does not know pve01's host
	// key. The lab's pvecm would exit 0 without joining; the task fails,
	// says why, and pve02 stays standalone.
	out, _ := lab.SSH("pve02", "pvecm add "+lab.Nodes()[0].Addr+" --use_ssh --link0 "+lab.Nodes()[1].Addr+" </dev/null; echo rc=$?")
	if !strings.Contains(out, "rc=0") {
		t.Fatalf("the lab no longer reproduces C2 (pvecm add --use_ssh against a standalone node with an unknown host key): %s", out)
	}
	out, err := labtest.Playbook(t, lab, coll, writeVars("pve_cluster_prepare: []\n"), pb, "--limit", "pve01,pve02")
	if err == nil || !strings.Contains(out, "C2") || !strings.Contains(out, "Host key verification failed") {
		t.Errorf("C2: want pve02's join to fail naming the untrusted host key:\n%s", out)
	}
	t.Logf("C2:\n%s", fatals(out))
	if ci, _ := sim.Cluster("pve02"); ci.Name != "" {
		t.Errorf("C2: pve02 is in cluster %q", ci.Name)
	}
	if ci, _ := sim.Cluster("pve01"); ci.Name != "lab" || len(ci.Nodes) != 1 {
		t.Errorf("C2: pve01 should hold a cluster of one, got %+v", ci)
	}

	// C6: pve03 already belongs to cluster "other": its task fails naming
	// it, before anything on pve03 changes.
	if _, err := sim.CreateCluster("pve03", "other", lab.Nodes()[2].Addr); err != nil {
		t.Fatal(err)
	}
	before := nodeDigest(t, lab, "pve03")
	out, err = labtest.Playbook(t, lab, coll, writeVars(""), pb)
	if err == nil || !strings.Contains(out, `pve03 already belongs to a different cluster, \"other\"`) {
		t.Errorf("C6: want pve03 to fail naming cluster other:\n%s", out)
	}
	t.Logf("C6:\n%s", fatals(out))
	if diff := labtest.DigestDiff(before, nodeDigest(t, lab, "pve03")); len(diff) != 0 {
		t.Errorf("C6: pve03 changed:\n%s", strings.Join(diff, "\n"))
	}
	if ci, _ := sim.Cluster("pve03"); ci.Name != "other" || len(ci.Nodes) != 1 {
		t.Errorf("C6: pve03's cluster changed: %+v", ci)
	}
}
