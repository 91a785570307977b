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
	"regexp"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/aptrepo"
	"github.com/gopve/proxmox/modules-src/lab/labctl"
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
		t.Skip("ansible-playbook is not installed")
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

func TestLabPlaybooksPVE8(t *testing.T) { testPlaybooks(t, 8) }
func TestLabPlaybooksPVE9(t *testing.T) { testPlaybooks(t, 9) }

func testPlaybooks(t *testing.T, pve int) {
	lab, bin := startLab(t, pve, 3)
	repo, _ := labctl.RepoRoot()
	r, _ := aptrepo.ReleaseFor(pve)
	coll := installCollection(t, repo, bin)
	vars := filepath.Join(t.TempDir(), "pve.yml")
	v := seedVars
	if pve == 9 {
		// The lab's trixie repository has no tmux candidate (its stand-in
		// conflicts with trixie's libtinfo6): the seed's list without it.
		v += "pve_base_extra_packages: [vim, htop, curl, git, lsb-release]\n"
	}
	if err := os.WriteFile(vars, []byte(v), 0o644); err != nil {
		t.Fatal(err)
	}
	hosts := []string{"pve01", "pve02", "pve03"}
	for _, pb := range []string{"base.yml", "zfs.yml"} {
		path := filepath.Join(repo, "playbooks", pb)
		before := labState(t, lab, hosts...)
		zfsBefore, _ := lab.SSH("pve01", "zpool list -H -o name")
		out, err := playbook(t, lab, coll, vars, path, "--check", "--diff")
		if err != nil {
			t.Fatalf("%s --check: %v\n%s", pb, err, out)
		}
		zfsAfter, _ := lab.SSH("pve01", "zpool list -H -o name")
		if after := labState(t, lab, hosts...); after != before || zfsAfter != zfsBefore {
			t.Fatalf("%s --check wrote to the nodes", pb)
		}
		for _, h := range hosts {
			if recapChanged(t, out, h) == 0 {
				t.Errorf("%s --check on %s predicts no change on a fresh node:\n%s", pb, h, out)
			}
		}
		out, err = playbook(t, lab, coll, vars, path)
		if err != nil {
			t.Fatalf("%s: %v\n%s", pb, err, out)
		}
		out, err = playbook(t, lab, coll, vars, path)
		if err != nil {
			t.Fatalf("%s second run: %v\n%s", pb, err, out)
		}
		for _, h := range hosts {
			if n := recapChanged(t, out, h); n != 0 {
				t.Errorf("%s second run on %s: changed=%d, want 0:\n%s", pb, h, n, out)
			}
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
