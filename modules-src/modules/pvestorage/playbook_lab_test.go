package pvestorage

// The role as users run it: playbooks/zfs.yml then playbooks/storage.yml
// under the real ansible-playbook, on a 3-node cluster, with the seed's
// group_vars. S3: the play targets the pve group and the storage tasks run
// once (the request log has one create and one update, not three); S1: every
// member sees the result; check mode writes nothing; the second run changes
// nothing.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
)

const seedVars = `zfs_pool_name: nvme-vm
zfs_pool_device: /dev/nvme0n1
zfs_arc_max_gb: 4
pve_cluster_primary: pve01
`

// PVE 9 only (issue 27 §3, CI time): the storage API the role drives is
// the same on both versions, proven on PVE 8 and 9 in-process
// (module_test.go), and the storage phase runs on a PVE 8 site under the
// real playbook in TestTruthSuitePVE8.
func TestLabPlaybookPVE9(t *testing.T) {
	t.Parallel()
	testPlaybook(t, 9)
}

func testPlaybook(t *testing.T, pve int) {
	lab, bin := labtest.Start(t, pve, 3)
	l := &labRun{t: t, lab: lab, sim: lab.Sim()}
	nodes := lab.Nodes()
	labtest.FormCluster(t, lab)
	repo, _ := labctl.RepoRoot()
	coll := labtest.InstallCollection(t, repo, bin)
	vars := filepath.Join(t.TempDir(), "pve.yml")
	if err := os.WriteFile(vars, []byte(seedVars), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := labtest.Playbook(t, lab, coll, vars, filepath.Join(repo, "playbooks", "zfs.yml")); err != nil {
		t.Fatalf("zfs.yml: %v\n%s", err, out)
	}
	pb := filepath.Join(repo, "playbooks", "storage.yml")
	count := func(method, path string) int {
		n := 0
		for _, r := range l.sim.Requests() {
			if r.Method == method && r.Path == path {
				n++
			}
		}
		return n
	}

	l.sim.ResetRequests()
	check, err := labtest.Playbook(t, lab, coll, vars, pb, "--check", "--diff")
	if err != nil {
		t.Fatalf("storage.yml --check: %v\n%s", err, check)
	}
	if w := l.writes(); len(w) != 0 {
		t.Fatalf("storage.yml --check wrote: %+v", w)
	}
	if labtest.RecapChanged(t, check, "pve01") != 2 || !strings.Contains(check, "+zfspool: nvme-vm") {
		t.Errorf("--check --diff predicts the create and the local update:\n%s", check)
	}

	l.sim.ResetRequests()
	real, err := labtest.Playbook(t, lab, coll, vars, pb)
	if err != nil {
		t.Fatalf("storage.yml: %v\n%s", err, real)
	}
	if count("POST", "/storage") != 1 || count("PUT", "/storage/local") != 1 || len(l.writes()) != 2 {
		t.Errorf("S3: want one create and one update for the cluster, got %+v", l.writes())
	}
	out := l.ssh("pve03", "pvesh get /storage/nvme-vm --output-format json; pvesh get /storage/local --output-format json")
	for _, want := range []string{`"pool":"nvme-vm"`, `"content":"images,rootdir"`, `"nodes":"pve01,pve02,pve03"`, `"sparse":1`, "snippets"} {
		if !strings.Contains(strings.ReplaceAll(out, " ", ""), want) {
			t.Errorf("S1/S2/S4: pve03 sees %s, want %s", out, want)
		}
	}

	l.sim.ResetRequests()
	again, err := labtest.Playbook(t, lab, coll, vars, pb)
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, again)
	}
	for _, n := range nodes {
		if c := labtest.RecapChanged(t, again, n.Name); c != 0 {
			t.Errorf("second run changed %d on %s:\n%s", c, n.Name, again)
		}
	}
	if w := l.writes(); len(w) != 0 || len(l.sim.Requests()) > 4 {
		t.Errorf("second run: %d requests (two GETs per task at most), writes %+v", len(l.sim.Requests()), w)
	}

	// module_defaults for group/gopve.proxmox.api points the module at pve02's
	// API, once on the node and once delegated to the controller.
	info, _ := l.sim.Node("pve02")
	creds := lab.Credentials()
	apiVars := filepath.Join(t.TempDir(), "api.yml")
	os.WriteFile(apiVars, []byte(fmt.Sprintf("api_token_id: %q\napi_token_secret: %q\napi_fp: %q\napi_addr: %q\n",
		creds.TokenID, creds.TokenSecret, info.Fingerprint, info.Addr)), 0o600)
	defaultsPB := filepath.Join(t.TempDir(), "defaults.yml")
	os.WriteFile(defaultsPB, []byte(`- hosts: pve
  gather_facts: false
  module_defaults:
    group/gopve.proxmox.api:
      api_host: "{{ api_addr }}"
      api_token_id: "{{ api_token_id }}"
      api_token_secret: "{{ api_token_secret }}"
      api_fingerprint: "{{ api_fp }}"
  tasks:
    - name: On the node, through pve02's API
      gopve.proxmox.pve_storage: {storage: nvme-vm, type: zfspool, pool: nvme-vm, sparse: true}
      run_once: true
    - name: Delegated to the controller
      gopve.proxmox.pve_storage: {storage: nvme-vm, type: zfspool, content: [images, rootdir]}
      run_once: true
      delegate_to: localhost
`), 0o644)
	l.sim.ResetRequests()
	out, err = labtest.Playbook(t, lab, coll, apiVars, defaultsPB)
	if err != nil {
		t.Fatalf("module_defaults play: %v\n%s", err, out)
	}
	reqs := l.sim.Requests()
	for _, r := range reqs {
		if r.Node != "pve02" || r.Method != "GET" {
			t.Errorf("module_defaults: want GETs at pve02 only, got %s %s at %s", r.Method, r.Path, r.Node)
		}
	}
	if len(reqs) != 4 || labtest.RecapChanged(t, out, "pve01") != 0 {
		t.Errorf("module_defaults: %d requests, want two per task:\n%s", len(reqs), out)
	}
}
