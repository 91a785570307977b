package labtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
	"github.com/gopve/proxmox/modules-src/lab/labctl"
)

// InstallCollection assembles gopve.proxmox from the tree at repo
// (galaxy.yml, meta, plugins, roles, and bin as this machine's binary)
// under a fresh collections path, which it returns.
func InstallCollection(t *testing.T, repo, bin string) string {
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

// Playbook runs the installed ansible-playbook with the lab's inventory,
// extra vars from the file vars, and the collection at collections; it
// returns the output. Skips the test when ansible-playbook is missing.
func Playbook(t *testing.T, lab *labctl.Lab, collections, vars, pb string, extra ...string) (string, error) {
	t.Helper()
	return PlaybookEnv(t, lab, collections, vars, pb, nil, extra...)
}

// PlaybookEnv is Playbook with more environment variables (KEY=value), e.g.
// to enable a callback.
func PlaybookEnv(t *testing.T, lab *labctl.Lab, collections, vars, pb string, env []string, extra ...string) (string, error) {
	t.Helper()
	testenv.NeedTools(t, "ansible-playbook")
	args := append([]string{"-i", lab.Inventory(), "-e", "@" + vars, pb}, extra...)
	cmd := exec.Command("ansible-playbook", args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "ANSIBLE_NOCOLOR=1", "ANSIBLE_FORCE_COLOR=0",
		"ANSIBLE_COLLECTIONS_PATH="+collections, "ANSIBLE_LOCAL_TEMP="+filepath.Join(home, "tmp"),
		"ANSIBLE_RETRY_FILES_ENABLED=0")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// RecapChanged is the changed= count of host's clean recap line (the test
// fails when host has no recap line without failures).
func RecapChanged(t *testing.T, out, host string) int {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta(host) + `\s+: ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=0`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no clean recap line for %s:\n%s", host, out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// Controller is one ansible-core a playbook test runs under: this host's
// (Debian 12: ansible-core 2.14) or the cached Debian 13 root's (2.19),
// the two ends of the supported range (tests/roles/run.sh and
// tests/slicing/run.sh run both the same way).
type Controller struct {
	Name string // "host" or "trixie"
	root string // "" = this host's ansible-playbook
}

// Controllers are the ansible-cores a role test must pass under: this
// host's and the Debian 13 root's (hack/debian-root.sh trixie builds it;
// without it the test is skipped, a failure under GOPVE_REQUIRE_LAB=1).
func Controllers(t *testing.T) []Controller {
	t.Helper()
	testenv.NeedTools(t, "ansible-playbook", "unshare", "chroot")
	root := os.Getenv("GOPVE_TRIXIE_ROOT")
	if root == "" {
		root = "/var/cache/gopve/roots/trixie"
	}
	if _, err := os.Stat(filepath.Join(root, "usr/bin/ansible-playbook")); err != nil {
		testenv.Skipf(t, "no ansible-core 2.19 in %s (hack/debian-root.sh trixie builds it): %v", root, err)
	}
	return []Controller{{Name: "host"}, {Name: "trixie", root: root}}
}

// Version is the controller's `ansible-playbook --version` first line.
func (c Controller) Version(t *testing.T) string {
	t.Helper()
	out, err := c.command(t, nil, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("ansible-playbook --version (%s): %v\n%s", c.Name, err, out)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return line
}

// command is ansible-playbook with args under the controller: on the host
// as is; for a root, chrooted into an overlay of it (never written) in a
// private mount namespace, with the temporary directory (the lab, the
// collection, the test's files) and the repository bound at their own
// paths, and only env (KEY=value) in its environment.
func (c Controller) command(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	if c.root == "" {
		cmd := exec.Command("ansible-playbook", args...)
		cmd.Env = append(os.Environ(), env...)
		return cmd
	}
	repo, err := labctl.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	const script = `set -e
ovl=$1 root=$2 tmp=$3 repo=$4; shift 4
mkdir -p "$ovl/up" "$ovl/work" "$ovl/root"
mount -t overlay overlay -o "lowerdir=$root,upperdir=$ovl/up,workdir=$ovl/work" "$ovl/root"
mount -t proc proc "$ovl/root/proc"
mount --rbind /dev "$ovl/root/dev"
for d in "$tmp" "$repo"; do mkdir -p "$ovl/root$d"; mount --bind "$d" "$ovl/root$d"; done
exec chroot "$ovl/root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"`
	full := []string{"--mount", "--propagation", "private", "--", "/bin/sh", "-c", script, "sh", t.TempDir(), c.root, os.TempDir(), repo}
	full = append(append(append(full, env...), "ansible-playbook"), args...)
	return exec.Command("unshare", full...)
}

// PlaybookUnder is PlaybookEnv under the controller c.
func PlaybookUnder(t *testing.T, c Controller, lab *labctl.Lab, collections, vars, pb string, env []string, extra ...string) (string, error) {
	t.Helper()
	args := append([]string{"-i", lab.Inventory(), "-e", "@" + vars, pb}, extra...)
	// A short HOME: ssh's ControlPath (~/.ansible/cp/…) must fit a Unix
	// socket address, which a subtest's t.TempDir() may not.
	home, err := os.MkdirTemp("", "ans")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	base := []string{"HOME=" + home, "ANSIBLE_NOCOLOR=1", "ANSIBLE_FORCE_COLOR=0",
		"ANSIBLE_COLLECTIONS_PATH=" + collections, "ANSIBLE_LOCAL_TEMP=" + filepath.Join(home, "tmp"),
		"ANSIBLE_RETRY_FILES_ENABLED=0"}
	out, err := c.command(t, append(base, env...), args...).CombinedOutput()
	return string(out), err
}
