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
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

const seedVars = `pve_cluster_primary: pve01
lab_domain: lab.example
pve_cluster_name: lab
zfs_pool_name: nvme-vm
`

// One PVE version per scenario (issue 27 §3, CI time): the test has no
// version branch, and the other version runs the same module path in
// TestLabPitfallsPVE8, TestLabParallelAPIJoinPVE8 and
// TestLabAPIJoinFaultsPVE8, so a twin would repeat a proof.
func TestLabPlaybookPVE9(t *testing.T) {
	t.Parallel()
	testPlaybook(t, 9)
}

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

	// Issue 24 §3: the converged cluster phase (the key pair task, the
	// create on the primary, the two joins) proves every membership from
	// pmxcfs's files: no PVE tool started on any node (their command
	// logs), no API request (the request log), so no pvesh over SSH either.
	toolRuns(t, lab)
	again, err := labtest.Playbook(t, lab, coll, vars, pb)
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, again)
	}
	tools, reqs := toolRuns(t, lab)
	t.Logf("PVE %d: converged cluster.yml (3 nodes, 6 pve_cluster tasks): %d PVE tool processes %v, %d API requests %v", pve, len(tools), tools, len(reqs), reqs)
	if len(tools) != 0 || len(reqs) != 0 {
		t.Errorf("the converged cluster phase ran PVE tools %v and sent API requests %v, want none", tools, reqs)
	}
	for _, n := range nodes {
		if c := labtest.RecapChanged(t, again, n.Name); c != 0 {
			t.Errorf("second run changed %d on %s:\n%s", c, n.Name, again)
		}
	}
}

// The API join from the role (join_method api, the lab's root password,
// each node pinned by its fingerprint from the inventory) at -vvv: the
// cluster forms, and the password appears nowhere in the output.
func TestLabAPIJoinSecretsPVE9(t *testing.T) {
	t.Parallel()
	lab, bin := labtest.Start(t, 9, 3)
	repo, _ := labctl.RepoRoot()
	coll := labtest.InstallCollection(t, repo, bin)
	pw := lab.Credentials().Password
	if len(pw) < 8 {
		t.Fatalf("the lab's password %d chars: too short for a meaningful search", len(pw))
	}
	vars := filepath.Join(t.TempDir(), "pve.yml")
	if err := os.WriteFile(vars, []byte(seedVars+fmt.Sprintf("pve_cluster_join_method: api\npve_root_password: %q\n", pw)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := labtest.Playbook(t, lab, coll, vars, filepath.Join(repo, "playbooks", "cluster.yml"), "-vvv")
	if err != nil {
		t.Fatalf("cluster.yml with the API join: %v\n%s", err, out)
	}
	if strings.Contains(out, pw) {
		t.Errorf("the root password appears in the -vvv output")
	}
	joins := 0
	for _, r := range lab.Sim().Requests() {
		if r.Method == "POST" && r.Path == "/cluster/config/join" {
			joins++
		}
		for k, v := range r.Params {
			if strings.Contains(v, pw) {
				t.Errorf("the request log holds the password in %s %s %s", r.Method, r.Path, k)
			}
		}
	}
	if joins != 2 {
		t.Errorf("%d API join requests, want 2", joins)
	}
	for _, n := range lab.Nodes() {
		if ci, _ := lab.Sim().Cluster(n.Name); ci.Name != "lab" || len(ci.Nodes) != 3 {
			t.Errorf("%s: %+v", n.Name, ci)
		}
	}
	again, err := labtest.Playbook(t, lab, coll, vars, filepath.Join(repo, "playbooks", "cluster.yml"))
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, again)
	}
	for _, n := range lab.Nodes() {
		if c := labtest.RecapChanged(t, again, n.Name); c != 0 {
			t.Errorf("second run changed %d on %s", c, n.Name)
		}
	}
}

// Scale: five PVE 9 nodes formed by the same role in one run, the joins
// one at a time; every node reads back a quorate cluster of five.
func TestLabScale5PVE9(t *testing.T) {
	t.Parallel()
	lab, bin := labtest.Start(t, 9, 5)
	repo, _ := labctl.RepoRoot()
	coll := labtest.InstallCollection(t, repo, bin)
	vars := filepath.Join(t.TempDir(), "pve.yml")
	if err := os.WriteFile(vars, []byte(seedVars), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, err := labtest.Playbook(t, lab, coll, vars, filepath.Join(repo, "playbooks", "cluster.yml"))
	if err != nil {
		t.Fatalf("cluster.yml on 5 nodes: %v\n%s", err, out)
	}
	t.Logf("5 nodes in %s, %s per join on average", time.Since(start).Round(time.Second), (time.Since(start) / 4).Round(100*time.Millisecond))
	for _, n := range lab.Nodes() {
		out, err := lab.SSH(n.Name, "pvesh get /cluster/status --output-format json")
		v, perr := parseStatus(json.RawMessage(out))
		if err != nil || perr != nil || v.cluster == nil || !v.cluster.Quorate || len(v.cluster.Members) != 5 || len(v.cluster.offline()) != 0 {
			t.Errorf("%s sees %v (%v %v)", n.Name, v.cluster, err, perr)
		}
	}
}

// Z7 and the order of site.yml: the pool (zfs.yml) on standalone nodes,
// then the cluster, then storage: the storage declared once is seen by
// every member, none lost to a join.
func TestLabZfsClusterStoragePVE9(t *testing.T) {
	t.Parallel()
	lab, bin := labtest.Start(t, 9, 3)
	repo, _ := labctl.RepoRoot()
	coll := labtest.InstallCollection(t, repo, bin)
	vars := filepath.Join(t.TempDir(), "pve.yml")
	if err := os.WriteFile(vars, []byte(seedVars+"zfs_pool_device: /dev/nvme0n1\nzfs_arc_max_gb: 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, pb := range []string{"zfs.yml", "cluster.yml", "storage.yml"} {
		if out, err := labtest.Playbook(t, lab, coll, vars, filepath.Join(repo, "playbooks", pb)); err != nil {
			t.Fatalf("%s: %v\n%s", pb, err, out)
		}
	}
	for _, n := range lab.Nodes() {
		out, err := lab.SSH(n.Name, "pvesh get /storage/nvme-vm --output-format json")
		if err != nil || !strings.Contains(out, `"pool":"nvme-vm"`) {
			t.Errorf("Z7: %s does not see storage nvme-vm after the joins: %v %s", n.Name, err, out)
		}
	}
}

// Parallel joins from a play without throttle: every joiner ends joined,
// or failed with a reason and standalone; no member is listed that is not
// in the cluster (C4); the role run afterwards completes the cluster.
func TestLabParallelJoinPVE9(t *testing.T) {
	t.Parallel()
	testParallelJoin(t, 9, "")
}

// The same with the API join (PVE 8, C4), where a join has a window (the
// joiner's services restarting) in which it is listed but not online. Both
// joiners start at once, so both can pass the module's pre-join check (a
// read, not a lock: only the role's throttle prevents the race); what must
// hold is that each ends joined, or failed saying why (the module's C4
// wait, PVE's "no quorum" or lock timeout) and standalone, never a member
// listed that is not in the cluster. The request log shows which happened.
func TestLabParallelAPIJoinPVE8(t *testing.T) {
	t.Parallel()
	testParallelJoin(t, 8, "pve_cluster_join_method: api\npve_root_password: %q\n")
}

func testParallelJoin(t *testing.T, pve int, extraVars string) {
	lab, bin := labtest.Start(t, pve, 3)
	sim := lab.Sim()
	repo, _ := labctl.RepoRoot()
	coll := labtest.InstallCollection(t, repo, bin)
	dir := t.TempDir()
	vars := filepath.Join(dir, "pve.yml")
	if extraVars != "" {
		extraVars = fmt.Sprintf(extraVars, lab.Credentials().Password)
	}
	if err := os.WriteFile(vars, []byte(seedVars+extraVars), 0o600); err != nil {
		t.Fatal(err)
	}
	// the role's tasks, the joins without throttle
	role, err := os.ReadFile(filepath.Join(repo, "roles", "pve_cluster", "tasks", "main.yml"))
	if err != nil {
		t.Fatal(err)
	}
	parallel := strings.Replace(string(role), "  throttle: 1\n", "", 1)
	if parallel == string(role) {
		t.Fatal("the role has no throttle: 1 to take out")
	}
	rdir := filepath.Join(dir, "roles", "parallel")
	for _, d := range []string{"tasks", "defaults", "vars"} {
		if err := os.MkdirAll(filepath.Join(rdir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(rdir, "tasks", "main.yml"), []byte(parallel), 0o644)
	for _, f := range []string{"defaults/main.yml", "vars/main.yml"} {
		b, _ := os.ReadFile(filepath.Join(repo, "roles", "pve_cluster", f))
		os.WriteFile(filepath.Join(rdir, f), b, 0o644)
	}
	pb := filepath.Join(dir, "parallel.yml")
	os.WriteFile(pb, []byte("- hosts: pve\n  gather_facts: false\n  roles: [parallel]\n"), 0o644)
	out, err := labtest.Playbook(t, lab, coll, vars, pb, "--forks", "5")
	t.Logf("parallel joins (err %v):\n%s", err, fatals(out))
	primary, _ := sim.Cluster("pve01")
	for _, m := range primary.Nodes {
		if ci, _ := sim.Cluster(m.Name); ci.Name != "lab" {
			t.Errorf("C4: %s is listed in the cluster but is standalone", m.Name)
		}
	}
	// the join task's own lines (the key pair task before it reports too)
	joinTask := out
	if i := strings.Index(joinTask, "Join the other nodes"); i >= 0 {
		joinTask = joinTask[i:]
	}
	if i := strings.Index(joinTask, "PLAY RECAP"); i >= 0 {
		joinTask = joinTask[:i]
	}
	for _, n := range []string{"pve02", "pve03"} {
		ok := regexp.MustCompile(`(?m)^changed: \[` + n + `\]`).MatchString(joinTask)
		ci, _ := sim.Cluster(n)
		if ok != (ci.Name == "lab") {
			t.Errorf("%s: the join task succeeded=%v, the simulator says cluster %q", n, ok, ci.Name)
		}
		// a failed join says why: the module's wait (C4) or PVE's refusal
		// (the second addnode while the first joiner finishes: no quorum)
		fatal := regexp.MustCompile(`(?m)^fatal: \[` + n + `\]: .*$`).FindString(joinTask)
		if !ok && !strings.Contains(fatal, "C4") && !strings.Contains(fatal, "no quorum") && !strings.Contains(fatal, "got timeout") {
			t.Errorf("%s failed without saying it met another join (C4) or PVE's refusal: %s", n, fatal)
		}
		// The join was sent (pvecm add ran, or the join task started), so
		// it can never end "nothing changed" (issue 23 §2): changed, the
		// join unverified, and the message says what the read found.
		if !ok && (!strings.Contains(fatal, `"changed": true`) || !strings.Contains(fatal, `"changes_unverified": ["join `+n) || !strings.Contains(fatal, "still standalone")) {
			t.Errorf("%s: a join that was sent and did not happen must be changed, listed as unverified, and say the node is still standalone: %s", n, fatal)
		}
	}
	var joins []string
	for _, r := range sim.Requests() {
		if r.Method == "POST" && r.Path == "/cluster/config/join" {
			joins = append(joins, fmt.Sprintf("%s at %s (status %d)", r.Node, r.Time.Format("15:04:05.000"), r.Status))
		}
	}
	t.Logf("join requests: %v", joins)
	again, err := labtest.Playbook(t, lab, coll, vars, filepath.Join(repo, "playbooks", "cluster.yml"))
	if err != nil {
		t.Fatalf("the role after parallel joins: %v\n%s", err, again)
	}
	if ci, _ := sim.Cluster("pve01"); len(ci.Nodes) != 3 {
		t.Errorf("after the role: %+v", ci)
	}
}

// Faults on the lab during the role's API joins (PVE 8): once a join
// request is sent, the primary's API resets connections and the joiner's
// answers 596 and slowly while it restarts (C5). The role still forms the
// cluster, every node reads back three members.
func TestLabAPIJoinFaultsPVE8(t *testing.T) {
	t.Parallel()
	lab, bin := labtest.Start(t, 8, 3)
	sim := lab.Sim()
	repo, _ := labctl.RepoRoot()
	coll := labtest.InstallCollection(t, repo, bin)
	vars := filepath.Join(t.TempDir(), "pve.yml")
	if err := os.WriteFile(vars, []byte(seedVars+fmt.Sprintf("pve_cluster_join_method: api\npve_root_password: %q\n", lab.Credentials().Password)), 0o600); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	injected := make(chan int, 1)
	go func() {
		seen := map[string]bool{}
		for {
			select {
			case <-stop:
				injected <- len(seen)
				return
			case <-time.After(5 * time.Millisecond):
			}
			for _, r := range sim.Requests() {
				if r.Method != "POST" || r.Path != "/cluster/config/join" || seen[r.Node] {
					continue
				}
				seen[r.Node] = true
				sim.Faults().Add(pvesim.Fault{Node: "pve01", Method: "GET", Path: "/cluster/status", Kind: pvesim.FaultReset, Count: 3})
				sim.Faults().Add(pvesim.Fault{Node: r.Node, Method: "GET", Path: "/cluster/status", Kind: pvesim.FaultError, Status: 596, Message: "Connection timed out", Count: 6})
				sim.Faults().Add(pvesim.Fault{Node: r.Node, Method: "GET", Path: "/**", Kind: pvesim.FaultLatency, Delay: 500 * time.Millisecond, Count: 4})
			}
		}
	}()
	out, err := labtest.Playbook(t, lab, coll, vars, filepath.Join(repo, "playbooks", "cluster.yml"))
	close(stop)
	if n := <-injected; n != 2 {
		t.Errorf("faults injected during %d joins, want 2", n)
	}
	fired := 0
	for _, r := range sim.Requests() {
		if r.Fault != "" {
			fired++
		}
	}
	t.Logf("%d requests met an injected fault", fired)
	if err != nil {
		t.Fatalf("cluster.yml under faults: %v\n%s", err, out)
	}
	if fired < 6 {
		t.Errorf("only %d faults fired: the run did not meet them", fired)
	}
	for _, n := range lab.Nodes() {
		if ci, _ := sim.Cluster(n.Name); ci.Name != "lab" || len(ci.Nodes) != 3 {
			t.Errorf("%s: %+v", n.Name, ci)
		}
	}
}
