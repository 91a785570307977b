package pvezfs

// End-to-end test against the lab: the real gopve binary runs inside a
// simulated PVE 8 or 9 node whose disks have real by-id links and signatures
// (nvme0n1 blank, sdb ext4, sdc GPT) and whose zpool/zfs/systemctl are the
// lab's stand-ins. Check mode first (zero writes), the real run changes what
// was predicted, the second run changes nothing.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
)

func startLab(t *testing.T, pve int) (*labctl.Lab, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("lab end-to-end tests are skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("the lab needs root")
	}
	for _, tool := range []string{"unshare", "losetup", "dpkg-deb", "apt-ftparchive", "gpg", "/usr/sbin/sshd"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is missing (make deps): %v", tool, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	tools, err := labctl.BuildLabtools(ctx, tmp)
	if err != nil {
		t.Fatal(err)
	}
	repo, err := labctl.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "gopve")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./modules-src/cmd/gopve")
	build.Dir, build.Env = repo, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building gopve: %v\n%s", err, out)
	}
	var log bytes.Buffer
	lab, err := labctl.Start(ctx, labctl.Options{Nodes: 1, PVE: pve, Dir: filepath.Join(tmp, "lab"), Labtools: tools, Log: &log})
	if err != nil {
		t.Fatalf("starting the lab: %v\n%s", err, log.String())
	}
	t.Cleanup(func() {
		if err := lab.Close(); err != nil {
			t.Errorf("closing the lab: %v", err)
		}
	})
	f, err := os.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := lab.Run(ctx, "pve01", "cat > /usr/local/bin/gopve-e2e && chmod 755 /usr/local/bin/gopve-e2e", f)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("copying gopve to the node: %v %s", err, res.Stderr)
	}
	return lab, "/usr/local/bin/gopve-e2e"
}

func invoke(t *testing.T, lab *labctl.Lab, bin string, args map[string]any, check bool) map[string]any {
	t.Helper()
	full := map[string]any{"_gopve_module": "pve_zfs", "_ansible_check_mode": check, "_ansible_diff": true}
	for k, v := range args {
		full[k] = v
	}
	data, _ := json.Marshal(full)
	res, err := lab.Run(context.Background(), "pve01", "f=$(mktemp) && cat > $f && "+bin+" $f; rc=$?; rm -f $f; exit $rc", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil {
		t.Fatalf("pve_zfs did not print one JSON object (%v):\nstdout: %s\nstderr: %s", err, res.Stdout, res.Stderr)
	}
	return out
}

// zfsState is what check mode must leave untouched: pools, datasets,
// signatures and the scrub timer.
const zfsState = `zpool list -H -o name; zfs list -H -o name,mountpoint; for d in /dev/nvme0n1 /dev/sdb /dev/sdc; do blkid -p $d; echo "$d $?"; done; systemctl is-enabled zfs-scrub-monthly@nvme-vm.timer; systemctl is-active zfs-scrub-monthly@nvme-vm.timer; true`

func TestLabPVE8(t *testing.T) { testLab(t, 8) }
func TestLabPVE9(t *testing.T) { testLab(t, 9) }

func testLab(t *testing.T, pve int) {
	lab, bin := startLab(t, pve)
	state := func() string {
		out, err := lab.SSH("pve01", zfsState)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	args := map[string]any{"name": "nvme-vm", "devices": []any{"/dev/nvme0n1"}}

	// Z3: a disk with a filesystem is refused, naming it, and nothing changes.
	before := state()
	res := invoke(t, lab, bin, map[string]any{"name": "tank", "devices": []any{"/dev/sdb"}}, false)
	if !failed(res) || !strings.Contains(res["msg"].(string), "ext4") || !strings.Contains(res["msg"].(string), "/dev/disk/by-id/") {
		t.Errorf("Z3: msg = %v", res["msg"])
	}
	check := invoke(t, lab, bin, args, true)
	if failed(check) || check["changed"] != true {
		t.Fatalf("check mode: %v", check["msg"])
	}
	if after := state(); after != before {
		t.Fatalf("check mode changed the node:\n%s\n---\n%s", before, after)
	}
	real := invoke(t, lab, bin, args, false)
	if failed(real) {
		t.Fatalf("real run: %v", real["msg"])
	}
	if !reflect.DeepEqual(changes(real), changes(check)) {
		t.Errorf("real %q != predicted %q", changes(real), changes(check))
	}
	// Z2: the pool is built on the by-id name.
	status, _ := lab.SSH("pve01", "zpool status -P nvme-vm; zfs get -H -o value mountpoint,compression,acltype nvme-vm; systemctl is-active zfs-scrub-monthly@nvme-vm.timer")
	if !strings.Contains(status, "/dev/disk/by-id/nvme-eui.") || !strings.Contains(status, "/nvme-vm\nlz4\nposix\nactive") {
		t.Errorf("pool after creation:\n%s", status)
	}
	pool, _ := real["pool"].(map[string]any)
	if pool["health"] != "ONLINE" || pool["layout"] != "single" {
		t.Errorf("returned pool = %v", pool)
	}
	again := invoke(t, lab, bin, args, false)
	if failed(again) || again["changed"] != false {
		t.Fatalf("Z1 rerun: %v %q", again["msg"], again["changes"])
	}
	// Z5: a drifted mountpoint converges; Z4: another ashift fails, destroys nothing.
	lab.SSH("pve01", "zfs set mountpoint=none nvme-vm")
	if res := invoke(t, lab, bin, args, false); failed(res) || !reflect.DeepEqual(changes(res), []string{"set mountpoint=/nvme-vm on nvme-vm (was none)"}) {
		t.Errorf("Z5: %v %q", res["msg"], res["changes"])
	}
	res = invoke(t, lab, bin, map[string]any{"name": "nvme-vm", "devices": []any{"/dev/nvme0n1"}, "ashift": 9}, false)
	if !failed(res) || !strings.Contains(res["msg"].(string), "ashift") {
		t.Errorf("Z4: %v", res["msg"])
	}
	if out, _ := lab.SSH("pve01", "zpool list -H -o name"); out != "nvme-vm\n" {
		t.Errorf("pools after the Z4 refusal: %q", out)
	}
}
