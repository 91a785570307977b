// Package qemuserver is the simulator's model of qemu-server's rules on a
// VM's configuration values, the ones that need nothing but the config and
// the request. It follows proxmox/qemu-server (reconstructions are marked
// where they are):
//
//   - drives and NICs (qemuserver.go, net.go): the drive keys and
//     parse_drive/print_drive (src/PVE/QemuServer/Drive.pm), drive_is_cdrom
//     and drive_is_cloudinit, has_cloudinit as create_disks uses it
//     (src/PVE/API2/Qemu.pm), get_default_bootdevices (src/PVE/
//     QemuServer.pm); parse_net/print_net (src/PVE/QemuServer/Network.pm)
//     with a new MAC for a NIC sent without one and for each NIC of a
//     clone (K16);
//   - what a running VM takes at once (hotplug.go): $fast_plug_option,
//     parse_hotplug_features, and the drives vmconfig_hotplug_pending and
//     vmconfig_update_disk leave pending (src/PVE/QemuServer.pm);
//   - a new drive's storage ($check_drive_param's storage part,
//     src/PVE/API2/Qemu.pm) and an EFI disk's size (create_efidisk,
//     src/PVE/QemuServer/OVMF.pm) (newdrive.go);
//   - permissions (perm.go, storageperm.go), given the caller's checks
//     (Perm): $check_vm_modify_config_perm's option tables, create_vm's
//     device checks, $check_storage_access's new disks and
//     $check_storage_access_clone (src/PVE/API2/Qemu.pm);
//   - a config update's parameters (update.go, $update_vm_api) and
//     cloud-init's values (cloudinit.go; src/PVE/QemuServer/Cloudinit.pm):
//     sshkeys validated decoded and kept encoded (K12), cipassword stored
//     hashed;
//   - clone_vm's full-or-linked choice and the options it does not copy
//     (clone.go), add_unused_volume's slot, is_volume_in_use and
//     write_vm_config's drop of a re-used unusedN (unused.go; pve-guest-
//     common AbstractConfig.pm), a VM's maxmem, cpus and maxdisk
//     (resources.go; bootdisk_size, src/PVE/QemuServer/Drive.pm), the
//     boot option's order list;
//   - the devices that keep a VM from migrating (migrate.go,
//     check_local_resources, src/PVE/QemuMigrate/Helpers.pm).
//
// It is a backend out of the one-package simulator (issue 27 §1), as
// pvesim/access and pvesim/storage are: pvesim keeps the handlers, the
// guest lock, the volumes and tasks, state.json and /etc/pve, and calls
// in; this package imports nothing of pvesim (volume IDs are
// pvesim/storage's, as qemu-server's are pve-storage's; property strings
// pvesim/pvecommon's). A guest's config file format is pvesim/guestconf.
// The modules' side of qemu-server is modules-src/pveapi/qemu, which the
// lab never imports.
package qemuserver

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

var driveKeyRe = regexp.MustCompile(`^(ide|sata|scsi|virtio|efidisk|tpmstate|unused)\d+$`)

// IsDriveKey tells whether k is a drive option (Drive.pm's drive keys and
// unusedN).
func IsDriveKey(k string) bool { return driveKeyRe.MatchString(k) }

var netKeyRe = regexp.MustCompile(`^net\d+$`)

// IsNetKey tells whether k is a NIC option (netN).
func IsNetKey(k string) bool { return netKeyRe.MatchString(k) }

// IsUnused tells whether k is an unusedN key: a volume the VM owns that no
// drive uses.
func IsUnused(k string) bool { return strings.HasPrefix(k, "unused") }

// Drive is a parsed drive option (parse_drive): its volume under "file".
type Drive struct {
	Props pvecommon.Props
}

// ParseDrive parses a drive option's value.
func ParseDrive(v string) Drive { return Drive{Props: pvecommon.ParseProps(v, "file")} }

// File is the drive's volume ID, path, "none" or "cdrom".
func (d Drive) File() string { return d.Props.Get("file") }

// CDROM is drive_is_cdrom: media=cdrom (cloud-init drives are too).
func (d Drive) CDROM() bool { return d.Props.Get("media") == "cdrom" }

// Cloudinit is drive_is_cloudinit: a volume named vm-<id>-cloudinit.
func (d Drive) Cloudinit() bool { return strings.Contains(d.File(), "-cloudinit") }

// Print is print_drive: the volume first, then the options sorted.
func (d Drive) Print() string { return d.Props.Print("file") }

// HasCloudinitDrive tells whether a drive of keys (unusedN aside) is a
// cloud-init drive.
func HasCloudinitDrive(keys map[string]string) bool {
	for k, v := range keys {
		if IsDriveKey(k) && !IsUnused(k) && ParseDrive(v).Cloudinit() {
			return true
		}
	}
	return false
}

// CloudinitRequestElsewhere is create_disks' has_cloudinit check for a
// value of key that asks for a new cloud-init drive ("store:cloudinit"):
// the first other drive key of confs (the config, its pending section, the
// drives made so far) that holds a cloud-init drive, or "". The key itself
// does not count (has_cloudinit's $skip): sending it again goes on to the
// allocation, which fails there.
func CloudinitRequestElsewhere(key, value string, confs ...map[string]string) string {
	if _, vn, ok := storage.ParseVolumeID(ParseDrive(value).File()); !ok || vn != "cloudinit" {
		return ""
	}
	for _, c := range confs {
		for _, k := range slices.Sorted(maps.Keys(c)) {
			if k != key && IsDriveKey(k) && !IsUnused(k) && ParseDrive(c[k]).Cloudinit() {
				return k
			}
		}
	}
	return ""
}

// BootOrder is the order= list of a boot option (the 'pve-qm-boot'
// property string, legacy its default key; src/PVE/QemuServer.pm).
func BootOrder(boot string) []string {
	return pveschema.SplitList(pvecommon.ParseProps(boot, "legacy").Get("order"))
}

// DefaultBoot is get_default_bootdevices as the boot option create_vm
// writes: CD-ROMs (not cloud-init's), disks (not efidisk/tpmstate), then
// the first NIC. Reconstruction of the order: CD-ROMs first, as PVE does.
func DefaultBoot(keys map[string]string) string {
	var cd, disks, nets []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		switch {
		case IsDriveKey(k) && !IsUnused(k) && !strings.HasPrefix(k, "efidisk") && !strings.HasPrefix(k, "tpmstate"):
			if d := ParseDrive(keys[k]); d.CDROM() {
				if !d.Cloudinit() {
					cd = append(cd, k)
				}
			} else {
				disks = append(disks, k)
			}
		case IsNetKey(k):
			nets = append(nets, k)
		}
	}
	order := append(cd, disks...)
	if len(nets) > 0 {
		order = append(order, nets[0])
	}
	return "order=" + strings.Join(order, ";")
}
