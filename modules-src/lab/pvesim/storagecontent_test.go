package pvesim

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

// Storage content as pve-storage's Content.pm serves one volume, with
// volume IDs that contain a slash reaching {volume} (an empty fragmentDelimiter):
// a VM disk's format is read there because qemu-server writes no format=
// into the drive (create_disks deletes it) — what bpg's provider does on
// every create, refresh and destroy. PVE 8 and 9 serve it alike.
func TestStorageVolumeContent(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("pve%d", v), func(t *testing.T) {
			t.Parallel()
			files := newFakeFiles("local:iso/debian.iso", "local:snippets/user.yaml")
			s := startSimWith(t, simOpts{Version: v, TaskDuration: 30 * time.Millisecond}, files.Install)
			c := newClient(t, s, "pve01").LabToken()
			c.Call("POST", "/storage", url.Values{"storage": {"scratch"}, "type": {"dir"}, "path": {"/srv/scratch"}, "content": {"images"}}).Must(t, "dir storage")
			createVM(t, c, 100, url.Values{"scsi1": {"scratch:1"}})
			conf := vmConfig(t, c, "pve01", 100)
			for _, k := range []string{"scsi0", "scsi1"} {
				if strings.Contains(conf[k].(string), "format=") {
					t.Errorf("%s carries a format key qemu-server does not write: %v", k, conf[k])
				}
			}
			for _, g := range []struct {
				path, format, volPath string
				size                  float64
			}{
				{"/nodes/pve01/storage/local-lvm/content/local-lvm:vm-100-disk-0", "raw", "/dev/pve/vm-100-disk-0", 8 << 30},
				{"/nodes/pve01/storage/local-lvm/content/vm-100-disk-0", "raw", "/dev/pve/vm-100-disk-0", 8 << 30}, // bare name on the URL's storage
				{"/nodes/pve01/storage/scratch/content/scratch:100/vm-100-disk-0.raw", "raw", "/srv/scratch/images/100/vm-100-disk-0.raw", 1 << 30},
				{"/nodes/pve01/storage/scratch/content/" + url.PathEscape("scratch:100/vm-100-disk-0.raw"), "raw", "/srv/scratch/images/100/vm-100-disk-0.raw", 1 << 30},
				{"/nodes/pve01/storage/local/content/local:iso/debian.iso", "raw", "/var/lib/vz/template/iso/debian.iso", 4096},
			} {
				got := c.Call("GET", g.path, nil).Must(t, g.path).Obj()
				if got["format"] != g.format || got["size"] != g.size || got["path"] != g.volPath {
					t.Errorf("GET %s: %v", g.path, got)
				}
			}
			// A template whose drive names its format: the clone's does not
			// (clone_disk deletes it).
			makeTemplate(t, c, 9000, nil)
			raw, _, _ := s.ReadPmxcfs("pve01", "nodes/pve01/qemu-server/9000.conf")
			if !strings.Contains(raw, "base-9000-disk-0,size=8G") {
				t.Fatalf("template config: %s", raw)
			}
			if err := s.WritePmxcfs("pve01", "nodes/pve01/qemu-server/9000.conf", strings.Replace(raw, "base-9000-disk-0,size=8G", "base-9000-disk-0,format=raw,size=8G", 1), false); err != nil {
				t.Fatal(err)
			}
			if st := mustTask(t, c, "POST", "/nodes/pve01/qemu/9000/clone", url.Values{"newid": {"105"}, "full": {"1"}}); st["exitstatus"] != "OK" {
				t.Fatalf("clone: %v", st)
			}
			if d := fmt.Sprint(vmConfig(t, c, "pve01", 105)["scsi0"]); strings.Contains(d, "format=") {
				t.Errorf("the clone's drive names a format: %s", d)
			}
			expect := func(what string, r resp, status int, reason string) {
				t.Helper()
				if r.Status != status || r.Reason != reason {
					t.Errorf("%s: %d %q, want %d %q", what, r.Status, r.Reason, status, reason)
				}
			}
			r := c.Call("GET", "/nodes/pve01/storage/local/content/local-lvm:vm-100-disk-0", nil)
			expect("storage mismatch", r, 400, "Parameter verification failed.")
			if r.Errs["volume"] != "storage ID mismatch (local-lvm != local)" {
				t.Errorf("storage mismatch errors: %v", r.Errs)
			}
			expect("missing file volume", c.Call("GET", "/nodes/pve01/storage/local/content/local:iso/missing.iso", nil),
				500, "volume_size_info on 'local:iso/missing.iso' failed - no format")
			expect("unparsable name", c.Call("GET", "/nodes/pve01/storage/local-lvm/content/local-lvm:iso/x.iso", nil),
				500, "unable to parse lvm volume name 'iso/x.iso'")
			expect("notes on a disk", c.Call("PUT", "/nodes/pve01/storage/local-lvm/content/local-lvm:vm-100-disk-0", url.Values{"notes": {"x"}}),
				500, "volume notes are not supported for PVE::Storage::LvmThinPlugin")

			// POST allocates a named image; DELETE frees it in an imgdel task.
			volid := c.Call("POST", "/nodes/pve01/storage/scratch/content", url.Values{"filename": {"vm-100-disk-7.qcow2"}, "vmid": {"100"}, "size": {"64M"}}).Must(t, "alloc").Data
			if volid != "scratch:100/vm-100-disk-7.qcow2" {
				t.Fatalf("allocated %v", volid)
			}
			expect("illegal name", c.Call("POST", "/nodes/pve01/storage/scratch/content", url.Values{"filename": {"disk.raw"}, "vmid": {"100"}, "size": {"1G"}}),
				500, "illegal name 'disk.raw' - should be 'vm-100-*'")
			del := c.Call("DELETE", "/nodes/pve01/storage/scratch/content/scratch:100/vm-100-disk-7.qcow2", nil).Must(t, "delete image").Data.(string)
			if !strings.Contains(del, ":imgdel:100@scratch:") {
				t.Errorf("delete task %s", del)
			}
			if st := waitTask(t, c, del); st["exitstatus"] != "OK" {
				t.Errorf("imgdel: %v", st)
			}
			expect("deleted image", c.Call("GET", "/nodes/pve01/storage/scratch/content/scratch:100/vm-100-disk-7.qcow2", nil),
				500, "volume_size_info on 'scratch:100/vm-100-disk-7.qcow2' failed - no format")
			if st := mustTask(t, c, "DELETE", "/nodes/pve01/storage/local/content/local:snippets/user.yaml", nil); st["exitstatus"] != "OK" || files.Has("pve01", "local:snippets/user.yaml") {
				t.Errorf("delete snippet: %v (still there: %v)", st, files.Has("pve01", "local:snippets/user.yaml"))
			}
		})
	}
}

// contentTour answers 200 once on each volume and disk-unlink handler, for
// TestEveryHandlerFitsReturnsSchema.
func contentTour(t *testing.T, c *apiClient) {
	t.Helper()
	createVM(t, c, 310, nil)
	volid := c.Call("POST", "/nodes/pve01/storage/local-lvm/content", url.Values{"filename": {"vm-310-disk-5"}, "vmid": {"310"}, "size": {"1G"}}).Must(t, "alloc").Data.(string)
	c.Call("GET", "/nodes/pve01/storage/local-lvm/content/"+volid, nil).Must(t, "volume info")
	c.Call("PUT", "/nodes/pve01/storage/local-lvm/content/"+volid, nil).Must(t, "volume attributes")
	waitTask(t, c, c.Call("DELETE", "/nodes/pve01/storage/local-lvm/content/"+volid, nil).Must(t, "volume delete").Data.(string))
	c.Call("PUT", "/nodes/pve01/qemu/310/unlink", url.Values{"idlist": {"scsi0"}}).Must(t, "unlink")
}
