package pvezfs

import (
	"slices"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/host"
)

// TestNoOpCommandLines: a run on a converged pool asks the node each thing
// once, in three commands (issue 8: every command is a process start on the
// node, and the report used to read again what the plan had read: 13
// commands, 6 of them repeats; issue 24 §3: the pool and its disks in one
// `zpool list -v`, where `zpool list` and `zpool status` were two). In check
// mode too. The three are prefetched side by side, so their order is not
// fixed. TestNoOpReadsEachFactOnce counts them on a lab node.
func TestNoOpCommandLines(t *testing.T) {
	w := newWorld(t)
	args := func() map[string]any { return map[string]any{"name": "tank", "devices": []any{"/dev/sda"}} }
	if res := w.run(args(), false); failed(res) || res["changed"] != true {
		t.Fatalf("create: %v", res["msg"])
	}
	want := []string{
		"systemctl show -p LoadState,UnitFileState,ActiveState zfs-scrub-monthly@tank.timer zfs-scrub-weekly@tank.timer",
		"zfs get -H -p -o property,value,source acltype,atime,compression,mountpoint,xattr,mounted,canmount tank",
		"zpool list -v -P -p -o name,size,alloc,free,health,ashift tank",
	}
	for _, check := range []bool{false, true} {
		before := len(w.fake.Calls())
		res := w.run(args(), check)
		if failed(res) || res["changed"] != false {
			t.Fatalf("check=%v: no-op run: %v %q", check, res["msg"], changes(res))
		}
		if got := slices.Sorted(slices.Values(w.fake.Calls()[before:])); !slices.Equal(got, want) {
			t.Errorf("check=%v: a no-op run ran\n  %s\nwant\n  %s", check, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		// the report is built from those reads, not left empty
		pool := res["pool"].(map[string]any)
		props := pool["properties"].(map[string]any)
		if pool["ashift"] != "12" || pool["health"] != "ONLINE" || pool["layout"] != "single" || props["compression"] == nil {
			t.Errorf("check=%v: report = %v", check, pool)
		}
		if _, ok := props["canmount"]; ok {
			t.Errorf("check=%v: report shows canmount, which the task did not ask for: %v", check, props)
		}
	}
}

// TestReadsAfterApplyGoToTheNode: the memo of the run's reads ends with the
// first Apply. Verify and the report read the node again, so a value read
// before the change is never reported after it (the project's promise: a
// task reports what it read back). Without the invalidation, create's Verify
// would be told "no such pool" and the drift report would show the old
// compression.
func TestReadsAfterApplyGoToTheNode(t *testing.T) {
	w := newWorld(t)
	args := map[string]any{"name": "tank", "devices": []any{"/dev/sda"}}
	res := w.run(args, false)
	if failed(res) {
		t.Fatalf("create: %v", res["msg"])
	}
	poolLine := "zpool list -v -P -p -o name,size,alloc,free,health,ashift tank"
	calls := w.fake.Calls()
	create := slices.IndexFunc(calls, func(c string) bool { return strings.HasPrefix(c, "zpool create ") })
	if create < 0 || !slices.Contains(calls[:create], poolLine) || !slices.Contains(calls[create+1:], poolLine) {
		t.Errorf("the pool was not read before and again after zpool create: %q", calls)
	}
	if pool := res["pool"].(map[string]any); pool["exists"] != true || pool["ashift"] != "12" {
		t.Errorf("report after create = %v", pool)
	}

	w.pools["tank"].props["compression"] = "off" // drift, by hand
	before := len(w.fake.Calls())
	res = w.run(args, false)
	if failed(res) || !slices.Equal(changes(res), []string{"set compression=lz4 on tank (was off)"}) {
		t.Fatalf("drift: %v %q", res["msg"], changes(res))
	}
	calls = w.fake.Calls()[before:]
	set := slices.Index(calls, "zfs set compression=lz4 tank")
	if set < 0 || !slices.ContainsFunc(calls[set+1:], func(c string) bool { return strings.HasPrefix(c, "zfs get ") && strings.Contains(c, " compression ") }) {
		t.Errorf("Verify did not read compression from the node after zfs set: %q", calls)
	}
	props := res["pool"].(map[string]any)["properties"].(map[string]any)
	if got := props["compression"].(map[string]any)["value"]; got != "lz4" {
		t.Errorf("the report shows compression=%v, read before the change (want lz4, read after it)", got)
	}
}

// TestPrefetchedTimersReadAfterApply: the scrub timers are prefetched with
// the pool and its properties before any stage plans, and the memo holding
// that answer is emptied by the first change, so the scrub stage, planned
// after stage 2 applied a property, reads the timers again from the node.
// Here the property change also enables the monthly timer on the node (a
// side effect the test gives it): the stale prefetched answer (disabled)
// would plan an "enable and start" the node no longer needs (Z6), the fresh
// read plans nothing.
func TestPrefetchedTimersReadAfterApply(t *testing.T) {
	w := newWorld(t)
	args := map[string]any{"name": "tank", "devices": []any{"/dev/sda"}}
	// the pool as a create leaves it, made by hand (no run before this
	// one, so only this run's memo is under test), compression drifted
	w.pools["tank"] = &fakePool{devices: []string{"/dev/disk/by-id/wwn-0x5000000000000001"}, ashift: 12,
		props: map[string]string{"atime": "off", "compression": "off", "xattr": "sa", "acltype": "posixacl", "mountpoint": "/tank"}}
	monthly := "zfs-scrub-monthly@tank.timer"
	w.after = func(c host.Command) {
		if c.String() == "zfs set compression=lz4 tank" {
			w.units[monthly] = true
		}
	}
	show := "systemctl show -p LoadState,UnitFileState,ActiveState " + monthly + " zfs-scrub-weekly@tank.timer"
	before := len(w.fake.Calls())
	res := w.run(args, false)
	if failed(res) || !slices.Equal(changes(res), []string{"set compression=lz4 on tank (was off)"}) {
		t.Errorf("changes %q (%v), want only the property: the scrub stage planned from the timers read before the change", changes(res), res["msg"])
	}
	calls := w.fake.Calls()[before:]
	set := slices.Index(calls, "zfs set compression=lz4 tank")
	if set < 0 || slices.Index(calls, show) > set || !slices.Contains(calls[set+1:], show) {
		t.Errorf("the timers were not read once before and again after zfs set: %q", calls)
	}
	if slices.ContainsFunc(calls, func(c string) bool { return strings.HasPrefix(c, "systemctl enable") }) {
		t.Errorf("a timer the node had enabled was enabled again: %q", calls)
	}
}
