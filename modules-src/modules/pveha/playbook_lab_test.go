package pveha

// The role as users run it, on the lab (real ansible-playbook, real SSH,
// the nodes' own API in local mode): playbooks/zfs.yml and storage.yml with
// the seed's variables, the seed's two guests, then playbooks/ha.yml —
// check mode first (zero writes by the request log), the real run, a second
// run with changed=0 — and seed 003's failover test: the node running
// Dokploy's VM loses power (the lab's real power-off), HA fences it and
// recovers the VM on another node, replication follows, and a rerun of the
// playbook on the surviving nodes reports changed=0; after the node returns
// and the VM fails back, again (H3, H7).

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
)

const seedVars = `zfs_pool_name: nvme-vm
zfs_pool_device: /dev/nvme0n1
zfs_arc_max_gb: 4
pve_cluster_primary: pve01
pve_ha_guests:
  - {vmid: 200, type: ct, node_affinity: {pve01: 100}}
  - {vmid: 201, type: vm, node_affinity: {pve02: 100}}
`

func TestLabHAPlaybookPVE9(t *testing.T) {
	t.Parallel()
	testHAPlaybook(t, 9)
}
func TestLabHAPlaybookPVE8(t *testing.T) {
	t.Parallel()
	testHAPlaybook(t, 8)
}

func testHAPlaybook(t *testing.T, pve int) {
	lab, bin := labtest.StartWith(t, pve, 3, func(o *labctl.Options) {
		o.SimConfig = func(c *pvesim.Config) {
			c.ReplicationInterval, c.HADelay = time.Second, 300*time.Millisecond
			c.FenceDelay, c.FailbackDelay = 2*time.Second, 3*time.Second
		}
	})
	sim := lab.Sim()
	labtest.FormCluster(t, lab)
	repo, _ := labctl.RepoRoot()
	coll := labtest.InstallCollection(t, repo, bin)
	vars := filepath.Join(t.TempDir(), "pve.yml")
	if err := os.WriteFile(vars, []byte(seedVars), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, pb := range []string{"zfs.yml", "storage.yml"} {
		if out, err := labtest.Playbook(t, lab, coll, vars, filepath.Join(repo, "playbooks", pb)); err != nil {
			t.Fatalf("%s: %v\n%s", pb, err, out)
		}
	}

	// The seed's guests, stopped, disks on the pool: the runner container
	// on pve01 (from a template file in local's template/cache, as pveam
	// download leaves it: vzcreate fails without one), Dokploy's VM on pve02.
	if _, err := lab.SSH("pve01", "head -c 4096 /dev/urandom > /var/lib/vz/template/cache/debian-12-standard_12.7-1_amd64.tar.zst"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	creds := lab.Credentials()
	info, _ := sim.Node("pve01")
	api, err := pveapi.Connect(ctx, pveapi.Connection{Host: info.Addr, Port: pvesim.DefaultPort, TokenID: creds.TokenID,
		TokenSecret: creds.TokenSecret, ValidateCerts: true, Fingerprint: info.Fingerprint, Timeout: 10}, pveapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The CT template on pve01's local storage, where pct create looks
	// for it (a missing one fails the vzcreate task, as on PVE).
	if res, err := lab.Run(ctx, "pve01", "mkdir -p /var/lib/vz/template/cache && "+
		"head -c 4096 /dev/zero > /var/lib/vz/template/cache/debian-12-standard_12.7-1_amd64.tar.zst", nil); err != nil || res.ExitCode != 0 {
		t.Fatalf("the CT template: %v %s", err, res.Stderr)
	}
	o, err := api.Dispatch(ctx, pveapi.Write{Method: "POST", Path: "/nodes/pve01/lxc", What: "test: the runner container",
		Params: url.Values{"vmid": {"200"}, "hostname": {"runner"},
			"ostemplate": {"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"}, "rootfs": {"nvme-vm:4"}},
		Settle: func(context.Context) (bool, error) { return false, nil }, SettleWithin: time.Millisecond})
	var upid string
	if err != nil || o.Decode(&upid) != nil {
		t.Fatalf("the runner container: %v", err)
	}
	if _, err := api.WaitTask(ctx, upid); err != nil {
		t.Fatal(err)
	}
	if err := sim.AddGuest("pve02", pvesim.GuestSpec{VMID: 201, Config: map[string]string{
		"name": "dokploy", "scsi0": "nvme-vm:4", "net0": "virtio,bridge=vmbr0"}}); err != nil {
		t.Fatal(err)
	}

	writes := func() []string {
		sim.WaitIdle()
		var out []string
		for _, r := range sim.Requests() {
			if r.Mutating() && !(r.Method == "POST" && r.Path == "/access/ticket") {
				out = append(out, r.Method+" "+r.Path)
			}
		}
		return out
	}
	pb := filepath.Join(repo, "playbooks", "ha.yml")
	play := func(what string, extra ...string) string {
		t.Helper()
		out, err := labtest.Playbook(t, lab, coll, vars, pb, extra...)
		if err != nil {
			t.Fatalf("ha.yml %s: %v\n%s", what, err, out)
		}
		return out
	}

	sim.ResetRequests()
	check := play("--check", "--check", "--diff")
	if w := writes(); len(w) != 0 {
		t.Fatalf("ha.yml --check wrote: %v", w)
	}
	if labtest.RecapChanged(t, check, "pve01") != 1 || !strings.Contains(check, "+local: 200-0") {
		t.Errorf("--check --diff predicts the chain:\n%s", check)
	}
	sim.ResetRequests()
	real := play("real run")
	w := writes()
	want := map[bool]string{true: "POST /cluster/ha/rules", false: "POST /cluster/ha/groups"}[pve == 9]
	if strings.Count(strings.Join(w, "\n"), "POST /cluster/replication") != 4 || strings.Count(strings.Join(w, "\n"), want) != 2 ||
		strings.Count(strings.Join(w, "\n"), "POST /cluster/ha/resources") != 2 {
		t.Errorf("the seed's chain for two guests (4 jobs, 2 resources, 2 %s): %v\n%s", want, w, real)
	}
	sim.ResetRequests()
	again := play("second run")
	if c := labtest.RecapChanged(t, again, "pve01"); c != 0 || len(writes()) != 0 {
		t.Errorf("second run changed %d, wrote %v:\n%s", c, writes(), again)
	}

	guestOn := func(vmid int, what string, cond func(clusterguests.Guest) bool) clusterguests.Guest {
		return labtest.GuestOn(t, api, vmid, what, cond)
	}
	guestOn(201, "ran on pve02", func(g clusterguests.Guest) bool { return g.Node == "pve02" && g.Status == "running" })

	// Seed 003's failover test, on Dokploy's node (pve01 runs the play).
	labtest.PowerOff(t, lab, "pve02")
	moved := guestOn(201, "recovered off pve02", func(g clusterguests.Guest) bool { return g.Node != "pve02" && g.Status == "running" })
	sim.ResetRequests()
	after := play("after the failover", "--limit", "pve01,pve03")
	if c := labtest.RecapChanged(t, after, "pve01"); c != 0 || len(writes()) != 0 {
		t.Errorf("after the failover to %s: changed %d, wrote %v:\n%s", moved.Node, c, writes(), after)
	}
	labtest.PowerOn(t, lab, "pve02")
	guestOn(201, "failed back to pve02", func(g clusterguests.Guest) bool { return g.Node == "pve02" && g.Status == "running" })
	sim.ResetRequests()
	back := play("after the failback")
	if c := labtest.RecapChanged(t, back, "pve01"); c != 0 || len(writes()) != 0 {
		t.Errorf("after the failback: changed %d, wrote %v:\n%s", c, writes(), back)
	}
}
