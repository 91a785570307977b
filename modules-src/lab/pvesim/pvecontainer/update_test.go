package pvecontainer

import "testing"

// vmconfig_hotplug_pending's delete loop (src/PVE/LXC/Config.pm;
// reconstruction): fast-plug options, unusedN (its volume is freed), swap,
// cpulimit, cpuunits and net0…net9 go at once; m/^net(\d)$/ has one digit,
// so net10 waits, as do mount points, memory's siblings and the rest.
func TestHotplugDelete(t *testing.T) {
	for key, want := range map[string]bool{
		"hostname": true, "tags": true, "unused0": true, "unused12": true, "swap": true, "cpulimit": true, "cpuunits": true,
		"net0": true, "net9": true,
		"net10": false, "net31": false, "mp0": false, "dev0": false, "features": false, "nameserver": false, "unusedx": false,
	} {
		if got := HotplugDelete(key); got != want {
			t.Errorf("HotplugDelete(%s) = %v, want %v", key, got, want)
		}
	}
}

// vmconfig_hotplug_pending's set loop (src/PVE/LXC/Config.pm;
// reconstruction): fast-plug and cgroup options and NICs (any number) at
// once, a mount point or a passthrough device only when its key is new
// ("don't try to hotplug over existing mp/dev"), anything else at the next
// start.
func TestHotplugSet(t *testing.T) {
	keys := map[string]string{"mp0": "local:100/vm-100-disk-1.raw,mp=/a", "rootfs": "local:100/vm-100-disk-0.raw", "dev0": "/dev/null"}
	for key, want := range map[string]bool{
		"hostname": true, "cores": true, "memory": true, "swap": true, "cpulimit": true, "cpuunits": true,
		"net0": true, "net10": true,
		"mp1": true, "dev1": true, // new
		"mp0": false, "dev0": false, // over an existing one
		"rootfs": false, "ostype": false, "features": false, "netx": false, "unused0": false,
	} {
		if got := HotplugSet(keys, key); got != want {
			t.Errorf("HotplugSet(%s) = %v, want %v", key, got, want)
		}
	}
}

// is_volume_in_use (src/PVE/LXC/Config.pm) looks at rootfs and mount
// points, current and pending, never at unusedN; write_pct_config drops an
// unusedN a current mount point uses again, not one only a pending value
// uses.
func TestVolumeInUseDropUsedUnused(t *testing.T) {
	cur := map[string]string{"rootfs": "local:100/vm-100-disk-0.raw,size=1G", "mp0": "local:100/vm-100-disk-1.raw,mp=/a",
		"unused0": "local:100/vm-100-disk-1.raw", "unused1": "local:100/vm-100-disk-2.raw", "unused2": "local:100/vm-100-disk-3.raw"}
	pending := map[string]string{"mp1": "local:100/vm-100-disk-2.raw,mp=/b"}
	for volid, want := range map[string]bool{
		"local:100/vm-100-disk-0.raw": true, "local:100/vm-100-disk-1.raw": true, "local:100/vm-100-disk-2.raw": true,
		"local:100/vm-100-disk-3.raw":       false,
		"local:100/vm-100-disk-1.raw,mp=/a": false, // a whole mount point string, as apply_pending_mountpoint passes it
	} {
		if got := VolumeInUse(cur, pending, volid); got != want {
			t.Errorf("VolumeInUse(%s) = %v, want %v", volid, got, want)
		}
	}
	DropUsedUnused(cur)
	_, u0 := cur["unused0"]
	_, u1 := cur["unused1"]
	_, u2 := cur["unused2"]
	if u0 || !u1 || !u2 {
		t.Errorf("after DropUsedUnused: %v", cur)
	}
}

// update_pct_config refuses deleting required options, touching
// unprivileged and changing a drive under protection, with PVE's messages
// and in its order; a delete of an option that is not set is skipped with a
// warning before any of those (PVE/LXC/Config.pm).
func TestUpdateChecks(t *testing.T) {
	set := map[string]bool{"memory": true, "rootfs": true, "ostype": true, "unprivileged": true, "mp0": true, "unused0": true, "swap": true}
	isSet := func(k string) bool { return set[k] }
	none := func(string) bool { return false }
	for _, c := range []struct {
		set       map[string]string
		dels      []string
		isSet     func(string) bool
		protected bool
		want      string
	}{
		{nil, []string{"memory"}, isSet, false, "unable to delete required option 'memory'"},
		{nil, []string{"rootfs"}, isSet, false, "unable to delete required option 'rootfs'"},
		{nil, []string{"ostype"}, isSet, false, "unable to delete required option 'ostype'"},
		{nil, []string{"unprivileged"}, isSet, false, "unable to delete read-only option: 'unprivileged'"},
		{map[string]string{"unprivileged": "0"}, nil, isSet, false, "unable to modify read-only option: 'unprivileged'"},
		{map[string]string{"memory": "512"}, []string{"swap", "mp0"}, isSet, false, ""},
		// not set: a warning, and the delete is skipped before the die
		{nil, []string{"ostype", "unprivileged"}, none, false, ""},
		// removing a volume is a drive change that protection refuses
		{nil, []string{"mp0"}, isSet, true, "can't remove CT 100 drive 'mp0' - protection mode enabled"},
		{nil, []string{"unused0"}, isSet, true, "can't remove CT 100 drive 'unused0' - protection mode enabled"},
		{nil, []string{"mp0"}, none, true, ""},
		{nil, []string{"swap"}, isSet, true, ""},
		// new values in sorted key order: mp0 before unprivileged
		{map[string]string{"unprivileged": "1", "mp0": "local:1,mp=/x"}, nil, isSet, true, "can't update CT 100 drive 'mp0' - protection mode enabled"},
		{map[string]string{"unprivileged": "1", "mp0": "local:1,mp=/x"}, nil, isSet, false, "unable to modify read-only option: 'unprivileged'"},
		{map[string]string{"rootfs": "local:8"}, nil, isSet, true, "can't update CT 100 drive 'rootfs' - protection mode enabled"},
		{map[string]string{"cores": "2"}, nil, isSet, true, ""},
	} {
		err := UpdateChecks(100, c.set, c.dels, c.isSet, c.protected)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("UpdateChecks(%v, %v, protected %v) = %q, want %q", c.set, c.dels, c.protected, got, c.want)
		}
	}
}

func TestIsVolumeKey(t *testing.T) {
	for key, want := range map[string]bool{"rootfs": true, "mp0": true, "mp10": true, "mp": false, "unused0": false, "rootfs0": false} {
		if IsVolumeKey(key) != want {
			t.Errorf("IsVolumeKey(%s) != %v", key, want)
		}
	}
}
