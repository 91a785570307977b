package pvecontainer

import (
	"regexp"
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
// written: required and read-only options, deleted or set.
func UpdateChecks(set map[string]string, deletes []string) error {
	for _, k := range deletes {
		switch k {
		case "memory", "rootfs", "ostype":
			return pvecommon.Die("unable to delete required option '%s'", k)
		case "unprivileged":
			return pvecommon.Die("unable to delete read-only option: '%s'", k)
		}
	}
	if _, ok := set["unprivileged"]; ok {
		return pvecommon.Die("unable to modify read-only option: 'unprivileged'")
	}
	return nil
}
