package pvecluster

// The role as users run it: playbooks/cluster.yml under the real
// ansible-playbook on a fresh 3-node lab (real sshd, real ssh for pvecm add
// and for reading the primary, the lab's pvecm and pvesh), with the seed's
// inventory variables (group pve, pve_cluster_primary: pve01, lab_domain).
//
//   - check mode first: nothing written on any node (labtest.NoWrites over
//     every upper layer) and no write in the simulator's request log;
//   - the real run forms a quorate cluster of three, joins one at a time,
//     and every node's /cluster/status shows it (C1, C3, C4, C5, C7);
//   - what check mode predicted per node is what the real run read back;
//   - a second run changes nothing.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

const seedVars = `pve_cluster_primary: pve01
lab_domain: lab.example
pve_cluster_name: lab
zfs_pool_name: nvme-vm
`

func TestLabPlaybookPVE9(t *testing.T) { testPlaybook(t, 9) }
func TestLabPlaybookPVE8(t *testing.T) { testPlaybook(t, 8) }

// clusterLines finds each node's cluster result in -v output.
var resultRe = regexp.MustCompile(`(?m)^(?:changed|ok): \[(pve0\d)\] => (\{.*\})$`)

func clustersIn(t *testing.T, out string) map[string]*Cluster {
	t.Helper()
	got := map[string]*Cluster{}
	for _, m := range resultRe.FindAllStringSubmatch(out, -1) {
		var res struct {
			Cluster *Cluster `json:"cluster"`
			Form    bool
		}
		if err := json.Unmarshal([]byte(m[2]), &res); err != nil {
			continue
		}
		if res.Cluster != nil {
			got[m[1]] = res.Cluster
		}
	}
	return got
}

func testPlaybook(t *testing.T, pve int) {
	lab, bin := labtest.Start(t, pve, 3)
	sim := lab.Sim()
	repo, _ := labctl.RepoRoot()
	coll := labtest.InstallCollection(t, repo, bin)
	vars := filepath.Join(t.TempDir(), "pve.yml")
	if err := os.WriteFile(vars, []byte(seedVars), 0o644); err != nil {
		t.Fatal(err)
	}
	pb := filepath.Join(repo, "playbooks", "cluster.yml")
	nodes := lab.Nodes()

	sim.ResetRequests()
	var check string
	labtest.NoWrites(t, lab, "cluster.yml --check", func() {
		var err error
		check, err = labtest.Playbook(t, lab, coll, vars, pb, "--check", "--diff", "-v")
		if err != nil {
			t.Fatalf("cluster.yml --check: %v\n%s", err, check)
		}
	})
	if w := pveapitest.Mutating(sim); len(w) != 0 {
		t.Fatalf("cluster.yml --check sent API writes: %+v", w)
	}
	for _, n := range nodes {
		if c := labtest.RecapChanged(t, check, n.Name); c != 2 {
			t.Errorf("check mode on %s: changed=%d, want 2 (key pair; hosts, keys, known_hosts and create/join):\n%s", n.Name, c, check)
		}
	}
	predicted := clustersIn(t, check)

	start := time.Now()
	real, err := labtest.Playbook(t, lab, coll, vars, pb, "-v")
	if err != nil {
		t.Fatalf("cluster.yml: %v\n%s", err, real)
	}
	t.Logf("PVE %d: 3-node cluster formed in %s (create + 2 joins, one at a time)", pve, time.Since(start).Round(time.Second))
	read := clustersIn(t, real)
	for i, n := range nodes {
		if c := labtest.RecapChanged(t, real, n.Name); c != 2 {
			t.Errorf("real run on %s: changed=%d, want 2", n.Name, c)
		}
		p, r := predicted[n.Name], read[n.Name]
		if p == nil || r == nil || strings.Join(p.names(), ",") != strings.Join(r.names(), ",") || len(r.Members) != i+1 || !r.Quorate {
			t.Errorf("%s: check predicted %v, the real run read back %v (want %d members, quorate)", n.Name, p, r, i+1)
		}
	}
	// Final state, read on every node through its own API (pvesh).
	for _, n := range nodes {
		out, err := lab.SSH(n.Name, "pvesh get /cluster/status --output-format json")
		if err != nil {
			t.Fatalf("%s: %v", n.Name, err)
		}
		v, err := parseStatus(json.RawMessage(out))
		if err != nil || v.cluster == nil || v.cluster.Name != "lab" || !v.cluster.Quorate || len(v.cluster.Members) != 3 || len(v.cluster.offline()) != 0 {
			t.Errorf("%s sees %v (%v), want cluster lab, quorate, 3 members online", n.Name, v.cluster, err)
		}
		hosts, _ := lab.SSH(n.Name, "cat /etc/hosts")
		for _, m := range nodes {
			if want := fmt.Sprintf("%s %s.lab.example %s", m.Addr, m.Name, m.Name); strings.Count(hosts, want) != 1 {
				t.Errorf("C1: %s's /etc/hosts lacks %q once:\n%s", n.Name, want, hosts)
			}
		}
	}
	// C7: the cluster's authorized_keys (every member's copy) holds every
	// member's root key, so the second run has nothing to add anywhere.
	shared, _ := lab.SSH("pve03", "cat /root/.ssh/authorized_keys")
	for _, n := range nodes {
		if !strings.Contains(shared, "root@"+n.Name) {
			t.Errorf("C7: the shared authorized_keys lacks %s's root key:\n%s", n.Name, shared)
		}
	}

	again, err := labtest.Playbook(t, lab, coll, vars, pb)
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, again)
	}
	for _, n := range nodes {
		if c := labtest.RecapChanged(t, again, n.Name); c != 0 {
			t.Errorf("second run changed %d on %s:\n%s", c, n.Name, again)
		}
	}
}
