package pvezfs

import (
	"reflect"
	"strings"
	"testing"
)

// TestCreate: check mode predicts, changes nothing; the real run creates on
// the by-id name (Z2) with the create-time properties (Z4) and mountpoint
// (Z5), starts the scrub timer (Z6); the rerun changes nothing (Z1).
func TestCreate(t *testing.T) {
	w := newWorld(t)
	args := func() map[string]any { return map[string]any{"name": "nvme-vm", "devices": []any{"/dev/nvme0n1"}} }
	before := w.state()
	check := w.run(args(), true)
	if failed(check) || w.state() != before {
		t.Fatalf("check mode: %v, state changed: %v", check["msg"], w.state() != before)
	}
	real := w.run(args(), false)
	if failed(real) {
		t.Fatal(real["msg"])
	}
	if !reflect.DeepEqual(changes(real), changes(check)) {
		t.Errorf("real %q != predicted %q", changes(real), changes(check))
	}
	want := "zpool create -o ashift=12 -O acltype=posixacl -O atime=off -O compression=lz4 -O xattr=sa -m /nvme-vm nvme-vm /dev/disk/by-id/nvme-eui.0000000624aabbcc"
	if !w.fake.Ran(want) {
		t.Errorf("create command not run; calls: %q", w.fake.Calls())
	}
	if !w.units["zfs-scrub-monthly@nvme-vm.timer"] {
		t.Error("scrub timer not enabled (Z6)")
	}
	pool := real["pool"].(map[string]any)
	if pool["health"] != "ONLINE" || pool["layout"] != "single" {
		t.Errorf("pool = %v", pool)
	}
	again := w.run(args(), false)
	if failed(again) || again["changed"] != false {
		t.Fatalf("rerun: %v %q", again["msg"], changes(again))
	}
	for _, c := range w.fake.Calls() {
		if strings.HasPrefix(c, "zpool create") && c != want {
			t.Errorf("unexpected create: %s", c)
		}
	}
}

// TestLayouts: mirror and raidz command lines and too few devices.
func TestLayouts(t *testing.T) {
	cases := []struct {
		layout  string
		devices []any
		wantCmd string
		wantErr string
	}{
		{"mirror", []any{"/dev/sda", "/dev/sdb"}, "mirror /dev/disk/by-id/wwn-0x5000000000000001 /dev/disk/by-id/wwn-0x5000000000000002", ""},
		{"raidz1", []any{"/dev/sda", "/dev/sdb", "/dev/sdc"}, "raidz1 /dev/disk/by-id/wwn-0x5000000000000001", ""},
		{"mirror", []any{"/dev/sda"}, "", "devices: layout mirror needs at least 2"},
		{"raidz2", []any{"/dev/sda", "/dev/sdb"}, "", "devices: layout raidz2 needs at least 3"},
		{"single", []any{"/dev/sda", "/dev/sdb"}, "", "devices: layout single takes one device"},
		{"mirror", []any{"/dev/sda", "/dev/disk/by-id/wwn-0x5000000000000001"}, "", "same disk"},
	}
	for _, c := range cases {
		t.Run(c.layout+c.wantErr, func(t *testing.T) {
			w := newWorld(t)
			res := w.run(map[string]any{"name": "tank", "layout": c.layout, "devices": c.devices}, false)
			if c.wantErr != "" {
				if !failed(res) || !strings.Contains(res["msg"].(string), c.wantErr) {
					t.Fatalf("msg = %v", res["msg"])
				}
				if len(w.pools) != 0 {
					t.Error("a pool was created")
				}
				return
			}
			if failed(res) {
				t.Fatal(res["msg"])
			}
			found := false
			for _, call := range w.fake.Calls() {
				if strings.HasPrefix(call, "zpool create") && strings.Contains(call, c.wantCmd) {
					found = true
				}
			}
			if !found {
				t.Errorf("no create with %q in %q", c.wantCmd, w.fake.Calls())
			}
			if again := w.run(map[string]any{"name": "tank", "layout": c.layout, "devices": c.devices}, false); again["changed"] != false || failed(again) {
				t.Errorf("rerun: %v %v", again["msg"], again["changes"])
			}
		})
	}
}

// TestSignatureRefused: Z3 — a used disk is refused naming it; the wipe
// option is explicit; a disk of an imported pool is refused regardless.
func TestSignatureRefused(t *testing.T) {
	w := newWorld(t)
	w.sigs["/dev/sda"] = `/dev/sda: UUID="abc" BLOCK_SIZE="4096" TYPE="ext4"`
	res := w.run(map[string]any{"name": "tank", "devices": []any{"/dev/sda"}}, false)
	if !failed(res) || !strings.Contains(res["msg"].(string), "wwn-0x5000000000000001") || !strings.Contains(res["msg"].(string), "type=ext4") {
		t.Fatalf("msg = %v", res["msg"])
	}
	if len(w.pools) != 0 || w.fake.Ran("wipefs *") {
		t.Fatal("acted on a used disk")
	}
	check := w.run(map[string]any{"name": "tank", "devices": []any{"/dev/sda"}, "wipe_signatures": true}, true)
	if failed(check) || len(changes(check)) != 3 || w.fake.Ran("wipefs *") {
		t.Fatalf("check with wipe: %v %q", check["msg"], check["changes"])
	}
	res = w.run(map[string]any{"name": "tank", "devices": []any{"/dev/sda"}, "wipe_signatures": true}, false)
	if failed(res) || w.pools["tank"] == nil {
		t.Fatalf("wipe run: %v", res["msg"])
	}
	// Now /dev/sda belongs to the imported pool tank: never wiped.
	res = w.run(map[string]any{"name": "other", "devices": []any{"/dev/sda"}, "wipe_signatures": true}, false)
	if !failed(res) || !strings.Contains(res["msg"].(string), `imported ZFS pool "tank"`) {
		t.Fatalf("msg = %v", res["msg"])
	}
}

// TestExistingMismatch: Z4 — a different layout or ashift fails, explains, destroys nothing.
func TestExistingMismatch(t *testing.T) {
	cases := []struct {
		name string
		args map[string]any
		want string
	}{
		{"ashift", map[string]any{"name": "tank", "devices": []any{"/dev/sda"}, "ashift": 13}, "ashift: pool tank was created with ashift 12"},
		{"layout", map[string]any{"name": "tank", "devices": []any{"/dev/sda", "/dev/sdb"}, "layout": "mirror"}, "never rebuilds"},
		{"devices", map[string]any{"name": "tank", "devices": []any{"/dev/sdb"}}, "never rebuilds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			if res := w.run(map[string]any{"name": "tank", "devices": []any{"/dev/sda"}}, false); failed(res) {
				t.Fatal(res["msg"])
			}
			res := w.run(c.args, false)
			if !failed(res) || !strings.Contains(res["msg"].(string), c.want) {
				t.Fatalf("msg = %v", res["msg"])
			}
			if w.pools["tank"] == nil || w.fake.Ran("zpool destroy *") {
				t.Fatal("pool destroyed")
			}
		})
	}
}

// TestMountpointDrift: Z5 — none is refused; a drifted mountpoint and a
// changed property converge with zfs set.
func TestMountpointDrift(t *testing.T) {
	w := newWorld(t)
	res := w.run(map[string]any{"name": "tank", "devices": []any{"/dev/sda"}, "mountpoint": "none"}, false)
	if !failed(res) || !strings.Contains(res["msg"].(string), "LXC") || len(w.fake.Calls()) != 0 {
		t.Fatalf("mountpoint none: %v, calls %q", res["msg"], w.fake.Calls())
	}
	if res := w.run(map[string]any{"name": "tank", "devices": []any{"/dev/sda"}}, false); failed(res) {
		t.Fatal(res["msg"])
	}
	w.pools["tank"].props["mountpoint"] = "none"
	args := map[string]any{"name": "tank", "devices": []any{"/dev/sda"}, "properties": map[string]any{"compression": "zstd"}}
	check := w.run(args, true)
	want := []string{"set compression=zstd on tank (was lz4)", "set mountpoint=/tank on tank (was none)"}
	if !reflect.DeepEqual(changes(check), want) || w.pools["tank"].props["mountpoint"] != "none" {
		t.Fatalf("check: %q", changes(check))
	}
	res = w.run(args, false)
	if !reflect.DeepEqual(changes(res), want) || w.pools["tank"].props["mountpoint"] != "/tank" {
		t.Fatalf("real: %v %q", res["msg"], changes(res))
	}
	if again := w.run(args, false); again["changed"] != false {
		t.Errorf("rerun changed: %q", changes(again))
	}
}

// TestAbsent: destroy only with force_destroy.
func TestAbsent(t *testing.T) {
	w := newWorld(t)
	w.run(map[string]any{"name": "tank", "devices": []any{"/dev/sda"}}, false)
	res := w.run(map[string]any{"name": "tank", "state": "absent"}, false)
	if !failed(res) || !strings.Contains(res["msg"].(string), "force_destroy") || w.pools["tank"] == nil {
		t.Fatalf("msg = %v", res["msg"])
	}
	res = w.run(map[string]any{"name": "tank", "state": "absent", "force_destroy": true}, false)
	if failed(res) || w.pools["tank"] != nil {
		t.Fatalf("destroy: %v", res["msg"])
	}
	if res := w.run(map[string]any{"name": "tank", "state": "absent", "force_destroy": true}, false); res["changed"] != false {
		t.Error("second destroy changed")
	}
}

// TestBadInput names the parameter and runs nothing.
func TestBadInput(t *testing.T) {
	cases := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"name": "tank", "devices": []any{"/dev/nvme9n1"}}, "devices: device /dev/nvme9n1 does not exist"},
		{map[string]any{"name": "tank"}, "devices"},
		{map[string]any{"name": "tank", "devices": []any{"/dev/sda"}, "bogus": 1}, "bogus"},
		{map[string]any{"name": "mirror", "devices": []any{"/dev/sda"}}, "name:"},
		{map[string]any{"name": "tank", "devices": []any{"/dev/sda"}, "ashift": 20}, "ashift:"},
		{map[string]any{"name": "tank", "devices": []any{"/dev/disk/by-id/nvme-eui.0000000624aabbcc-part1"}}, "partition"},
		{map[string]any{"name": "tank", "devices": []any{"/dev/sda"}, "mountpoint": "/tank\nx"}, "mountpoint: "},
	}
	for _, c := range cases {
		w := newWorld(t)
		res := w.run(c.args, false)
		if !failed(res) || !strings.Contains(res["msg"].(string), c.want) {
			t.Errorf("%v: msg = %v, want %q", c.args, res["msg"], c.want)
		}
		if len(w.pools) != 0 {
			t.Error("pool created")
		}
	}
}
