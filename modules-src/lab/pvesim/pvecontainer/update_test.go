package pvecontainer

import "testing"

// vmconfig_hotplug_pending's choice: fast-plug and cgroup options and NICs
// at once, a mount point only when new, anything else at the next start.
func TestHotplugged(t *testing.T) {
	keys := map[string]string{"mp0": "local:100/vm-100-disk-1.raw", "rootfs": "local:100/vm-100-disk-0.raw"}
	for key, want := range map[string]bool{
		"hostname": true, "cores": true, "memory": true, "swap": true, "cpulimit": true, "cpuunits": true,
		"net0": true, "mp1": true, // a new mount point
		"mp0": false, "rootfs": false, "ostype": false, "features": false, "dev0": false, "netx": false,
	} {
		if got := Hotplugged(keys, key); got != want {
			t.Errorf("Hotplugged(%s) = %v, want %v", key, got, want)
		}
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
