package replsim_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/replsim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
)

// H1: one pvesr run per (lab) minute works through every due job, as
// pvescheduler and PVE::Replication do: two jobs created together both
// sync at the next run — a new job has never been tried, so it is due —,
// not one per schedule period. A `pvesr run` without --id runs only due
// jobs, so right after that sync it runs none.
func TestReplicationOneRunWorksThroughDueJobsH1(t *testing.T) {
	t.Parallel()
	const minute = time.Second
	s, a, _ := simtest.HACluster(t, pvesim.New, 9, func(c *pvesim.Config) { c.ReplicationInterval = minute })
	simtest.CreateVM(t, a, 100, url.Values{"scsi0": {"tank:4"}})
	for i, target := range []string{"pve02", "pve03"} {
		a.Call("POST", "/cluster/replication", url.Values{"id": {fmt.Sprintf("100-%d", i)}, "type": {"local"},
			"target": {target}, "schedule": {"*/15"}}).Must(t, "job")
	}
	created := time.Now()
	synced := func(id string) bool {
		return a.Call("GET", "/nodes/pve01/replication/"+id+"/status", nil).Must(t, "status").Obj()["last_sync"] != float64(0)
	}
	// A */15 period is 15 lab minutes: the second job waiting a period would
	// take 15 s; one run (within a minute) plus margin for a loaded machine.
	for !synced("100-0") || !synced("100-1") {
		if time.Since(created) > 5*minute {
			t.Fatalf("both jobs not synced %v after creation (100-0 %v, 100-1 %v): the second waits a period", time.Since(created), synced("100-0"), synced("100-1"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	st := a.Call("GET", "/nodes/pve01/replication/100-1/status", nil).Must(t, "status").Obj()
	if next, last := st["next_sync"].(float64), st["last_sync"].(float64); next <= last {
		t.Errorf("next_sync %v not after last_sync %v", next, last)
	}
	log, err := replsim.Run(s.Sim, "pve01", "")
	if err != nil || len(log) != 0 {
		t.Errorf("pvesr run right after the sync ran %v (%v), want nothing due", log, err)
	}
	if log, err := replsim.Run(s.Sim, "pve01", "100-1"); err != nil || !strings.Contains(strings.Join(log, "\n"), "incremental sync 'tank:vm-100-disk-0'") {
		t.Errorf("pvesr run --id 100-1: %v %v", log, err)
	}
}

// H6: a container's volumes are subvol-<vmid>-disk-<n> on zfspool;
// ZFSPoolPlugin parse_volname gives their owner, so a container replicates
// (and its replica lands on the target).
func TestContainerReplicatesSubvolH6(t *testing.T) {
	t.Parallel()
	_, a, b := simtest.TwoNodes(t, pvesim.New, simtest.Opts{TaskDuration: 30 * time.Millisecond, RestartWindow: 200 * time.Millisecond},
		func(c *pvesim.Config) { c.ReplicationInterval = 150 * time.Millisecond })
	a.Call("POST", "/storage", url.Values{"storage": {"tank"}, "type": {"zfspool"}, "pool": {"tank"}, "content": {"images,rootdir"}}).Must(t, "zfs")
	simtest.MustTask(t, a, "POST", "/nodes/pve01/lxc", url.Values{"vmid": {"200"}, "ostemplate": {"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"},
		"rootfs": {"tank:2"}, "mp0": {"tank:1,mp=/srv"}})
	a.Call("POST", "/cluster/replication", url.Values{"id": {"200-0"}, "type": {"local"}, "target": {"pve02"}}).Must(t, "CT job")
	simtest.Eventually(t, "CT job synced", func() bool {
		return a.Call("GET", "/nodes/pve01/replication/200-0/status", nil).Must(t, "status").Obj()["last_sync"] != float64(0)
	})
	got := fmt.Sprint(b.Call("GET", "/nodes/pve02/storage/tank/content", nil).Must(t, "pve02 tank").List())
	for _, v := range []string{"tank:subvol-200-disk-0", "tank:subvol-200-disk-1"} {
		if !strings.Contains(got, v) {
			t.Errorf("no replica of %s on pve02: %s", v, got)
		}
	}
}
