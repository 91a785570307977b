package pvecontainer

import (
	"maps"
	"regexp"
	"slices"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// fastplug is $LXC_FASTPLUG_OPTIONS: written to the config at once, even
// on a running CT.
var fastplug = map[string]bool{"description": true, "onboot": true, "startup": true, "protection": true,
	"hostname": true, "hookscript": true, "cores": true, "tags": true, "lock": true}

// netKeyRe is vmconfig_hotplug_pending's m/^net(\d+)$/ (a new or changed
// NIC, update_net); netDeleteRe its delete loop's m/^net(\d)$/: a single
// digit, so a delete of net10 and up waits for the next start.
var (
	netKeyRe    = regexp.MustCompile(`^net\d+$`)
	netDeleteRe = regexp.MustCompile(`^net\d$`)
	mpKeyRe     = regexp.MustCompile(`^mp\d+$`)
)

// HotplugDelete tells whether vmconfig_hotplug_pending's delete loop
// (src/PVE/LXC/Config.pm) removes key from a running CT at once: a
// fast-plug option, an unusedN (its volume is freed, see
// VolumeInUse), swap, cpulimit and cpuunits through the cgroup, a NIC
// net0…net9 (veth_delete); anything else dies "skip" and stays pending.
func HotplugDelete(key string) bool {
	return fastplug[key] || unusedKeyRe.MatchString(key) || key == "swap" || key == "cpulimit" || key == "cpuunits" ||
		netDeleteRe.MatchString(key)
}

// HotplugSet tells whether vmconfig_hotplug_pending applies a pending
// value of key to a running CT whose current values are keys: the
// fast-plug options (update_pct_config's first loop), cpulimit and
// cpuunits, a NIC (update_net), memory and swap through the cgroup, a
// mount point (apply_pending_mountpoint) or a passthrough device
// (device_passthrough_hotplug) only when the key is new ("don't try to
// hotplug over existing mp/dev"). Reconstruction: the lab applies what PVE
// would try; a hot-plug that fails on a real node is not simulated.
func HotplugSet(keys map[string]string, key string) bool {
	switch {
	case fastplug[key], key == "memory", key == "swap", key == "cpulimit", key == "cpuunits", netKeyRe.MatchString(key):
		return true
	case mpKeyRe.MatchString(key), devKeyRe.MatchString(key):
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
