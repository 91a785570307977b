package pvecontainer

import (
	"fmt"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// MountPoint is a rootfs or mpN value as parse_volume reads it
// (src/PVE/LXC/Config.pm $parse_ct_mountpoint_full): a property string
// whose default key is volume. Reconstruction: the lab keeps the options
// as written and only reads volume and size.
type MountPoint struct{ pvecommon.Props }

// ParseMountPoint reads a rootfs or mpN value.
func ParseMountPoint(v string) MountPoint { return MountPoint{pvecommon.ParseProps(v, "volume")} }

// Volume is the mount point's volume: a volume ID, "storage:size" for a
// new one, or a path for a bind or device mount.
func (m MountPoint) Volume() string { return m.Get("volume") }

// Print is print_ct_mountpoint: the volume first, as the default key.
func (m MountPoint) Print() string { return m.Props.Print("volume") }

// VolumeKeys lists a config's rootfs and mount points in
// valid_volume_keys order (rootfs, mp0, mp1, …; Config.pm
// foreach_volume): the order create_disks allocates them, so rootfs gets
// disk-0.
func VolumeKeys(keys map[string]string) []string {
	var out []string
	if _, ok := keys["rootfs"]; ok {
		out = append(out, "rootfs")
	}
	for i := 0; i <= 255; i++ {
		if _, ok := keys[fmt.Sprintf("mp%d", i)]; ok {
			out = append(out, fmt.Sprintf("mp%d", i))
		}
	}
	return out
}

// VolumeInUse is is_volume_in_use with snapshots and pending
// (src/PVE/LXC/Config.pm $__is_volume_in_use): a rootfs or mount point of
// current or pending whose volume is volid. unusedN keys do not count.
// The lab has no snapshots. Callers pass what PVE passes: for an unusedN
// its value, the volume ID; for a removed or replaced mpN the whole
// mount point string (vmconfig_apply_pending, apply_pending_mountpoint),
// which names no volume, so the old volume always becomes unusedN.
func VolumeInUse(current, pending map[string]string, volid string) bool {
	for _, keys := range []map[string]string{current, pending} {
		for _, k := range VolumeKeys(keys) {
			if ParseMountPoint(keys[k]).Volume() == volid {
				return true
			}
		}
	}
	return false
}

// IsUnusedKey tells an unusedN key (m/^unused(\d+)$/).
func IsUnusedKey(key string) bool { return unusedKeyRe.MatchString(key) }

// DropUsedUnused is write_pct_config's "remove 'unusedX' settings if the
// volume is still used": an unusedN whose volume a current rootfs or
// mount point uses goes (get_vm_volumes reads the current values only).
func DropUsedUnused(keys map[string]string) {
	for k, v := range keys {
		if IsUnusedKey(k) && VolumeInUse(keys, nil, v) {
			delete(keys, k)
		}
	}
}
