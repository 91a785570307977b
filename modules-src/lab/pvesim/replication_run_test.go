package pvesim

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/replsim"
)

// H1: one pvesr run per (lab) minute works through every due job, as
// pvescheduler and PVE::Replication do: two jobs created together both
// sync at the next run — a new job has never been tried, so it is due —,
// not one per schedule period. A `pvesr run` without --id runs only due
// jobs, so right after that sync it runs none.
func TestReplicationOneRunWorksThroughDueJobsH1(t *testing.T) {
	t.Parallel()
	const minute = time.Second
	s, a, _ := haCluster(t, 9, func(c *Config) { c.ReplicationInterval = minute })
	createVM(t, a, 100, url.Values{"scsi0": {"tank:4"}})
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
	log, err := replsim.Run(s, "pve01", "")
	if err != nil || len(log) != 0 {
		t.Errorf("pvesr run right after the sync ran %v (%v), want nothing due", log, err)
	}
	if log, err := replsim.Run(s, "pve01", "100-1"); err != nil || !strings.Contains(strings.Join(log, "\n"), "incremental sync 'tank:vm-100-disk-0'") {
		t.Errorf("pvesr run --id 100-1: %v %v", log, err)
	}
}

// H6: a container's volumes are subvol-<vmid>-disk-<n> on zfspool;
// ZFSPoolPlugin parse_volname gives their owner, so a container replicates
// (and its replica lands on the target).
func TestContainerReplicatesSubvolH6(t *testing.T) {
	t.Parallel()
	_, a, b := twoNodes(t, simOpts{TaskDuration: 30 * time.Millisecond, RestartWindow: 200 * time.Millisecond},
		func(c *Config) { c.ReplicationInterval = 150 * time.Millisecond })
	a.Call("POST", "/storage", url.Values{"storage": {"tank"}, "type": {"zfspool"}, "pool": {"tank"}, "content": {"images,rootdir"}}).Must(t, "zfs")
	mustTask(t, a, "POST", "/nodes/pve01/lxc", url.Values{"vmid": {"200"}, "ostemplate": {"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"},
		"rootfs": {"tank:2"}, "mp0": {"tank:1,mp=/srv"}})
	a.Call("POST", "/cluster/replication", url.Values{"id": {"200-0"}, "type": {"local"}, "target": {"pve02"}}).Must(t, "CT job")
	eventually(t, "CT job synced", func() bool {
		return a.Call("GET", "/nodes/pve01/replication/200-0/status", nil).Must(t, "status").Obj()["last_sync"] != float64(0)
	})
	got := fmt.Sprint(b.Call("GET", "/nodes/pve02/storage/tank/content", nil).Must(t, "pve02 tank").List())
	for _, v := range []string{"tank:subvol-200-disk-0", "tank:subvol-200-disk-1"} {
		if !strings.Contains(got, v) {
			t.Errorf("no replica of %s on pve02: %s", v, got)
		}
	}
}

// A container's description is stored as comment lines, each read back
// with its newline (pve-container parse_pct_config): a client sending
// "web" reads "web\n"; encode_text escapes ':' and the UTF-8 bytes but
// leaves '%' (pvecommon's test holds that to Perl). GET …/interfaces answers null for a stopped
// container and the interfaces of a running one.
func TestContainerDescriptionAndInterfaces(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{TaskDuration: 30 * time.Millisecond})
	c := newClient(t, s, "pve01").Root()
	mustTask(t, c, "POST", "/nodes/pve01/lxc", url.Values{"vmid": {"200"}, "ostemplate": {"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"},
		"rootfs": {"local-lvm:2"}, "description": {"web"}, "net0": {"name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:01,ip=10.0.0.5/24"}})
	if d := c.Call("GET", "/nodes/pve01/lxc/200/config", nil).Must(t, "config").Obj()["description"]; d != "web\n" {
		t.Errorf("description after create: %q", d)
	}
	c.Call("PUT", "/nodes/pve01/lxc/200/config", url.Values{"description": {"runner\n\nowner: ci (100% é)\n"}}).Must(t, "PUT description")
	raw, _, _ := s.ReadPmxcfs("pve01", "nodes/pve01/lxc/200.conf")
	if !strings.HasPrefix(raw, "#runner\n#\n#owner%3A ci (100% %C3%A9)\n") || strings.Contains(raw, "description:") {
		t.Errorf("config file (encode_text per line): %q", raw)
	}
	if d := c.Call("GET", "/nodes/pve01/lxc/200/config", nil).Must(t, "config").Obj()["description"]; d != "runner\n\nowner: ci (100% é)\n" {
		t.Errorf("description after update: %q", d)
	}
	c.Call("PUT", "/nodes/pve01/lxc/200/config", url.Values{"delete": {"description"}}).Must(t, "delete description")
	if d, ok := c.Call("GET", "/nodes/pve01/lxc/200/config", nil).Must(t, "config").Obj()["description"]; ok {
		t.Errorf("description after delete: %q", d)
	}

	if r := c.ExpectNull().Call("GET", "/nodes/pve01/lxc/200/interfaces", nil).Must(t, "stopped"); r.Data != nil {
		t.Errorf("interfaces of a stopped CT: %v, want null", r.Data)
	}
	mustTask(t, c, "POST", "/nodes/pve01/lxc/200/status/start", nil)
	ifs := c.Call("GET", "/nodes/pve01/lxc/200/interfaces", nil).Must(t, "running").List()
	if len(ifs) != 2 || ifs[0]["name"] != "lo" || ifs[1]["name"] != "eth0" || ifs[1]["hwaddr"] != "bc:24:11:00:00:01" ||
		ifs[1]["inet"] != "10.0.0.5/24" || fmt.Sprint(ifs[1]["ip-addresses"]) != "[map[ip-address:10.0.0.5 ip-address-type:inet prefix:24]]" {
		t.Errorf("interfaces: %v", ifs)
	}
}
