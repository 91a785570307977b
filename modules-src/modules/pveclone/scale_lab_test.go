package pveclone

// Issue 17's scale proof, the way a user runs it: playbooks/clone.yml over
// one inventory host per VM (seed 002's per-host shape), forks 10 and the
// role's bound of four clones at once (K13), on a 5-node lab, every VM from
// one template on shared storage and spread over the five nodes (K2). The
// cost is counted in the lab's request log, not timed: a first half of the
// VMs, then the second half next to them, must cost the same per VM
// (nothing the module reads grows with the VMs already there); the
// converged run changes nothing and reads at most three times per VM.
// Wall times are printed only.
//
// The proof is a count per VM, so it holds at 20 VMs (10 then 10) as at
// 100: `go test` (CI) runs 20, `make bench` runs 100 (GOPVE_SCALE_VMS=100,
// hack/bench-clone.sh), where the wall times are worth printing (issue 27
// §3: the 100-VM run was CI's single largest cost).

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
	"github.com/gopve/proxmox/modules-src/lab/labctl"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

const (
	scaleNodes = 5
	scaleBase  = 1000 // first VMID
)

// scaleVMCount is how many VMs the scale proof builds: 20 by default (CI),
// the least that still proves it, or GOPVE_SCALE_VMS (an even number from
// 20 on: two halves of at least ten, enough for forks 10 to press on the
// bound of four).
func scaleVMCount(t *testing.T) int {
	s := os.Getenv("GOPVE_SCALE_VMS")
	if s == "" {
		return 20
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 20 || n%2 != 0 {
		t.Fatalf("GOPVE_SCALE_VMS=%q: want an even number of VMs, at least 20", s)
	}
	return n
}

// scaleVM is VM i of the scale test: node, VLAN and address derived from i,
// so the read-back knows what each one must hold.
func scaleVM(i int) (vmid int, node string, tag int, ip string) {
	return scaleBase + i, labctl.NodeName(1 + i%scaleNodes), 10 + i%7, fmt.Sprintf("10.1.%d.%d/16", i/200, 10+i%200)
}

// PVE 9 only (issue 27 §3, CI time): the scale proof is about what the
// module reads per VM, the same code on both versions; PVE 8's clone path
// through the role runs in TestLabPlaybookPerHostPVE8 (8 VMs, twice the
// same bound). Its lab then plays the bare-task typos on PVE 9 (K15, testTypos).
func TestLabPlaybookScaleFiveNodesK13(t *testing.T) {
	t.Parallel()
	testenv.NeedLong(t, "clones through ansible-playbook on a 5-node lab")
	testScale(t, 9, scaleVMCount(t))
}

func testScale(t *testing.T, pve, scaleVMs int) {
	// The lab's copy and allocation times are shortened (counts are the
	// proof here, not how long a copy takes); the storage lock is still
	// taken per allocation, so the bound's contention stays real (K13).
	lab, bin := labtest.StartWith(t, pve, scaleNodes, func(o *labctl.Options) {
		o.SimConfig = func(c *pvesim.Config) {
			c.CloneDuration = 300 * time.Millisecond
			c.AllocDuration = 100 * time.Millisecond
		}
	})
	sim := lab.Sim()
	nodes := lab.Nodes()
	if _, err := sim.CreateCluster(nodes[0].Name, "lab", nodes[0].Addr); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes[1:] {
		if _, err := sim.AddNode(nodes[0].Name, n.Name, n.Addr, false); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	c, err := pveapi.Connect(ctx, labConn(t, lab), pveapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Dispatch(ctx, pveapi.Write{Method: "POST", Path: "/storage", What: "create storage shared",
		Params: url.Values{"storage": {"shared"}, "type": {"nfs"}, "server": {"192.0.2.10"}, "export": {"/srv/vm"},
			"path": {"/mnt/pve/shared"}, "content": {"images"}},
		Settle: func(context.Context) (bool, error) { return false, nil }, Creates: true}); err != nil {
		t.Fatalf("shared storage: %v", err)
	}
	if err := sim.AddGuest("pve01", pvesim.GuestSpec{VMID: 9000, Template: true, Config: map[string]string{
		"name": "debian-12", "scsi0": "shared:2", "ide2": "shared:cloudinit", "net0": "virtio,bridge=vmbr0",
		"memory": "1024", "ostype": "l26"}}); err != nil {
		t.Fatal(err)
	}

	repo, _ := labctl.RepoRoot()
	coll := labtest.InstallCollection(t, repo, bin)
	dir := t.TempDir()
	vars := filepath.Join(dir, "vars.yml")
	if err := os.WriteFile(vars, []byte("pve_clone_concurrency: 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Two halves under pve_vms: the same inventory a user keeps, the
	// second batch joining the first with --limit.
	var inv strings.Builder
	inv.WriteString("pve_vms:\n  children:\n")
	for b := 0; b < 2; b++ {
		fmt.Fprintf(&inv, "    batch%d:\n      hosts:\n", b+1)
		for i := b * scaleVMs / 2; i < (b+1)*scaleVMs/2; i++ {
			vmid, node, tag, ip := scaleVM(i)
			fmt.Fprintf(&inv, "        vm%d: {pve_clone_vm: {vmid: %d, name: vm%d, template: debian-12, node: %s, cores: 2, memory: 2048, "+
				"nets: {net0: {tag: %d}}, ipconfig: {ipconfig0: 'ip=%s'}}}\n", vmid, vmid, vmid, node, tag, ip)
		}
	}
	hosts := filepath.Join(dir, "vms.yml")
	if err := os.WriteFile(hosts, []byte(inv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	pb := filepath.Join(repo, "playbooks", "clone.yml")

	type batch struct {
		name   string
		wall   time.Duration
		reqs   []pvesim.Request
		counts map[string]int
	}
	play := func(name string, from, to int, limit ...string) batch {
		t.Helper()
		sim.ResetRequests()
		start := time.Now()
		out, err := labtest.Playbook(t, lab, coll, vars, pb, append([]string{"-i", hosts, "-f", "10"}, limit...)...)
		wall := time.Since(start)
		if err != nil {
			t.Fatalf("%s: clone.yml: %v\n%s", name, err, out)
		}
		want := 1
		if name == "converged" {
			want = 0
		}
		for i := from; i < to; i++ {
			vmid, _, _, _ := scaleVM(i)
			if got := labtest.RecapChanged(t, out, fmt.Sprintf("vm%d", vmid)); got != want {
				t.Errorf("%s: vm%d changed=%d, want %d", name, vmid, got, want)
			}
		}
		// K13: contention on the shared storage's lock is handled by the
		// bound; nothing about a lock reaches the user, not even a retry.
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "got timeout") || strings.Contains(l, "lock request timeout") || strings.Contains(l, "(K13)") {
				t.Errorf("%s: K13: a lock error surfaced: %s", name, l)
			}
		}
		var reqs []pvesim.Request
		for _, r := range sim.Requests() {
			if r.Path != "/access/ticket" {
				reqs = append(reqs, r)
			}
		}
		// What changed is what the lab saw change: one clone and one
		// config update for each VM of this run that reported changed, and
		// not a single write to any other VM (those already present).
		written := map[string]int{}
		for _, r := range reqs {
			if !r.Mutating() {
				continue
			}
			vmid := vmidOfPath.FindStringSubmatch(r.Path)
			switch {
			case strings.HasSuffix(r.Path, "/clone"):
				written["clone "+r.Params["newid"]]++
			case len(vmid) == 2:
				written[r.Method+" "+vmid[1]+"/"+strings.TrimPrefix(r.Path, vmid[0])]++
			default:
				written[r.Method+" "+r.Path]++
			}
		}
		wantWrites := map[string]int{}
		for i := from; i < to && want == 1; i++ {
			vmid, _, _, _ := scaleVM(i)
			wantWrites[fmt.Sprintf("clone %d", vmid)] = 1
			wantWrites[fmt.Sprintf("PUT %d/config", vmid)] = 1
		}
		if !maps.Equal(written, wantWrites) {
			var diff []string
			for _, k := range slices.Sorted(maps.Keys(written)) {
				if written[k] != wantWrites[k] {
					diff = append(diff, fmt.Sprintf("%s ×%d", k, written[k]))
				}
			}
			for _, k := range slices.Sorted(maps.Keys(wantWrites)) {
				if written[k] == 0 {
					diff = append(diff, k+" missing")
				}
			}
			t.Errorf("%s: the lab's writes differ from one clone and one update per changed VM: %s", name, strings.Join(diff, ", "))
		}
		return batch{name: name, wall: wall, reqs: reqs, counts: requestClasses(reqs)}
	}

	half := scaleVMs / 2
	first := play(fmt.Sprintf("first %d", half), 0, half, "--limit", "batch1")
	second := play(fmt.Sprintf("next %d", half), half, scaleVMs, "--limit", "batch2")

	// Every VM as asked, read from the lab: on its node, unlocked, sized,
	// its NIC's VLAN set and its MAC kept, its address.
	for i := 0; i < scaleVMs; i++ {
		vmid, node, tag, ip := scaleVM(i)
		cfg, err := qemu.GetConfig(ctx, c, node, vmid, false)
		if err != nil {
			t.Errorf("vm%d on %s: %v", vmid, node, err)
			continue
		}
		nets, _ := cfg.Nets()
		if cfg.Lock() != "" || cfg.Values["name"] != fmt.Sprintf("vm%d", vmid) || cfg.Values["cores"] != "2" || cfg.Values["memory"] != "2048" ||
			nets["net0"].Tag != tag || nets["net0"].MAC == "" || cfg.Values["ipconfig0"] != "ip="+ip ||
			!strings.HasPrefix(cfg.Values["scsi0"], fmt.Sprintf("shared:%d/vm-%d-disk-0", vmid, vmid)) {
			t.Errorf("vm%d on %s read back: %v", vmid, node, cfg.Values)
		}
	}
	peak, n := clonePeak(t, c, "pve01")
	if n != scaleVMs || peak > 4 {
		t.Errorf("K13: %d clone tasks on pve01, at most %d at once (want %d, ≤ 4)", n, peak, scaleVMs)
	}

	noop := play("converged", 0, scaleVMs)

	// The table: requests per VM of each kind, batch by batch.
	t.Logf("scale: %d VMs on %d nodes from one template, forks 10, bound 4: %d clone tasks, at most %d at once (PVE %d lab; wall times are this shared machine's, not a target)",
		scaleVMs, scaleNodes, n, peak, pve)
	t.Logf("  %-44s %10s %10s %10s", "requests per VM", first.name, second.name, noop.name)
	classes := slices.Sorted(maps.Keys(first.counts))
	for k := range second.counts {
		if !slices.Contains(classes, k) {
			classes = append(classes, k)
		}
	}
	for k := range noop.counts {
		if !slices.Contains(classes, k) {
			classes = append(classes, k)
		}
	}
	for _, k := range classes {
		t.Logf("  %-44s %10.2f %10.2f %10.2f", k, per(first.counts[k], half), per(second.counts[k], half), per(noop.counts[k], scaleVMs))
	}
	t.Logf("  %-44s %10.2f %10.2f %10.2f", "all", per(len(first.reqs), half), per(len(second.reqs), half), per(len(noop.reqs), scaleVMs))
	t.Logf("  %-44s %10s %10s %10s", "wall", first.wall.Round(time.Second), second.wall.Round(time.Second), noop.wall.Round(time.Second))

	// Linear, not growing with the VMs already present: the second 50 cost
	// what the first 50 did, kind by kind. The requests a VM's sequence
	// makes (reads, the clone, the update) are the same count for each VM;
	// only the polls of a running task depend on how long the task runs on
	// this loaded machine, so they get one poll per VM of margin (the
	// module polls a task once a second, whatever else exists).
	for _, k := range classes {
		a, b := per(first.counts[k], half), per(second.counts[k], half)
		margin := 0.0
		if k == pollClass {
			margin = 1
		}
		if b > a+margin {
			t.Errorf("cost grows with the VMs present: %s: %.2f per VM for the first %d, %.2f for the next %d (margin %.0f)", k, a, half, b, half, margin)
		}
	}

	// The converged run: no write, and at most three reads per VM, each
	// attributed to one VM's run (the version, the cluster's guest list and
	// the VM's own pending config).
	for _, r := range noop.reqs {
		if r.Mutating() {
			t.Errorf("converged run wrote: %s %s", r.Method, r.Path)
		}
	}
	if n := len(noop.reqs); n > 3*scaleVMs {
		t.Errorf("converged run: %d API requests for %d VMs (%.2f per VM, want ≤ 3)", n, scaleVMs, per(n, scaleVMs))
	}
	pending := map[string]int{}
	for _, r := range noop.reqs {
		if strings.HasSuffix(r.Path, "/pending") {
			pending[r.Path]++
		}
	}
	for i := 0; i < scaleVMs; i++ {
		vmid, node, _, _ := scaleVM(i)
		if p := fmt.Sprintf("/nodes/%s/qemu/%d/pending", node, vmid); pending[p] != 1 {
			t.Errorf("converged run read %s %d times, want once (its read-back)", p, pending[p])
		}
	}
	t.Run("typos", func(t *testing.T) { testTypos(t, lab, coll, vars) })
}

func per(n, vms int) float64 { return float64(n) / float64(vms) }

const pollClass = "GET /nodes/{node}/tasks/{upid}/status"

var (
	upidRe = regexp.MustCompile(`UPID:[^/]+`)
	nodeRe = regexp.MustCompile(`/nodes/pve\d+`)
	idRe   = regexp.MustCompile(`/\d+(/|$)`)
	// vmidOfPath is a guest's API path up to its VMID.
	vmidOfPath = regexp.MustCompile(`^/nodes/[^/]+/qemu/(\d+)/`)
)

// requestClasses counts requests by method and path shape (node names,
// VMIDs and task ids folded), the unit of the cost table.
func requestClasses(reqs []pvesim.Request) map[string]int {
	out := map[string]int{}
	for _, r := range reqs {
		p := upidRe.ReplaceAllString(r.Path, "{upid}")
		p = nodeRe.ReplaceAllString(p, "/nodes/{node}")
		p = idRe.ReplaceAllString(p, "/{vmid}$1")
		out[r.Method+" "+p]++
	}
	return out
}

// clonePeak is the most clone tasks the node's task list shows running at
// once (K13's witness), and how many there were.
func clonePeak(t *testing.T, c *pveapi.Client, node string) (peak, n int) {
	t.Helper()
	tasks, err := pveapi.ListTasks(context.Background(), c, node, pveapi.TaskQuery{TypeFilter: "qmclone", Source: "all", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	type ev struct {
		at    int64
		delta int
	}
	var evs []ev
	for _, x := range tasks {
		evs = append(evs, ev{x.StartTime, +1}, ev{x.EndTime, -1})
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].at != evs[j].at {
			return evs[i].at < evs[j].at
		}
		return evs[i].delta < evs[j].delta
	})
	cur := 0
	for _, e := range evs {
		cur += e.delta
		peak = max(peak, cur)
	}
	return peak, len(tasks)
}
