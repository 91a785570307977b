package pvecontainer

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// fastplug is $LXC_FASTPLUG_OPTIONS: written to the config at once, even
// on a running CT.
var fastplug = map[string]bool{"description": true, "onboot": true, "startup": true, "protection": true,
	"hostname": true, "hookscript": true, "cores": true, "tags": true, "lock": true}

// netKeyRe is update_pct_config's m/^net(\d+)$/.
var netKeyRe = regexp.MustCompile(`^net\d+$`)

// Hotplugged tells whether vmconfig_hotplug_pending applies key to a
// running CT whose current values are keys: the fast-plug options, the
// cgroup ones (memory, swap, cpulimit, cpuunits), a NIC (update_net), a
// mount point only when the key is new ("don't try to hotplug over
// existing mp").
func Hotplugged(keys map[string]string, key string) bool {
	switch {
	case fastplug[key], key == "memory", key == "swap", key == "cpulimit", key == "cpuunits", netKeyRe.MatchString(key):
		return true
	case strings.HasPrefix(key, "mp") && IsVolumeKey(key):
		_, exists := keys[key]
		return !exists
	}
	return false
}

// UpdateChecks are update_pct_config's refusals before anything is
// written, in its order (PVE/LXC/Config.pm). First the deletes: one of an
// option neither set nor pending is only warned about and skipped ("cannot
// delete '$opt' - not set in current configuration!"), before the
// required-option die; memory, rootfs and ostype are required,
// unprivileged is read-only, and removing an unusedN or mpN volume is a
// drive change that protection refuses. Then the new values in sorted key
// order: a mount point or rootfs under protection, and unprivileged, which
// is read-only. isSet tells whether a key is set now or pending.
func UpdateChecks(vmid int, set map[string]string, deletes []string, isSet func(string) bool, protected bool) error {
	for _, k := range deletes {
		if !isSet(k) {
			continue
		}
		switch {
		case k == "memory" || k == "rootfs" || k == "ostype":
			return pvecommon.Die("unable to delete required option '%s'", k)
		case unusedKeyRe.MatchString(k) || IsVolumeKey(k): // mpN: rootfs is required, above
			if protected {
				return pvecommon.Die("can't remove CT %d drive '%s' - protection mode enabled", vmid, k)
			}
		case k == "unprivileged":
			return pvecommon.Die("unable to delete read-only option: '%s'", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		switch {
		case IsVolumeKey(k) && protected:
			return pvecommon.Die("can't update CT %d drive '%s' - protection mode enabled", vmid, k)
		case k == "unprivileged":
			return pvecommon.Die("unable to modify read-only option: 'unprivileged'")
		}
	}
	return nil
}

// unusedKeyRe is update_pct_config's m/^unused(\d+)$/.
var unusedKeyRe = regexp.MustCompile(`^unused\d+$`)
