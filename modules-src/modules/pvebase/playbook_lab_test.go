package pvebase

// The collection as users run it: playbooks/base.yml and playbooks/zfs.yml
// (the roles, the generated action plugins, the binary) under the installed
// ansible-playbook, against a 3-node lab, with the seed's group_vars. This is
// the seed's story replayed: check mode first (nothing written on any node),
// then the real run must leave every node on the new pve-manager (the seed's
// B2 bug left one behind with a green recap), then changed=0 everywhere.

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
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

// installCollection assembles gopve.proxmox from this tree (galaxy.yml,
// meta, plugins, roles, the binary for this machine) under a collections path.
func installCollection(t *testing.T, repo, bin string) string {
	t.Helper()
	base := filepath.Join(t.TempDir(), "collections")
	dst := filepath.Join(base, "ansible_collections", "gopve", "proxmox")
	if err := os.MkdirAll(filepath.Join(dst, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"galaxy.yml", "meta", "plugins", "roles"} {
		if out, err := exec.Command("cp", "-r", filepath.Join(repo, d), dst).CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v %s", d, err, out)
		}
	}
	if out, err := exec.Command("cp", bin, filepath.Join(dst, "bin", "gopve_linux_x86_64")).CombinedOutput(); err != nil {
		t.Fatalf("copy binary: %v %s", err, out)
	}
	return base
}

func playbook(t *testing.T, lab *labctl.Lab, collections, vars, pb string, extra ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		testenv.Skip(t, "ansible-playbook is not installed")
	}
	args := append([]string{"-i", lab.Inventory(), "-e", "@" + vars, pb}, extra...)
	cmd := exec.Command("ansible-playbook", args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "ANSIBLE_NOCOLOR=1", "ANSIBLE_FORCE_COLOR=0",
		"ANSIBLE_COLLECTIONS_PATH="+collections, "ANSIBLE_LOCAL_TEMP="+filepath.Join(home, "tmp"),
		"ANSIBLE_RETRY_FILES_ENABLED=0")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func recapChanged(t *testing.T, out string, host string) int {
	t.Helper()
	m := regexp.MustCompile(host + `\s+: ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=0`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no clean recap line for %s:\n%s", host, out)
	}
	n := 0
	for _, c := range m[1] {
		n = n*10 + int(c-'0')
	}
	return n
}

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
	coll := installCollection(t, repo, bin)
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
			check, err = playbook(t, lab, coll, vars, path, "--check", "--diff")
			if err != nil {
				t.Fatalf("%s --check: %v\n%s", pb, err, check)
			}
		})
		if after := playState(t, lab, hosts); after != before {
			t.Fatalf("%s --check wrote to the nodes:\nbefore:\n%s\nafter:\n%s", pb, before, after)
		}
		for _, h := range hosts {
			if recapChanged(t, check, h) == 0 {
				t.Errorf("%s --check on %s predicts no change on a fresh node:\n%s", pb, h, check)
			}
		}
		real, err := playbook(t, lab, coll, vars, path)
		if err != nil {
			t.Fatalf("%s: %v\n%s", pb, err, real)
		}
		// The real run changes exactly what check mode predicted: the same
		// count per host, and the same tasks.
		predicted, changed := changedTasks(check), changedTasks(real)
		for _, h := range hosts {
			if c, r := recapChanged(t, check, h), recapChanged(t, real, h); c != r {
				t.Errorf("%s on %s: --check predicted changed=%d, the real run changed=%d", pb, h, c, r)
			}
			if !reflect.DeepEqual(predicted[h], changed[h]) {
				t.Errorf("%s on %s: --check predicted changes in tasks %q, the real run changed %q", pb, h, predicted[h], changed[h])
			}
		}
		converged := playState(t, lab, hosts)
		again, err := playbook(t, lab, coll, vars, path)
		if err != nil {
			t.Fatalf("%s second run: %v\n%s", pb, err, again)
		}
		for _, h := range hosts {
			if n := recapChanged(t, again, h); n != 0 {
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
