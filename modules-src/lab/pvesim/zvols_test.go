package pvesim

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
)

// With Config.ZFS a zfspool storage's guest volumes are made with the zfs
// commands ZFSPoolPlugin runs (names, KiB sizes, -s/-b from the storage,
// resize rounded to 1 MiB, __base__ snapshot, clone, destroy -r), and a zfs
// failure fails the operation with zfs's message and records no volume.
func TestZFSPoolVolumesRunZFS(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var cmds []string
	s := startSimWith(t, simOpts{}, func(c *Config) {
		c.ZFS = func(node string, args ...string) error {
			mu.Lock()
			defer mu.Unlock()
			cmd := node + ": " + strings.Join(args, " ")
			cmds = append(cmds, cmd)
			if strings.HasSuffix(cmd, "vm-102-disk-0") && args[0] == "create" {
				return fmt.Errorf("cannot create 'tank/data/vm-102-disk-0': out of space")
			}
			return nil
		}
	})
	c := newClient(t, s, "pve01").LabToken()
	c.Call("POST", "/storage", url.Values{"storage": {"tank"}, "type": {"zfspool"}, "pool": {"tank/data"},
		"sparse": {"1"}, "blocksize": {"8k"}, "content": {"images,rootdir"}}).Must(t, "add tank")
	took := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := cmds
		cmds = nil
		return out
	}
	expect := func(step string, want ...string) {
		t.Helper()
		if got := took(); !slices.Equal(got, want) {
			t.Errorf("%s ran %q, want %q", step, got, want)
		}
	}

	if st := mustTask(t, c, "POST", "/nodes/pve01/lxc", url.Values{"vmid": {"200"}, "ostemplate": {"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"},
		"rootfs": {"tank:2"}}); st["exitstatus"] != "OK" {
		t.Fatalf("create CT: %v", st)
	}
	expect("create CT", "pve01: create -o acltype=posixacl -o xattr=sa -o refquota=2097152k tank/data/subvol-200-disk-0")
	if st := mustTask(t, c, "DELETE", "/nodes/pve01/lxc/200", nil); st["exitstatus"] != "OK" {
		t.Fatalf("destroy CT: %v", st)
	}
	expect("destroy CT", "pve01: destroy -r tank/data/subvol-200-disk-0")

	createVM(t, c, 100, url.Values{"scsi0": {"tank:1"}})
	expect("create", "pve01: create -s -b 8k -V 1048576k tank/data/vm-100-disk-0")
	if st := mustTask(t, c, "PUT", "/nodes/pve01/qemu/100/resize", url.Values{"disk": {"scsi0"}, "size": {"+1000K"}}); st["exitstatus"] != "OK" {
		t.Fatalf("resize: %v", st)
	}
	expect("resize", "pve01: set volsize=1049600k tank/data/vm-100-disk-0")
	if st := mustTask(t, c, "POST", "/nodes/pve01/qemu/100/template", nil); st["exitstatus"] != "OK" {
		t.Fatalf("template: %v", st)
	}
	expect("template", "pve01: rename tank/data/vm-100-disk-0 tank/data/base-100-disk-0", "pve01: snapshot tank/data/base-100-disk-0@__base__")
	if st := mustTask(t, c, "POST", "/nodes/pve01/qemu/100/clone", url.Values{"newid": {"101"}}); st["exitstatus"] != "OK" {
		t.Fatalf("linked clone: %v", st)
	}
	expect("linked clone", "pve01: clone tank/data/base-100-disk-0@__base__ tank/data/vm-101-disk-0")

	// zfs refuses: the create fails with its message, nothing is recorded.
	p := url.Values{"vmid": {"102"}, "scsi0": {"tank:1"}}
	upid := c.Call("POST", "/nodes/pve01/qemu", p).Must(t, "create 102").Data.(string)
	if st := waitTask(t, c, upid); !strings.Contains(fmt.Sprint(st["exitstatus"]), "zfs error: cannot create 'tank/data/vm-102-disk-0': out of space") {
		t.Errorf("a zfs failure: %v", st)
	}
	took()
	content := c.Call("GET", "/nodes/pve01/storage/tank/content", nil).Must(t, "content").List()
	var ids []string
	for _, v := range content {
		ids = append(ids, fmt.Sprint(v["volid"]))
	}
	if want := []string{"tank:base-100-disk-0", "tank:base-100-disk-0/vm-101-disk-0"}; !slices.Equal(ids, want) {
		t.Errorf("content %v, want %v", ids, want)
	}

	// A template whose base a linked clone uses is not destroyed
	// (destroy_vm's volume_is_base_and_used check): zfs is not asked.
	if st := mustTask(t, c, "DELETE", "/nodes/pve01/qemu/100", nil); st["exitstatus"] != "base volume 'tank:base-100-disk-0' is still in use by linked cloned" {
		t.Fatalf("destroy template: %v", st)
	}
	expect("destroy of a template with a linked clone")
	if st := mustTask(t, c, "DELETE", "/nodes/pve01/qemu/101", nil); st["exitstatus"] != "OK" {
		t.Fatalf("destroy 101: %v", st)
	}
	expect("destroy", "pve01: destroy -r tank/data/vm-101-disk-0")
}
