package truth

// A node the cluster phase joins in this same run (issue 23 §6): `site
// --limit pve03` grows a cluster of two by one, through the storage, clone
// and ha phases. A real run reaches those phases with pve03 a member: its
// API shows the cluster's storage.cfg and guests. A check run joins
// nothing, so on pve03 itself it would see a standalone node's (no storage
// nvme-vm, local without snippets, no template): it predicted creating the
// storage and a phantom local change where the real run only adds pve03 to
// nvme-vm's nodes (S1, S2, S4), and its clone phase failed "no template
// named debian-12" where the real run clones VM 201 (K2, K15); its ha phase
// would not find the cluster's guest VM 100 (H3). Its replication's default
// targets ("every other member") and a node_affinity naming pve03 must count
// pve03 as the real run does, pve03 being a member by then: the check run
// read /nodes through the primary, predicted no job to pve03 and refused
// node_affinity's pve03 as "not a member" (created_earlier.nodes names it).
// The check run must read through the member pve03 joins through (the
// primary) and predict exactly what the real run then does:
//
//   - --check --diff writes nothing (overlays, request log) and the tasks it
//     predicts to change are exactly, task by task, those the real run
//     changes, with the same changes listed;
//   - the real run's writes in the request log are the predicted ones: one
//     PUT of nvme-vm carrying exactly the keys predicted (nodes, now with
//     pve03), nothing to local, the clone of the template into VM 201 and
//     one config write of exactly the predicted keys, the replication jobs
//     predicted (VM 101's default targets: pve02 and pve03) and VM 100's
//     node affinity with pve03;
//   - the converged site then predicts nothing for pve03.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
)

// joinerVars: the seed's variables for a cluster "lab" of pve01, pve02
// (labtest.FormClusterOf) that pve03 joins, one VM cloned on pve01, and two
// guests of the cluster made highly available: VM 100 (no replication) with
// a node affinity naming the joiner, VM 101 (a disk on the ZFS pool)
// replicated to the default targets, every other member.
const joinerVars = `zfs_pool_name: nvme-vm
zfs_pool_device: /dev/nvme0n1
zfs_arc_max_gb: 4
pve_cluster_name: lab
pve_cluster_primary: pve01
lab_domain: lab.example
pve_clone_vms:
  - vmid: 201
    name: web-1
    template: debian-12
    node: pve01
    cores: 2
    memory: 2048
pve_ha_guests:
  - vmid: 100
    type: vm
    state: stopped
    targets: []
    node_affinity: {pve01: 2, pve03: 1}
  - vmid: 101
    type: vm
    state: stopped
`

// PVE 9 only (issue 27 §3, CI time: 140 s on PVE 8). Reading through the
// primary is the same code on both versions; what differs, a node affinity
// naming the joiner written as an HA group on PVE 8, is proven on both
// versions in-process (pve_ha's TestCheckModeJoinerCountsAsMember and
// TestCheckModeGuestNotYetCreated), and PVE 8's HA groups on a real site by
// TestTruthSuitePVE8.
func TestLabJoinerPredictsThroughPrimaryPVE9(t *testing.T) { joinerSuite(t, 9) }

func joinerSuite(t *testing.T, pve int) {
	t.Parallel() // see suite
	lab, bin := labtest.StartWith(t, pve, 3, func(o *labctl.Options) {
		o.SimConfig = func(c *pvesim.Config) { c.ReplicationInterval, c.HADelay = time.Second, 300*time.Millisecond }
	})
	sim := lab.Sim()
	// The ZFS pool the zfs phase made on every node (VM 101's disk, its
	// replicas on pve02 and pve03).
	for _, n := range []string{"pve01", "pve02", "pve03"} {
		if out, err := lab.SSH(n, "zpool create -o ashift=12 -m /nvme-vm nvme-vm /dev/nvme0n1"); err != nil {
			t.Fatalf("zpool create on %s: %v %s", n, err, out)
		}
	}
	labtest.FormClusterOf(t, lab, 2)
	// What the storage phase left for the two members (S2, S4), written as
	// PVE writes storage.cfg: the simulator reads it back on every call.
	cfg, _, err := sim.ReadPmxcfs("pve01", "storage.cfg")
	if err != nil {
		t.Fatal(err)
	}
	sections := strings.Split(strings.TrimSpace(cfg), "\n\n")
	for i, sec := range sections {
		if !strings.HasPrefix(sec, "dir: local\n") {
			continue
		}
		lines := strings.Split(sec, "\n")
		for j, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), "content ") {
				lines[j] = "\tcontent iso,vztmpl,backup,import,snippets"
			}
		}
		sections[i] = strings.Join(lines, "\n")
	}
	sections = append(sections, "zfspool: nvme-vm\n\tpool nvme-vm\n\tcontent images,rootdir\n\tnodes pve01,pve02\n\tsparse 1")
	if err := sim.WritePmxcfs("pve01", "storage.cfg", strings.Join(sections, "\n\n")+"\n", false); err != nil {
		t.Fatal(err)
	}
	if err := sim.AddGuest("pve01", template); err != nil {
		t.Fatal(err)
	}
	if err := sim.AddGuest("pve01", pvesim.GuestSpec{VMID: 100, Config: map[string]string{
		"name": "db-0", "scsi0": "local-lvm:2", "memory": "512"}}); err != nil {
		t.Fatal(err)
	}
	if err := sim.AddGuest("pve01", pvesim.GuestSpec{VMID: 101, Config: map[string]string{
		"name": "db-1", "scsi0": "nvme-vm:2", "memory": "512"}}); err != nil {
		t.Fatal(err)
	}
	repo, _ := labctl.RepoRoot()
	s := &site{t: t, lab: lab, sim: sim, coll: labtest.InstallCollection(t, repo, bin),
		pb: filepath.Join(repo, "playbooks", "site.yml"), dir: t.TempDir()}
	s.vars = filepath.Join(s.dir, "pve.yml")
	if err := os.WriteFile(s.vars, []byte(joinerVars), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func() { t.Log("\n" + strings.Join(s.report, "\n")) }()
	grow := []string{"--limit", "pve03", "--tags", "cluster,storage,clone,ha"}

	predicted, writes := s.checkRun("--limit pve03 --check --diff", grow...)
	checkLog := s.log
	sim.ResetRequests()
	real := s.run("--limit pve03", grow...)
	reqs := sim.Requests()
	s.table(fmt.Sprintf("PVE %d, site --limit pve03 (pve03 joins)", pve), predicted, real, writes)

	if p, r := predicted.changed(), real.changed(); !slices.Equal(p, r) || len(r) == 0 {
		t.Errorf("check mode predicted these tasks to change:\n  %s\nthe real run changed:\n  %s\ncheck run:\n%s",
			strings.Join(p, "\n  "), strings.Join(r, "\n  "), checkLog)
	}
	changes := func(p plan, phase string) []string {
		var out []string
		for _, x := range p.Tasks {
			if x.Phase == phase && x.Changed {
				out = append(out, x.Changes...)
			}
		}
		return out
	}
	for _, phase := range []string{"storage", "clone", "ha"} {
		if p, r := changes(predicted, phase), changes(real, phase); !slices.Equal(p, r) || len(r) == 0 {
			t.Errorf("%s phase: check mode predicted %q, the real run made %q", phase, p, r)
		}
	}
	// The storage phase only adds pve03 to nvme-vm's nodes: no create, and
	// local already allows snippets (S4) in the cluster pve03 joins.
	if got, want := changes(predicted, "storage"), []string{"update storage nvme-vm (nodes)"}; !slices.Equal(got, want) {
		t.Errorf("S1/S2: the storage phase predicted %q, want only %q", got, want)
	}

	// The real run's writes, from the request log: exactly the predicted keys.
	var storageWrites, cloneWrites, configWrites, jobWrites, affinityWrites []pvesim.Request
	for _, r := range reqs {
		switch {
		case !r.Mutating():
		case strings.HasPrefix(r.Path, "/storage"):
			storageWrites = append(storageWrites, r)
		case strings.HasSuffix(r.Path, "/qemu/9000/clone"):
			cloneWrites = append(cloneWrites, r)
		case strings.HasSuffix(r.Path, "/qemu/201/config"):
			configWrites = append(configWrites, r)
		case r.Method == "POST" && r.Path == "/cluster/replication":
			jobWrites = append(jobWrites, r)
		case r.Method == "POST" && (r.Path == "/cluster/ha/groups" || r.Path == "/cluster/ha/rules"):
			affinityWrites = append(affinityWrites, r)
		}
	}
	// The keys a write sets: its parameters but the digest and those the
	// path carries (storage, node, vmid).
	keys := func(r pvesim.Request) []string {
		var out []string
		segments := strings.Split(r.Path, "/")
		for k, v := range r.Params {
			if k != "digest" && !slices.Contains(segments, v) {
				out = append(out, k)
			}
		}
		slices.Sort(out)
		return out
	}
	// "update storage nvme-vm (nodes)", "configure VM 201: cores, memory"
	listed := func(changes []string, prefix, open, close string) []string {
		for _, c := range changes {
			if rest, ok := strings.CutPrefix(c, prefix); ok {
				rest = strings.TrimSuffix(strings.TrimPrefix(rest, open), close)
				out := strings.Split(rest, ", ")
				slices.Sort(out)
				return out
			}
		}
		return nil
	}
	wantStorage := listed(changes(predicted, "storage"), "update storage nvme-vm ", "(", ")")
	if len(storageWrites) != 1 || storageWrites[0].Method != "PUT" || storageWrites[0].Path != "/storage/nvme-vm" ||
		!slices.Equal(keys(storageWrites[0]), wantStorage) || storageWrites[0].Params["nodes"] != "pve01,pve02,pve03" {
		t.Errorf("S1/S2: the real run's storage writes %+v, want one PUT /storage/nvme-vm of the predicted keys %q with nodes pve01,pve02,pve03 (nothing to local, S4)",
			storageWrites, wantStorage)
	}
	if len(cloneWrites) != 1 || cloneWrites[0].Path != "/nodes/pve01/qemu/9000/clone" || cloneWrites[0].Params["newid"] != "201" {
		t.Errorf("K2: the real run's clone writes %+v, want one clone of template 9000 into VM 201 on pve01", cloneWrites)
	}
	wantConfig := listed(changes(predicted, "clone"), "configure VM 201: ", "", "")
	if len(configWrites) != 1 || !slices.Equal(keys(configWrites[0]), wantConfig) {
		var got [][]string
		for _, r := range configWrites {
			got = append(got, keys(r))
		}
		t.Errorf("K5: the real run's config writes of VM 201 carry keys %q, check mode predicted %q", got, wantConfig)
	}
	// The replication jobs: "create replication job 101-1 of guest 101 to
	// pve03" predicted, one POST of id 101-1, target pve03 in the log.
	var predictedJobs, madeJobs []string
	for _, c := range changes(predicted, "ha") {
		if rest, ok := strings.CutPrefix(c, "create replication job "); ok {
			id, rest, _ := strings.Cut(rest, " ")
			_, target, _ := strings.Cut(rest, " to ")
			predictedJobs = append(predictedJobs, id+" to "+target)
		}
	}
	for _, r := range jobWrites {
		madeJobs = append(madeJobs, r.Params["id"]+" to "+r.Params["target"])
	}
	slices.Sort(predictedJobs)
	slices.Sort(madeJobs)
	if want := []string{"101-0 to pve02", "101-1 to pve03"}; !slices.Equal(madeJobs, want) || !slices.Equal(predictedJobs, madeJobs) {
		t.Errorf("H1: the real run created replication jobs %q (want %q: every other member, pve03 joined), check mode predicted %q",
			madeJobs, want, predictedJobs)
	}
	// VM 100's node affinity names the joiner: predicted (above, the ha
	// phase's changes) and written with pve03 in its nodes.
	if len(affinityWrites) != 1 || !slices.Contains(pveapiNodes(affinityWrites[0].Params["nodes"]), "pve03:1") {
		t.Errorf("the real run's HA group/rule writes %+v, want one naming pve03:1 in its nodes", affinityWrites)
	}
	if ci, _ := sim.Cluster("pve03"); ci.Name != "lab" || len(ci.Nodes) != 3 {
		t.Errorf("pve03 did not join: %+v", ci)
	}

	// Converged: pve03 a member, nothing left to predict.
	if p, _ := s.checkRun("converged --limit pve03 --check", grow...); len(p.changed()) != 0 {
		t.Errorf("--check --limit pve03 on the converged cluster predicts:\n  %s", strings.Join(p.changed(), "\n  "))
	}
}

// pveapiNodes splits an HA node list ("pve01:2,pve03:1") into its entries.
func pveapiNodes(list string) []string {
	out := strings.Split(list, ",")
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	return out
}
