package pvecontainer

// restore_from as users run it, on the lab's nodes (real ansible-playbook,
// the first node's own API in local mode): a container backup on pve01's
// local storage (labctl's PutCTBackup, as vzdump leaves it in dump/),
// playbooks/container.yml restores CT 300 from it — check mode first (no
// write by the request log nor on any node's disk, the prediction read
// from extractconfig exactly what the real run reads back), the real run
// (one vzrestore, then the task's settings converged), a rerun with
// changed=0.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

const labBackupConf = "#restored runner\narch: amd64\ncores: 1\nfeatures: nesting=1\nhostname: runner-old\nmemory: 1024\n" +
	"net0: name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:03:00,ip=dhcp,type=veth\nostype: debian\n" +
	"rootfs: tank:subvol-300-disk-0,size=3G\nswap: 256\nunprivileged: 1\n"

const labRestoreVars = `pve_container_cts:
  - vmid: 300
    hostname: runner-restored
    node: pve01
    restore_from: %BACKUP%
    cores: 2
    rootfs: {storage: local-lvm, size: 4G}
    nets: {net0: {ip: 192.168.3.60/24, gw: 192.168.3.1}}
`

// PVE 9 only (issue 27 §3, CI time): the restore per version is proven in
// restore_test.go on PVE 8 and 9 against the in-process simulator, and the
// lab's own vzdump archive and restore on both by labctl's
// TestLabCTBackupRestorePVE8/PVE9.
func TestLabContainerRestorePlaybookPVE9(t *testing.T) {
	t.Parallel()
	testContainerRestorePlaybook(t, 9)
}

func testContainerRestorePlaybook(t *testing.T, pve int) {
	lab, bin := labtest.Start(t, pve, 2)
	sim := lab.Sim()
	labtest.FormCluster(t, lab)
	backup, err := lab.PutCTBackup("pve01", 300, time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC), labBackupConf)
	if err != nil {
		t.Fatal(err)
	}
	repo, _ := labctl.RepoRoot()
	coll := labtest.InstallCollection(t, repo, bin)
	vars := filepath.Join(t.TempDir(), "pve.yml")
	if err := os.WriteFile(vars, []byte(strings.ReplaceAll(labRestoreVars, "%BACKUP%", backup)), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := pveapi.Connect(context.Background(), labConn(lab), pveapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ct := filepath.Join(repo, "playbooks", "container.yml")
	ctPlay := func(t *testing.T, what string, args ...string) map[string]any {
		t.Helper()
		sim.ResetRequests()
		out, err := labtest.PlaybookEnv(t, lab, coll, vars, ct, []string{"ANSIBLE_STDOUT_CALLBACK=json"}, args...)
		if err != nil {
			t.Fatalf("container.yml %s: %v\n%s", what, err, out)
		}
		sim.WaitIdle()
		return containerResult(t, out)
	}

	var check map[string]any
	labtest.NoWrites(t, lab, "container.yml --check (restore_from)", func() { check = ctPlay(t, "--check", "--check") })
	if w := labWrites(sim); len(w) != 0 || check["changed"] != true {
		t.Fatalf("check run: changed=%v, wrote %v", check["changed"], w)
	}
	predicted := cfgOf(check)
	real := ctPlay(t, "real run")
	if w := strings.Join(labWrites(sim), "; "); real["changed"] != true ||
		w != "POST /nodes/pve01/lxc; PUT /nodes/pve01/lxc/300/config; PUT /nodes/pve01/lxc/300/resize" {
		t.Errorf("real run: changed=%v, wrote %v (want the one vzrestore, one config PUT, one resize)", real["changed"], w)
	}
	var raw map[string]any
	if err := c.Get(context.Background(), "/nodes/pve01/lxc/300/config", nil, &raw); err != nil {
		t.Fatal(err)
	}
	got := qemu.ConfigFrom(raw).Values
	if got["rootfs"] != "local-lvm:vm-300-disk-0,size=4G" || got["hostname"] != "runner-restored" || got["memory"] != "1024" ||
		got["net0"] != "name=eth0,bridge=vmbr0,gw=192.168.3.1,hwaddr=BC:24:11:00:03:00,ip=192.168.3.60/24,type=veth" {
		t.Errorf("restored CT 300 on PVE %d: %v", pve, got)
	}
	for k, want := range predicted {
		if strings.TrimRight(got[k], "\n") != strings.TrimRight(want, "\n") {
			t.Errorf("%s: predicted %q, read back %q", k, want, got[k])
		}
	}
	for k := range got {
		if _, ok := predicted[k]; !ok {
			t.Errorf("%s=%q read back, not predicted", k, got[k])
		}
	}
	if again := ctPlay(t, "rerun"); again["changed"] != false || len(labWrites(sim)) != 0 {
		t.Errorf("rerun: changed=%v, wrote %v", again["changed"], labWrites(sim))
	}
}
