package pveclone

// The role as seed 002 runs it: one inventory host per VM (nothing runs on
// them), each built by a PVE node under the real ansible-playbook with
// forks=10 and the role's bound of four clones at once (K13). The
// template node's task list is the witness of the bound; every VM is read
// back; check mode writes nothing; the second run changes nothing.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

func TestLabPlaybookPerHostPVE9(t *testing.T) { testPerHost(t, 9) }
func TestLabPlaybookPerHostPVE8(t *testing.T) { testPerHost(t, 8) }

func testPerHost(t *testing.T, pve int) {
	lab, bin := labtest.Start(t, pve, 2)
	sim := lab.Sim()
	labtest.FormCluster(t, lab)
	if err := sim.AddGuest("pve01", pvesim.GuestSpec{VMID: 9000, Template: true, Config: map[string]string{
		"name": "debian-12", "scsi0": "local-lvm:2", "net0": "virtio,bridge=vmbr0", "memory": "1024"}}); err != nil {
		t.Fatal(err)
	}
	repo, _ := labctl.RepoRoot()
	coll := labtest.InstallCollection(t, repo, bin)
	dir := t.TempDir()
	vars := filepath.Join(dir, "vars.yml")
	if err := os.WriteFile(vars, []byte("pve_clone_concurrency: 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var inv strings.Builder
	inv.WriteString("pve_vms:\n  hosts:\n")
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&inv, "    vm%d: {pve_clone_vm: {vmid: %d, name: vm%d, template: debian-12, node: pve01, cores: 2, memory: 2048, nets: {net0: {tag: 10}}}}\n", 300+i, 300+i, 300+i)
	}
	hosts := filepath.Join(dir, "vms.yml")
	if err := os.WriteFile(hosts, []byte(inv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	pb := filepath.Join(repo, "playbooks", "clone.yml")
	writes := func() int {
		n := 0
		for _, r := range sim.Requests() {
			if r.Mutating() && r.Path != "/access/ticket" {
				n++
			}
		}
		return n
	}

	sim.ResetRequests()
	if out, err := labtest.Playbook(t, lab, coll, vars, pb, "-i", hosts, "-f", "10", "--check"); err != nil {
		t.Fatalf("clone.yml --check: %v\n%s", err, out)
	} else if n := writes(); n != 0 || labtest.RecapChanged(t, out, "vm305") != 1 {
		t.Errorf("check: %d writes\n%s", n, out)
	}

	sim.ResetRequests()
	start := time.Now()
	out, err := labtest.Playbook(t, lab, coll, vars, pb, "-i", hosts, "-f", "10")
	wall := time.Since(start)
	if err != nil {
		t.Fatalf("clone.yml: %v\n%s", err, out)
	}
	for i := 0; i < 20; i++ {
		if labtest.RecapChanged(t, out, fmt.Sprintf("vm%d", 300+i)) != 1 {
			t.Errorf("vm%d did not change once", 300+i)
		}
	}
	if strings.Contains(out, "got timeout") || strings.Contains(out, "lock request timeout") {
		t.Errorf("K13: a lock error surfaced:\n%s", out)
	}
	reqs := 0
	for _, r := range sim.Requests() {
		if r.Path != "/access/ticket" {
			reqs++
		}
	}
	t.Logf("K13: 20 VMs, forks=10, bound 4: %v wall, %.1f API requests per VM", wall.Round(time.Second), float64(reqs)/20)

	// The bound, from the template node's task list: never more than four
	// clone tasks running at once.
	c, err := pveapi.Connect(context.Background(), labConn(t, lab), pveapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	peak, n := clonePeak(t, c, "pve01")
	t.Logf("K13: %d clone tasks, at most %d at once", n, peak)
	if n != 20 || peak > 4 {
		t.Errorf("K13: %d clone tasks, at most %d at once (want 20, ≤ 4)", n, peak)
	}
	for i := 0; i < 20; i++ {
		cfg, err := qemu.GetConfig(context.Background(), c, "pve01", 300+i, false)
		nets, _ := cfg.Nets()
		if err != nil || cfg.Values["cores"] != "2" || nets["net0"].Tag != 10 || nets["net0"].MAC == "" {
			t.Errorf("vm%d: %v %v", 300+i, cfg.Values, err)
		}
	}

	sim.ResetRequests()
	again, err := labtest.Playbook(t, lab, coll, vars, pb, "-i", hosts, "-f", "10")
	if err != nil || writes() != 0 || labtest.RecapChanged(t, again, "vm300") != 0 {
		t.Errorf("second run: %v, %d writes\n%s", err, writes(), again)
	}
}

func labConn(t *testing.T, lab *labctl.Lab) pveapi.Connection {
	t.Helper()
	sim := lab.Sim()
	info, _ := sim.Node("pve01")
	id, secret := sim.LabToken()
	return pveapi.Connection{Host: info.Addr, Port: pvesim.DefaultPort, TokenID: id, TokenSecret: secret,
		ValidateCerts: true, Fingerprint: info.Fingerprint, Timeout: 10}
}
