package pvezfs

// The edges a careful user and a hostile input found (issue 7): properties
// with units, property names and values zfs refuses, a partition given for a
// disk, a create that fails after creating, a pool that is not mounted, and
// state=absent leaving the scrub timer behind.

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// Properties with units converge: zfs get -p reads bytes back, the task
// wrote 1M or 10G (Z4/Z5 convergence on every run).
func TestPropertiesWithUnitsConverge(t *testing.T) {
	w := newWorld(t)
	args := func() map[string]any {
		return map[string]any{"name": "tank", "devices": []any{"/dev/sda"},
			"properties": map[string]any{"recordsize": "1M", "quota": "10G", "reservation": "1G", "compress": "zstd"}}
	}
	if res := w.run(args(), false); failed(res) {
		t.Fatal(res["msg"])
	}
	if got := w.pools["tank"].props["recordsize"]; got != "1048576" {
		t.Fatalf("recordsize stored as %q", got)
	}
	again := w.run(args(), false)
	if failed(again) || again["changed"] != false {
		t.Fatalf("rerun: %v %q", again["msg"], changes(again))
	}
	// a real drift is still seen, and reported in the user's unit
	w.pools["tank"].props["recordsize"] = "131072"
	check := w.run(args(), true)
	if want := []string{"set recordsize=1M on tank (was 131072)"}; failed(check) || !reflect.DeepEqual(changes(check), want) {
		t.Fatalf("drift: %v %q, want %q", check["msg"], changes(check), want)
	}
}

// Names and values zfs refuses are refused before planning, in check mode
// too, so the prediction stays exact; a key starting with "-" never reaches
// the command line.
func TestPropertiesValidatedBeforePlanning(t *testing.T) {
	cases := []struct {
		props map[string]any
		want  string
	}{
		{map[string]any{"compression": "bogus"}, "properties: compression=bogus: zfs accepts"},
		{map[string]any{"bogusprop": "on"}, "properties: bogusprop is not a ZFS filesystem property"},
		{map[string]any{"-f": "on"}, "starts with '-'"},
		{map[string]any{"recordsize": "3K"}, "power of 2"},
		{map[string]any{"used": "1G"}, "read-only"},
		{map[string]any{"canmount": "off"}, "allow_unmounted"},
		{map[string]any{"org.example:note": "a\nb"}, "one line"},
	}
	for _, existing := range []bool{false, true} {
		for _, c := range cases {
			w := newWorld(t)
			if existing {
				if res := w.run(map[string]any{"name": "tank", "devices": []any{"/dev/sda"}}, false); failed(res) {
					t.Fatal(res["msg"])
				}
			}
			n, before := len(w.fake.Calls()), w.state()
			for _, check := range []bool{true, false} {
				res := w.run(map[string]any{"name": "tank", "devices": []any{"/dev/sda"}, "properties": c.props}, check)
				if msg, _ := res["msg"].(string); !failed(res) || !strings.Contains(msg, c.want) {
					t.Errorf("existing=%v check=%v %v: msg = %q, want a failure with %q", existing, check, c.props, msg, c.want)
				}
			}
			if len(w.fake.Calls()) != n || w.state() != before {
				t.Errorf("existing=%v %v: refused input still ran %q", existing, c.props, w.fake.Calls()[n:])
			}
		}
	}
	// create-time properties are refused on an existing pool that differs
	w := newWorld(t)
	w.run(map[string]any{"name": "tank", "devices": []any{"/dev/sda"}}, false)
	res := w.run(map[string]any{"name": "tank", "devices": []any{"/dev/sda"}, "properties": map[string]any{"casesensitivity": "mixed"}}, true)
	if msg, _ := res["msg"].(string); !failed(res) || !strings.Contains(msg, "only be set when a pool is created") {
		t.Errorf("casesensitivity on an existing pool: %q", msg)
	}
}

// A partition given for a disk is named as such (not "no stable link").
func TestPartitionRefused(t *testing.T) {
	w := newWorld(t)
	res := w.run(map[string]any{"name": "tank", "devices": []any{"/dev/nvme0n1p1"}}, true)
	msg, _ := res["msg"].(string)
	if !failed(res) || !strings.Contains(msg, "is a partition") || !strings.Contains(msg, "give the whole disk (/dev/nvme0n1)") {
		t.Fatalf("msg = %q", msg)
	}
}

// zpool create exits 1 after creating the pool when the mount fails: the
// failure path reads the node back, says the pool exists, and the run
// reports changed (the node did change).
func TestCreateFailsAfterCreating(t *testing.T) {
	w := newWorld(t)
	w.mountFails = true
	res := w.run(map[string]any{"name": "tank", "devices": []any{"/dev/sda"}}, false)
	msg, _ := res["msg"].(string)
	if !failed(res) || !strings.Contains(msg, "pool tank now exists") || !strings.Contains(msg, "not mounted at /tank") || !strings.Contains(msg, "directory is not empty") {
		t.Errorf("msg = %q", msg)
	}
	if res["changed"] != true {
		t.Errorf("changed = %v after a create that left a pool behind", res["changed"])
	}
	// the next run converges the pool it left: mounted, not created again
	w.mountFails = false
	again := w.run(map[string]any{"name": "tank", "devices": []any{"/dev/sda"}}, false)
	if failed(again) || !reflect.DeepEqual(changes(again), []string{"mount tank at /tank (it was not mounted)", "enable and start zfs-scrub-monthly@tank.timer"}) {
		t.Errorf("next run: %v %q", again["msg"], changes(again))
	}
}

// Z5 means mounted: an existing pool with the right mountpoint property but
// mounted=no is not converged.
func TestUnmountedPoolIsMounted(t *testing.T) {
	w := newWorld(t)
	args := map[string]any{"name": "tank", "devices": []any{"/dev/sda"}}
	if res := w.run(args, false); failed(res) {
		t.Fatal(res["msg"])
	}
	w.pools["tank"].unmounted = true
	check := w.run(args, true)
	want := []string{"mount tank at /tank (it was not mounted)"}
	if failed(check) || !reflect.DeepEqual(changes(check), want) || !w.pools["tank"].unmounted {
		t.Fatalf("check: %v %q", check["msg"], changes(check))
	}
	res := w.run(args, false)
	if failed(res) || !reflect.DeepEqual(changes(res), want) || w.pools["tank"].unmounted || !w.fake.Ran("zfs mount tank") {
		t.Fatalf("real: %v %q", res["msg"], changes(res))
	}
	if again := w.run(args, false); again["changed"] != false {
		t.Errorf("rerun: %q", changes(again))
	}
	// a mountpoint directory with files is refused before any write: zfs
	// could not mount there, and check mode says so too
	w.pools["tank"].unmounted = true
	if err := os.MkdirAll(w.root.Path("/tank/stray"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, checkMode := range []bool{true, false} {
		res := w.run(args, checkMode)
		if msg, _ := res["msg"].(string); !failed(res) || !strings.Contains(msg, "mountpoint: /tank is not empty (stray") {
			t.Errorf("check=%v: msg = %q", checkMode, msg)
		}
	}
}

// A mountpoint directory with files is refused before zpool create (which
// would create the pool and fail to mount it).
func TestCreateRefusesBusyMountpoint(t *testing.T) {
	w := newWorld(t)
	if err := os.MkdirAll(w.root.Path("/tank/old-data"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := w.run(map[string]any{"name": "tank", "devices": []any{"/dev/sda"}}, true)
	if msg, _ := res["msg"].(string); !failed(res) || !strings.Contains(msg, "/tank is not empty") {
		t.Fatalf("msg = %q", msg)
	}
}

// state=absent also disables the pool's scrub timer (Z6), and a timer left
// by an earlier destroy is disabled on the next run.
func TestAbsentDisablesScrubTimer(t *testing.T) {
	w := newWorld(t)
	if res := w.run(map[string]any{"name": "tank", "devices": []any{"/dev/sda"}}, false); failed(res) {
		t.Fatal(res["msg"])
	}
	absent := map[string]any{"name": "tank", "state": "absent", "force_destroy": true}
	check := w.run(absent, true)
	want := []string{"destroy pool tank and all its data", "disable and stop zfs-scrub-monthly@tank.timer"}
	if !reflect.DeepEqual(changes(check), want) || w.pools["tank"] == nil || !w.units["zfs-scrub-monthly@tank.timer"] {
		t.Fatalf("check: %v %q", check["msg"], changes(check))
	}
	res := w.run(absent, false)
	if failed(res) || !reflect.DeepEqual(changes(res), want) || w.units["zfs-scrub-monthly@tank.timer"] || w.pools["tank"] != nil {
		t.Fatalf("real: %v %q", res["msg"], changes(res))
	}
	w.units["zfs-scrub-monthly@tank.timer"] = true // left by an older version
	res = w.run(absent, false)
	if !reflect.DeepEqual(changes(res), want[1:]) || w.units["zfs-scrub-monthly@tank.timer"] {
		t.Fatalf("leftover timer: %v %q", res["msg"], changes(res))
	}
}
