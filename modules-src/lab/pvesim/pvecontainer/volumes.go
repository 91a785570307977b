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
