package pvezfs

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/labtest"
)

// TestNoOpReadsEachFactOnce: on a lab node, a run on a converged pool (Z1:
// found, nothing created; Z5 mounted; Z6 timers as asked) starts exactly
// three commands, each once: the pool with its disks (`zpool list -v`),
// its properties (`zfs get`) and the scrub timers (`systemctl show`), in
// check mode too (issue 24 §3: it was four, `zpool list` and `zpool
// status`). Counted from what the lab recorded: every zpool, zfs and
// systemctl stand-in writes its command line to commands.log when it
// starts, whatever the module thinks it ran. The module's own list (-vv)
// must agree with it, so no other program (a real blkid, lsblk) ran either.
func TestNoOpReadsEachFactOnce(t *testing.T) {
	lab, _ := labtest.Start(t, 9, 1)
	bin := labtest.NodeBinary
	args := map[string]any{"name": "nvme-vm", "devices": []any{"/dev/nvme0n1"}}
	if res := invoke(t, lab, bin, args, false); failed(res) || res["changed"] != true {
		t.Fatalf("create: %v", res["msg"])
	}
	want := []string{
		"systemctl show -p LoadState,UnitFileState,ActiveState zfs-scrub-monthly@nvme-vm.timer zfs-scrub-weekly@nvme-vm.timer",
		"zfs get -H -p -o property,value,source acltype,atime,compression,mountpoint,xattr,mounted,canmount nvme-vm",
		"zpool list -v -P -p -o name,size,alloc,free,health,ashift nvme-vm",
	}
	for _, check := range []bool{false, true} {
		mustSSH(t, lab, ": > /var/lib/gopve-lab/commands.log")
		a := map[string]any{"_ansible_verbosity": 2}
		for k, v := range args {
			a[k] = v
		}
		res := invoke(t, lab, bin, a, check)
		if failed(res) || res["changed"] != false {
			t.Fatalf("check=%v: no-op run: %v %q", check, res["msg"], changes(res))
		}
		var started []string
		for _, l := range nonEmpty(strings.Split(mustSSH(t, lab, "cat /var/lib/gopve-lab/commands.log"), "\n")) {
			var argv []string
			if err := json.Unmarshal([]byte(l), &argv); err != nil {
				t.Fatalf("commands.log line %q: %v", l, err)
			}
			started = append(started, strings.Join(argv, " "))
		}
		slices.Sort(started)
		if !slices.Equal(started, want) {
			t.Errorf("check=%v: the lab saw\n  %s\nwant\n  %s", check, strings.Join(started, "\n  "), strings.Join(want, "\n  "))
		}
		var ran []string
		for _, c := range res["commands"].([]any) {
			ran = append(ran, c.(map[string]any)["cmd"].(string))
		}
		slices.Sort(ran)
		if !slices.Equal(ran, want) {
			t.Errorf("check=%v: the module says it ran\n  %s\nwant\n  %s", check, strings.Join(ran, "\n  "), strings.Join(want, "\n  "))
		}
		// the report is the tree those reads gave
		pool := res["pool"].(map[string]any)
		if pool["layout"] != "single" || pool["ashift"] != "12" || pool["health"] != "ONLINE" || len(pool["vdevs"].([]any)) != 1 {
			t.Errorf("check=%v: report = %v", check, pool)
		}
	}
}
