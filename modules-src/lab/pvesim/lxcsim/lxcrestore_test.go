package lxcsim_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/vzdump"
)

// restoreSim is a simulator whose pve01 local storage holds simtest.CTBackup (the
// BackupArchive hook reads it, StorageContent lists it) and a zfspool
// "tank".
func restoreSim(t *testing.T, v int) (*pvesim.Sim, *simtest.Client) {
	t.Helper()
	archive, err := vzdump.CTArchive(simtest.CTBackupConf, "zst")
	if err != nil {
		t.Fatal(err)
	}
	s := simtest.StartWith(t, pvesim.New, simtest.Opts{Version: v, TaskDuration: 20 * time.Millisecond}, func(c *pvesim.Config) {
		c.StorageContent = func(node string, st pvesim.StorageInfo) ([]pvesim.Volume, error) {
			if node != "pve01" || st.ID != "local" {
				return nil, nil
			}
			return []pvesim.Volume{{VolID: simtest.CTBackup, Content: "backup", Format: "tar.zst", Size: int64(len(archive)), VMID: 300, Subtype: "lxc"}}, nil
		}
		c.BackupArchive = func(node string, st pvesim.StorageInfo, volname string) ([]byte, error) {
			if node == "pve01" && st.ID == "local" && "local:"+volname == simtest.CTBackup {
				return archive, nil
			}
			return nil, fmt.Errorf("no such file")
		}
	})
	c := simtest.NewClient(t, s, "pve01").LabToken()
	c.Call("POST", "/storage", url.Values{"storage": {"tank"}, "type": {"zfspool"}, "pool": {"tank"}, "content": {"rootdir,images"}}).Must(t, "tank")
	return s, c
}

// A CT restored from a vzdump backup, as pve-container's create_vm with
// restore=1 does it, on PVE 8 and 9: extractconfig returns the archive's
// pct.conf; without rootfs in the request the archive's volumes are
// re-created, with their sizes, on `storage`; the archive's keys fill in
// what the request leaves out (the request's win), unprivileged comes from
// the archive, snapshots do not; an existing VMID is refused without force
// and overwritten with it (the old volumes freed); unique draws new MACs.
func TestLxcRestoreFromBackup(t *testing.T) {
	t.Parallel()
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", v), func(t *testing.T) {
			t.Parallel()
			s, c := restoreSim(t, v)
			got := c.Call("GET", "/nodes/pve01/vzdump/extractconfig", url.Values{"volume": {simtest.CTBackup}}).Must(t, "extractconfig").Data
			if got != simtest.CTBackupConf {
				t.Errorf("extractconfig: %q", got)
			}
			if r := c.Call("GET", "/nodes/pve01/vzdump/extractconfig", url.Values{"volume": {"local:vztmpl/x.tar.zst"}}); r.Status != 500 || !strings.Contains(r.Reason, "content type needs to be 'backup'") {
				t.Errorf("extractconfig of a template: %d %q", r.Status, r.Reason)
			}
			if r := c.Call("GET", "/nodes/pve01/vzdump/extractconfig", url.Values{"volume": {"local:backup/vzdump-lxc-301-2026_12_01-03_00_00.tar.zst"}}); r.Status != 500 ||
				r.Reason != "ERROR: file '/var/lib/vz/dump/vzdump-lxc-301-2026_12_01-03_00_00.tar.zst' does not exist" {
				t.Errorf("extractconfig of a missing backup: %d %q", r.Status, r.Reason)
			}
			st := simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc", url.Values{"vmid": {"400"}, "ostemplate": {simtest.CTBackup}, "restore": {"1"},
				"storage": {"tank"}, "memory": {"1024"}})
			if st["type"] != "vzrestore" || st["exitstatus"] != "OK" {
				t.Fatalf("restore: %v", st)
			}
			conf := c.Call("GET", "/nodes/pve01/lxc/400/config", nil).Must(t, "config").Obj()
			want := map[string]any{"arch": "amd64", "cores": float64(2), "features": "nesting=1", "hostname": "runner", "memory": float64(1024),
				"mp0": "tank:subvol-400-disk-1,backup=0,mp=/srv/builds,size=4G", "net0": "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:01,ip=dhcp,type=veth",
				"ostype": "debian", "rootfs": "tank:subvol-400-disk-0,size=8G", "swap": float64(256), "unprivileged": float64(1), "description": "gitlab runner\n"}
			for k, w := range want {
				if conf[k] != w {
					t.Errorf("%s: %v, want %v", k, conf[k], w)
				}
			}
			if len(conf) != len(want)+1 { // + digest
				t.Errorf("config has other keys: %v", conf)
			}
			if vol := c.Call("GET", "/nodes/pve01/storage/tank/content/tank:subvol-400-disk-0", nil).Must(t, "rootfs volume").Obj(); vol["size"] != float64(8<<30) {
				t.Errorf("rootfs volume: %v", vol)
			}
			// An existing VMID: refused without force, before any task.
			r := c.Call("POST", "/nodes/pve01/lxc", url.Values{"vmid": {"400"}, "ostemplate": {simtest.CTBackup}, "restore": {"1"}, "storage": {"tank"}})
			if r.Status != 500 || r.Reason != "CT 400 already exists on node 'pve01'" {
				t.Errorf("restore over CT 400: %d %q", r.Status, r.Reason)
			}
			// force overwrites it: a rootfs given in the request is the only
			// volume made, unique gives the NIC a new MAC, the old volumes go.
			st = simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc", url.Values{"vmid": {"400"}, "ostemplate": {simtest.CTBackup}, "restore": {"1"}, "force": {"1"},
				"rootfs": {"local-lvm:2"}, "unique": {"1"}, "hostname": {"runner2"}})
			if st["exitstatus"] != "OK" {
				t.Fatalf("forced restore: %v", st)
			}
			conf = c.Call("GET", "/nodes/pve01/lxc/400/config", nil).Must(t, "config").Obj()
			if conf["rootfs"] != "local-lvm:vm-400-disk-0,size=2G" || conf["mp0"] != nil || conf["hostname"] != "runner2" || conf["memory"] != float64(2048) ||
				conf["net0"] == want["net0"] || !strings.Contains(fmt.Sprint(conf["net0"]), "hwaddr=BC:24:11:") {
				t.Errorf("forced restore: %v", conf)
			}
			if r := c.Call("GET", "/nodes/pve01/storage/tank/content/tank:subvol-400-disk-0", nil); r.Status == 200 {
				t.Errorf("the overwritten CT's rootfs is still there")
			}
			// A running CT is never overwritten; a template is no backup.
			simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc/400/status/start", nil)
			if r := c.Call("POST", "/nodes/pve01/lxc", url.Values{"vmid": {"400"}, "ostemplate": {simtest.CTBackup}, "restore": {"1"}, "force": {"1"}}); r.Status != 500 || r.Reason != "can't overwrite running container" {
				t.Errorf("restore over a running CT: %d %q", r.Status, r.Reason)
			}
			if r := c.Call("POST", "/nodes/pve01/lxc", url.Values{"vmid": {"401"}, "ostemplate": {"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"}, "restore": {"1"}}); r.Status != 500 ||
				r.Reason != "unable to use volume local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst - content type needs to be 'backup'" {
				t.Errorf("restore from a template: %d %q", r.Status, r.Reason)
			}
			// The archive is read in the task: a missing one fails it and
			// leaves no config behind.
			st = simtest.MustTask(t, c, "POST", "/nodes/pve01/lxc", url.Values{"vmid": {"402"}, "ostemplate": {"local:backup/vzdump-lxc-402-2026_12_01-03_00_00.tar.zst"}, "restore": {"1"}, "storage": {"tank"}})
			if st["exitstatus"] != "unable to restore CT 402 - ERROR: file '/var/lib/vz/dump/vzdump-lxc-402-2026_12_01-03_00_00.tar.zst' does not exist" {
				t.Errorf("restore of a missing archive: %v", st)
			}
			if _, ok, _ := s.ReadPmxcfs("pve01", "nodes/pve01/lxc/402.conf"); ok {
				t.Error("a failed restore left CT 402's config")
			}
		})
	}
}
