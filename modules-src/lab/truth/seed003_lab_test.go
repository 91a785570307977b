package truth

// Seed 003's whole chain from the example shipped in
// playbooks/examples/seed003 (issue 25's "done when"): a GitLab runner
// container on pve01 and Dokploy's VM, cloned from pve01's template and
// migrated to pve02 (clone_then_migrate), both replicated to the other two
// nodes and under HA at home on their node (a rule on PVE 9, a group on
// PVE 8), written with this collection's modules only. On a fresh lab:
//
//	--check --diff: nothing written anywhere (every node's upper dir, the
//	request log), and exactly the tasks the real run then changes (H1, H2);
//	real run;
//	Dokploy's node powered off: HA recovers the VM elsewhere (H3), the site
//	without pve02 reruns changed=0 (the replication jobs rewritten by the
//	failover are PVE's, not drift: H7);
//	pve02 back: the VM fails back home, the whole site reruns changed=0.

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
)

// PVE 9 only (issue 27 §3, CI time: the chain took CI over four minutes
// per version). Its parts on PVE 8 have tests of their own: the site's
// fresh check and real run with an HA group (TestTruthSuitePVE8), the
// container module (pve_container's in-process tests on both versions), HA's recovery from a
// powered-off node (TestLabHAPlaybookPVE8) and clone_then_migrate in the
// module's tests.
func TestSeed003ExamplePVE9(t *testing.T) { seed003(t, 9) }

// ctTemplate is the runner's CT template, as the example names it.
const ctTemplate = "/var/lib/vz/template/cache/debian-12-standard_12.7-1_amd64.tar.zst"

func seed003(t *testing.T, pve int) {
	t.Parallel() // see suite
	lab, bin := labtest.StartWith(t, pve, 3, func(o *labctl.Options) {
		o.SimConfig = func(c *pvesim.Config) {
			c.ReplicationInterval, c.HADelay = time.Second, 300*time.Millisecond
			c.FenceDelay, c.FailbackDelay = 2*time.Second, 3*time.Second
		}
	})
	repo, _ := labctl.RepoRoot()
	s := &site{t: t, lab: lab, sim: lab.Sim(), coll: labtest.InstallCollection(t, repo, bin),
		pb: filepath.Join(repo, "playbooks", "site.yml"), dir: t.TempDir(),
		vars: filepath.Join(repo, "playbooks", "examples", "seed003", "group_vars.yml")}
	defer func() { t.Log("\n" + strings.Join(s.report, "\n")) }()
	// What the seed's earlier parts left: the Debian template on pve01's
	// local storage, the CT template downloaded there.
	if err := s.sim.AddGuest("pve01", template); err != nil {
		t.Fatalf("the template: %v", err)
	}
	if _, err := lab.SSH("pve01", "mkdir -p "+filepath.Dir(ctTemplate)+" && head -c 4096 /dev/zero > "+ctTemplate); err != nil {
		t.Fatalf("the CT template: %v", err)
	}

	predicted, writes := s.checkRun("fresh --check --diff")
	real := s.run("fresh real run")
	s.table(fmt.Sprintf("PVE %d, seed 003 from a fresh lab", pve), predicted, real, writes)
	if p, r := predicted.changed(), real.changed(); !slices.Equal(p, r) || len(r) == 0 {
		t.Errorf("fresh lab: check mode predicted these tasks to change:\n  %s\nthe real run changed:\n  %s",
			strings.Join(p, "\n  "), strings.Join(r, "\n  "))
	}
	for _, phase := range []string{"clone", "container", "ha"} {
		if !slices.ContainsFunc(real.changed(), func(k string) bool { return strings.HasPrefix(k, phase+"|") }) {
			t.Errorf("fresh real run: the %s phase changed nothing", phase)
		}
	}
	// No rerun of its own here (issue 27 §3, CI time: a whole 3-node site
	// run): the runs after the failover (pve01 and pve03) and after the
	// failback (the whole site) must each change nothing, so a task that
	// does not converge fails them.

	// Read back from the nodes, not from the recap.
	for node, cmd := range map[string][]string{
		"pve01": {"pct config 200", "hostname: gitlab-runner", "rootfs: nvme-vm:subvol-200-disk-0"},
		"pve02": {"qm config 201", "name: dokploy", "scsi0: nvme-vm:vm-201-disk-0"},
	} {
		out, err := lab.SSH(node, cmd[0])
		for _, want := range cmd[1:] {
			if err != nil || !strings.Contains(out, want) {
				t.Errorf("%s on %s (%v): no %q in\n%s", cmd[0], node, err, want, out)
			}
		}
	}
	if out, err := lab.SSH("pve01", "pvesr list"); err != nil || strings.Count(out, "local") < 4 {
		t.Errorf("pvesr list: want two jobs per guest (%v):\n%s", err, out)
	}

	// The seed's failover test, on Dokploy's node.
	ctx := context.Background()
	api := s.api(ctx)
	guestOn := func(vmid int, what string, cond func(clusterguests.Guest) bool) clusterguests.Guest {
		return labtest.GuestOn(t, api, vmid, what, cond)
	}
	guestOn(201, "ran on pve02", func(g clusterguests.Guest) bool { return g.Node == "pve02" && g.Status == "running" })
	labtest.PowerOff(t, lab, "pve02")
	moved := guestOn(201, "recovered off pve02", func(g clusterguests.Guest) bool { return g.Node != "pve02" && g.Status == "running" })
	// The cluster role reads the keys of the members outside the play
	// (pve02 here) and ignores one it cannot reach: that read fails, the
	// play goes on (C10).
	s.mayFail = map[string]bool{"gopve.proxmox.pve_cluster : Keys of the members outside the play (read only)": true}
	if c := s.run("after the failover", "--limit", "pve01,pve03").changed(); len(c) != 0 {
		t.Errorf("after the failover to %s, the site without pve02 changed:\n  %s", moved.Node, strings.Join(c, "\n  "))
	}
	s.mayFail = nil
	labtest.PowerOn(t, lab, "pve02")
	guestOn(201, "failed back to pve02", func(g clusterguests.Guest) bool { return g.Node == "pve02" && g.Status == "running" })
	if c := s.run("after the failback").changed(); len(c) != 0 {
		t.Errorf("after the failback, the site changed:\n  %s", strings.Join(c, "\n  "))
	}
}

// api is a client of pve01's API with the lab's token.
func (s *site) api(ctx context.Context) *pveapi.Client {
	s.t.Helper()
	creds := s.lab.Credentials()
	info, _ := s.sim.Node("pve01")
	c, err := pveapi.Connect(ctx, pveapi.Connection{Host: info.Addr, Port: pvesim.DefaultPort, TokenID: creds.TokenID,
		TokenSecret: creds.TokenSecret, ValidateCerts: true, Fingerprint: info.Fingerprint, Timeout: 10}, pveapi.Options{})
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}
