package qemuserver

import (
	"fmt"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// MaxUnusedDisks is qemu-server's MAX_UNUSED_DISKS.
const MaxUnusedDisks = 256

// UnusedSlot is where add_unused_volume (pve-guest-common
// AbstractConfig.pm) puts a volume the VM no longer uses: the lowest free
// unusedN of keys, or "" when an unusedN holds volid already. All taken is
// AbstractConfig.pm's die.
func UnusedSlot(keys map[string]string, volid string) (string, error) {
	key := ""
	for i := MaxUnusedDisks - 1; i >= 0; i-- {
		k := fmt.Sprintf("unused%d", i)
		if v, ok := keys[k]; ok {
			if v == volid {
				return "", nil
			}
			continue
		}
		key = k
	}
	if key == "" {
		return "", pvecommon.Die("Too many unused volumes - please delete them first.")
	}
	return key, nil
}

// usedVolumes are the volumes the drives of the configs use (unusedN
// aside), but skipKey's.
func usedVolumes(skipKey string, confs ...map[string]string) map[string]bool {
	used := map[string]bool{}
	for _, keys := range confs {
		for k, v := range keys {
			if k != skipKey && IsDriveKey(k) && !IsUnused(k) {
				used[ParseDrive(v).File()] = true
			}
		}
	}
	return used
}

// VolumeInUse is Drive.pm is_volume_in_use without snapshots (the lab has
// none): another drive key than skipKey, current or pending, uses volid.
func VolumeInUse(current, pending map[string]string, skipKey, volid string) bool {
	return usedVolumes(skipKey, current, pending)[volid]
}

// DropReusedUnused is write_vm_config's "remove 'unusedX' settings if we
// re-add a volume": an unusedN of current whose volume a drive (current
// or pending) uses again goes.
func DropReusedUnused(current, pending map[string]string) {
	used := usedVolumes("", current, pending)
	for k, v := range current {
		if strings.HasPrefix(k, "unused") && v != "" && used[v] {
			delete(current, k)
		}
	}
}
