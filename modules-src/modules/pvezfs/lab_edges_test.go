package pvezfs

// Issue 7 on a lab node, with the real blkid on the lab's disks and the
// zpool/zfs stand-ins: a disk with only a partition table is refused like
// any signature (Z3), a partition given for a disk is named as one, and a
// pool whose mount failed is not "converged" (Z5 means mounted).

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
)

// testLabEdges runs on the converged pool nvme-vm (args) of testLab.
func testLabEdges(t *testing.T, lab *labctl.Lab, bin string, args map[string]any, state func() string) {
	t.Helper()
	// Z3: sdc carries a GPT and no filesystem.
	before, jobs := state(), mustSSH(t, lab, jobLog)
	for _, check := range []bool{true, false} {
		res := invoke(t, lab, bin, map[string]any{"name": "tank", "devices": []any{"/dev/sdc"}}, check)
		msg, _ := res["msg"].(string)
		if !failed(res) || !strings.Contains(msg, "pttype=gpt") || !strings.Contains(msg, "/dev/disk/by-id/") || !strings.Contains(msg, "wipe_signatures") {
			t.Errorf("Z3 GPT-only disk, check=%v: failed=%v msg=%q", check, res["failed"], msg)
		}
	}
	// a partition given for a disk: said so, with the disk to give instead
	res := invoke(t, lab, bin, map[string]any{"name": "tank", "devices": []any{"/dev/sdc1"}}, false)
	if msg, _ := res["msg"].(string); !failed(res) || !strings.Contains(msg, "device /dev/sdc1 is a partition") || !strings.Contains(msg, "give the whole disk (/dev/sdc)") {
		t.Errorf("/dev/sdc1: %q", msg)
	}
	if after := state(); after != before || mustSSH(t, lab, jobLog) != jobs {
		t.Fatalf("refused disks changed the node:\n%s\n---\n%s", before, after)
	}

	// Z5: mountpoint right, mounted=no, and something left in the empty
	// mount point meanwhile (OpenZFS >= 2.0 would mount over it with
	// overlay=on, hiding the file: the module refuses instead).
	got := mustSSH(t, lab, "zfs unmount nvme-vm && mkdir -p /nvme-vm && touch /nvme-vm/stray && zfs get -H -o value mountpoint,mounted nvme-vm")
	if got != "/nvme-vm\nno\n" {
		t.Fatalf("could not unmount the pool by hand: %q", got)
	}
	for _, check := range []bool{true, false} {
		res := invoke(t, lab, bin, args, check)
		if msg, _ := res["msg"].(string); !failed(res) || !strings.Contains(msg, "mountpoint: /nvme-vm is not empty (stray") || res["changed"] != false {
			t.Errorf("Z5 cluttered mountpoint, check=%v: changed=%v msg=%q", check, res["changed"], msg)
		}
	}
	mustSSH(t, lab, "rm /nvme-vm/stray")
	want := []string{"mount nvme-vm at /nvme-vm (it was not mounted)"}
	before = state()
	check := invoke(t, lab, bin, args, true)
	if failed(check) || !reflect.DeepEqual(changes(check), want) {
		t.Errorf("Z5 unmounted, check mode: %v %q, want %q", check["msg"], changes(check), want)
	}
	if after := state(); after != before {
		t.Fatalf("Z5 check mode changed the node")
	}
	real := invoke(t, lab, bin, args, false)
	if failed(real) || !reflect.DeepEqual(changes(real), want) {
		t.Errorf("Z5 unmounted, real run: %v %q", real["msg"], changes(real))
	}
	if got := mustSSH(t, lab, "zfs get -H -o value mounted nvme-vm"); got != "yes\n" {
		t.Errorf("Z5: after the run the pool reads mounted=%q", got)
	}
	if again := invoke(t, lab, bin, args, false); failed(again) || again["changed"] != false {
		t.Errorf("Z5 rerun: %v %q", again["msg"], changes(again))
	}
}
