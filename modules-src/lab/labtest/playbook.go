package labtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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
