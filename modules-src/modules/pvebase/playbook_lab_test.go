package pvebase

// The collection as users run it: playbooks/base.yml and playbooks/zfs.yml
// (the roles, the generated action plugins, the binary) under the installed
// ansible-playbook, against a 3-node lab, with the seed's group_vars. This is
// the seed's story replayed: check mode first (nothing written on any node),
// then the real run must leave every node on the new pve-manager (the seed's
// B2 bug left one behind with a green recap), then changed=0 everywhere.

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/aptrepo"
	"github.com/gopve/proxmox/modules-src/lab/labctl"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
)

// seedVars is the seed's group_vars/pve.yml.
const seedVars = `zfs_pool_name: nvme-vm
zfs_pool_device: /dev/nvme0n1
zfs_arc_max_gb: 4
cluster_network: 192.168.3.0/24
`

// changedTasks reads ansible-playbook's default output: per host, the
// names of the tasks (and handlers) that reported changed, in order, each
// once (a loop prints one line per item).
func changedTasks(out string) map[string][]string {
	task := ""
	header := regexp.MustCompile(`^(?:TASK|RUNNING HANDLER) \[(.*)\] \*+$`)
	changed := regexp.MustCompile(`^changed: \[([^\]\s]+)`)
	got := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		if m := header.FindStringSubmatch(line); m != nil {
			task = m[1]
			continue
		}
		if m := changed.FindStringSubmatch(line); m != nil {
			h := m[1]
			if l := got[h]; len(l) == 0 || l[len(l)-1] != task {
				got[h] = append(got[h], task)
			}
		}
	}
	return got
}

// playState is, per host, everything the two playbooks may touch (nodeState),
// the pool and its timers, and the side-effect logs (nodeLogs).
func playState(t *testing.T, lab *labctl.Lab, hosts []string) string {
	t.Helper()
	out := ""
	for _, h := range hosts {
		o, err := lab.SSH(h, nodeState+"; "+poolState+"; "+nodeLogs)
		if err != nil {
			t.Fatal(err)
		}
		out += h + ":\n" + o
	}
	return out
}

// poolState: pools, datasets with their properties, scrub timers and the
// stand-ins' state files.
const poolState = `zpool list -H -o name; zfs get -H -o name,property,value,source all 2>/dev/null; for p in monthly weekly; do systemctl is-enabled zfs-scrub-$p@nvme-vm.timer; systemctl is-active zfs-scrub-$p@nvme-vm.timer; done; cd /var/lib/gopve-lab && sha256sum zfs.json 2>&1; python3 -c "import json; d=json.load(open('systemd.json')); [print(k, v.get('enabled', ''), v['active']) for k, v in sorted(d['units'].items())]" 2>&1; true`

func TestLabPlaybooksPVE8(t *testing.T) { testPlaybooks(t, 8) }
func TestLabPlaybooksPVE9(t *testing.T) { testPlaybooks(t, 9) }

func testPlaybooks(t *testing.T, pve int) {
	lab, bin := labtest.Start(t, pve, 3)
	repo, _ := labctl.RepoRoot()
	r, _ := aptrepo.ReleaseFor(pve)
	coll := labtest.InstallCollection(t, repo, bin)
	vars := filepath.Join(t.TempDir(), "pve.yml")
	// The seed's group_vars as they are: the role's default
	// pve_base_extra_packages is the seed's list, tmux included.
	if err := os.WriteFile(vars, []byte(seedVars), 0o644); err != nil {
		t.Fatal(err)
	}
	hosts := []string{"pve01", "pve02", "pve03"}
	for _, pb := range []string{"base.yml", "zfs.yml"} {
		path := filepath.Join(repo, "playbooks", pb)
		before := playState(t, lab, hosts)
		var check string
		// the whole overlay upper directory of every node, not a list of paths
		labtest.NoWrites(t, lab, pb+" --check", func() {
			var err error
			check, err = labtest.Playbook(t, lab, coll, vars, path, "--check", "--diff")
			if err != nil {
				t.Fatalf("%s --check: %v\n%s", pb, err, check)
			}
		})
		if after := playState(t, lab, hosts); after != before {
			t.Fatalf("%s --check wrote to the nodes:\nbefore:\n%s\nafter:\n%s", pb, before, after)
		}
		for _, h := range hosts {
			if labtest.RecapChanged(t, check, h) == 0 {
				t.Errorf("%s --check on %s predicts no change on a fresh node:\n%s", pb, h, check)
			}
		}
		real, err := labtest.Playbook(t, lab, coll, vars, path)
		if err != nil {
			t.Fatalf("%s: %v\n%s", pb, err, real)
		}
		// The real run changes exactly what check mode predicted: the same
		// count per host, and the same tasks.
		predicted, changed := changedTasks(check), changedTasks(real)
		for _, h := range hosts {
			if c, r := labtest.RecapChanged(t, check, h), labtest.RecapChanged(t, real, h); c != r {
				t.Errorf("%s on %s: --check predicted changed=%d, the real run changed=%d", pb, h, c, r)
			}
			if !reflect.DeepEqual(predicted[h], changed[h]) {
				t.Errorf("%s on %s: --check predicted changes in tasks %q, the real run changed %q", pb, h, predicted[h], changed[h])
			}
		}
		converged := playState(t, lab, hosts)
		again, err := labtest.Playbook(t, lab, coll, vars, path)
		if err != nil {
			t.Fatalf("%s second run: %v\n%s", pb, err, again)
		}
		for _, h := range hosts {
			if n := labtest.RecapChanged(t, again, h); n != 0 {
				t.Errorf("%s second run on %s: changed=%d, want 0:\n%s", pb, h, n, again)
			}
		}
		if after := playState(t, lab, hosts); after != converged {
			t.Errorf("%s second run (changed=0) changed the nodes:\nbefore:\n%s\nafter:\n%s", pb, converged, after)
		}
	}
	for _, h := range hosts {
		v, _ := lab.SSH(h, "pveversion; zpool list -H -o name; zfs get -H -o value mountpoint nvme-vm; cat /etc/modprobe.d/zfs.conf")
		want := "pve-manager/" + r.ManagerNew + "/"
		if !strings.HasPrefix(v, want) || !strings.Contains(v, "\nnvme-vm\n/nvme-vm\noptions zfs zfs_arc_max=4294967296\n") {
			t.Errorf("%s after both playbooks (B2: every node on %s; Z1/Z5; B4):\n%s", h, r.ManagerNew, v)
		}
	}
}
