package pvecluster

// Issue 23 §7: growing the cluster with --limit NEW while a member outside
// the play is powered off. The role reads the keys of the members outside
// the play before any write; a dead one must be left out with a warning
// naming it, and the new node must join, on every supported ansible-core:
// this host's 2.14 (Debian 12) and Debian 13's 2.19. A run_once loop
// delegated to each member with ignore_unreachable ended the play there
// ("NO MORE HOSTS LEFT" on 2.14; 2.19 ends it the same way, silently) and
// the new node never joined.
//
// One lab of six: pve01..pve04 form cluster "lab" (in the simulator, as
// labtest.FormCluster does), pve04 is really powered off (3 of 4 votes:
// quorate, and still quorate while a joiner is listed but not finished,
// which the module demands, C10), then pve05 joins with --limit pve05
// under ansible-core 2.14 and pve06 with --limit pve06 under 2.19. Each
// join is read on the nodes (the simulator's membership, the joiner's own
// /etc/pve), never from the recap alone.

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
)

func TestLabGrowPastDeadMemberEveryAnsibleCore(t *testing.T) {
	t.Parallel()
	lab, bin := labtest.Start(t, 9, 6)
	ctls := labtest.Controllers(t)
	sim := lab.Sim()
	nodes := lab.Nodes()
	if _, err := sim.CreateCluster(nodes[0].Name, "lab", nodes[0].Addr); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes[1:4] {
		if _, err := sim.AddNode(nodes[0].Name, n.Name, n.Addr, false); err != nil {
			t.Fatal(err)
		}
	}
	labtest.PowerOff(t, lab, "pve04")
	repo, _ := labctl.RepoRoot()
	coll := labtest.InstallCollection(t, repo, bin)
	vars := filepath.Join(t.TempDir(), "pve.yml")
	if err := os.WriteFile(vars, []byte(seedVars), 0o644); err != nil {
		t.Fatal(err)
	}
	pb := filepath.Join(repo, "playbooks", "cluster.yml")
	warnRe := regexp.MustCompile(`(?m)\[WARNING\]: .*\bpve04 offline\b`)
	for i, ctl := range ctls {
		joiner := []string{"pve05", "pve06"}[i]
		t.Run(ctl.Name+"-"+joiner, func(t *testing.T) {
			version := ctl.Version(t)
			out, err := labtest.PlaybookUnder(t, ctl, lab, coll, vars, pb, nil, "--limit", joiner)
			if err != nil {
				t.Fatalf("%s: cluster.yml --limit %s with pve04 off: %v\n%s", version, joiner, err, out)
			}
			if strings.Contains(out, "NO MORE HOSTS LEFT") {
				t.Errorf("%s: the play ended early:\n%s", version, out)
			}
			if labtest.RecapChanged(t, out, joiner) == 0 {
				t.Errorf("%s: %s reports no change although it was to join:\n%s", version, joiner, out)
			}
			ci, ok := sim.Cluster(joiner)
			if !ok || ci.Name != "lab" || !ci.Quorate {
				t.Fatalf("%s: %s after the run: %+v (clustered %v)\n%s", version, joiner, ci, ok, out)
			}
			found := false
			for _, n := range ci.Nodes {
				found = found || n.Name == joiner && n.Online
			}
			if !found {
				t.Errorf("%s: %s is not an online member: %+v", version, joiner, ci.Nodes)
			}
			if conf, _, err := sim.ReadPmxcfs(joiner, "corosync.conf"); err != nil || !strings.Contains(conf, "name: "+joiner) {
				t.Errorf("%s: %s's own /etc/pve/corosync.conf does not list it (%v):\n%s", version, joiner, err, conf)
			}
			if !warnRe.MatchString(out) {
				t.Errorf("%s: no warning naming the dead member pve04:\n%s", version, out)
			}
		})
	}
}
