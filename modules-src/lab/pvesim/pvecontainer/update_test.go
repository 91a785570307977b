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

// update_pct_config refuses deleting required options and touching
// unprivileged, with PVE's messages.
func TestUpdateChecks(t *testing.T) {
	for _, c := range []struct {
		set  map[string]string
		dels []string
		want string
	}{
		{nil, []string{"memory"}, "unable to delete required option 'memory'"},
		{nil, []string{"rootfs"}, "unable to delete required option 'rootfs'"},
		{nil, []string{"ostype"}, "unable to delete required option 'ostype'"},
		{nil, []string{"unprivileged"}, "unable to delete read-only option: 'unprivileged'"},
		{map[string]string{"unprivileged": "0"}, nil, "unable to modify read-only option: 'unprivileged'"},
		{map[string]string{"memory": "512"}, []string{"swap", "mp0"}, ""},
	} {
		err := UpdateChecks(c.set, c.dels)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("UpdateChecks(%v, %v) = %q, want %q", c.set, c.dels, got, c.want)
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
