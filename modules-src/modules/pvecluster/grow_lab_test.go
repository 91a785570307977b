package pvecluster

// The cluster as operators grow and run it (issue 15, items 6 and 7), with
// the real ansible-playbook on the lab: a node added with --limit, check
// mode first, then a member powered off.
//
//   - cluster.yml --limit pve01,pve02,pve03 forms a cluster of three (the
//     members then are those three: pve04 is not in the cluster's plan yet);
//   - cluster.yml --check --limit pve04 predicts pve04's steps and writes
//     nothing anywhere; the real run then does exactly those (the same
//     changed count), joins pve04 and leaves the other nodes' files as they
//     were: what the join needs from them (keys, host keys) comes from the
//     cluster's nodes over Ansible's connection, read only, and pve04's key
//     goes into the cluster's shared authorized_keys (C7);
//   - on the converged cluster --check --limit pve04 predicts nothing;
//   - pve03 really powered off (lab power off): cluster.yml is green on the
//     healthy nodes with a warning naming pve03 (C10: 3 of 4 votes, quorate).

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
)

// One PVE version per scenario (issue 27 §3, CI time): the test has no
// version branch, and the other version runs the same module path in
// TestLabQuorumLossC10PVE8 (a member down on PVE 8) and
// the PVE 8 join tests, so a twin would repeat a proof.
func TestLabGrowWithLimitAndMemberDownPVE9(t *testing.T) {
	t.Parallel()
	testGrow(t, 9)
}

func testGrow(t *testing.T, pve int) {
	lab, bin := labtest.Start(t, pve, 4)
	sim := lab.Sim()
	repo, _ := labctl.RepoRoot()
	coll := labtest.InstallCollection(t, repo, bin)
	vars := filepath.Join(t.TempDir(), "pve.yml")
	if err := os.WriteFile(vars, []byte(seedVars), 0o644); err != nil {
		t.Fatal(err)
	}
	pb := filepath.Join(repo, "playbooks", "cluster.yml")

	// before pve04 arrives: the inventory's members are the three others
	out, err := labtest.Playbook(t, lab, coll, vars, pb, "--limit", "pve01,pve02,pve03",
		"-e", `{"pve_cluster_members": ["pve01", "pve02", "pve03"]}`)
	if err != nil {
		t.Fatalf("cluster of three: %v\n%s", err, out)
	}
	if ci, _ := sim.Cluster("pve01"); len(ci.Nodes) != 3 || !ci.Quorate {
		t.Fatalf("cluster of three: %+v", ci)
	}

	others := func() map[string]string {
		d := labtest.UpperDigest(t, lab)
		for k := range d {
			if strings.HasPrefix(k, "pve04:") {
				delete(d, k)
			}
		}
		return d
	}
	before := others()
	sim.ResetRequests()
	var check string
	labtest.NoWrites(t, lab, "cluster.yml --check --limit pve04", func() {
		check, err = labtest.Playbook(t, lab, coll, vars, pb, "--check", "--limit", "pve04")
	})
	if err != nil {
		t.Fatalf("--check --limit pve04: %v\n%s", err, check)
	}
	predicted := labtest.RecapChanged(t, check, "pve04")
	if predicted == 0 {
		t.Fatalf("--check --limit pve04 predicts nothing for a node to add:\n%s", check)
	}

	real, err := labtest.Playbook(t, lab, coll, vars, pb, "--limit", "pve04")
	if err != nil {
		t.Fatalf("--limit pve04 (item 6: growth must not need the others' tasks): %v\n%s", err, fatals(real))
	}
	if got := labtest.RecapChanged(t, real, "pve04"); got != predicted {
		t.Errorf("check mode predicted %d changed tasks for pve04, the run made %d:\ncheck:\n%s\nreal:\n%s", predicted, got, check, real)
	}
	if ci, _ := sim.Cluster("pve04"); ci.Name != "lab" || len(ci.Nodes) != 4 || !ci.Quorate {
		t.Fatalf("pve04 after --limit pve04: %+v", ci)
	}
	if diff := labtest.DigestDiff(before, others()); len(diff) != 0 {
		t.Errorf("--limit pve04 changed other nodes:\n%s", strings.Join(diff, "\n"))
	}
	if ak, _, _ := sim.ReadPmxcfs("pve01", "priv/authorized_keys"); !strings.Contains(ak, "root@pve04") {
		t.Errorf("pve04's key is not in the cluster's authorized_keys:\n%s", ak)
	}

	again, err := labtest.Playbook(t, lab, coll, vars, pb, "--check", "--limit", "pve04")
	if err != nil {
		t.Fatalf("--check --limit pve04 on the converged cluster: %v\n%s", err, again)
	}
	if n := labtest.RecapChanged(t, again, "pve04"); n != 0 {
		t.Errorf("--check --limit pve04 on a converged cluster predicts %d changes:\n%s", n, again)
	}

	// the others learn pve04 (/etc/hosts, known_hosts) in a full run
	if full, err := labtest.Playbook(t, lab, coll, vars, pb); err != nil {
		t.Fatalf("full run after the growth: %v\n%s", err, fatals(full))
	}

	// pve03 really powered off (lab power off: processes, sshd, API, vote)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := lab.PowerOff(ctx, "pve03"); err != nil {
		t.Fatal(err)
	}
	// the whole play: pve03 is unreachable, the healthy nodes stay green
	down, _ := labtest.Playbook(t, lab, coll, vars, pb)
	for _, n := range []string{"pve01", "pve02", "pve04"} {
		if c := labtest.RecapChanged(t, down, n); c != 0 {
			t.Errorf("%s with pve03 down: %d changed", n, c)
		}
	}
	if !regexp.MustCompile(`(?m)\[WARNING\]: .*pve03 offline`).MatchString(down) {
		t.Errorf("no warning naming pve03:\n%s", down)
	}
}
