// Package pvecontainer is the simulator's model of pve-container's rules on
// a container's configuration values, the ones that need nothing but the
// config and the request. It follows proxmox/pve-container (reconstructions
// are marked where they are):
//
//   - which keys are volumes (rootfs, mpN: src/PVE/LXC/Config.pm
//     parse_volume's keys) and $NEW_DISK_RE (src/PVE/LXC.pm); a mount
//     point's value and foreach_volume's order (volumes.go); a NIC as
//     parse_lxc_network and print_lxc_network leave it (net.go);
//   - a config update (update.go): update_pct_config's refusals of
//     required and read-only options, and what vmconfig_hotplug_pending
//     applies to a running CT ($LXC_FASTPLUG_OPTIONS, the cgroup options,
//     NICs, a new mount point) (src/PVE/LXC/Config.pm);
//   - create_vm's defaults and the owner parse_id_maps gives a volume's
//     root (create.go; src/PVE/API2/LXC.pm, src/PVE/LXC.pm);
//   - a restore's option values (restore.go): create_vm's storage-only
//     mode and the archive's mount points it re-creates (src/PVE/API2/
//     LXC.pm), sanitize_and_merge_config (src/PVE/LXC/Create.pm);
//   - permissions (perm.go), given the caller's checks (Perm):
//     check_ct_modify_config_perm with its mount point and feature-flag
//     branches (src/PVE/LXC.pm), as create_vm, update_vm and resize_vm call
//     it (src/PVE/API2/LXC.pm, src/PVE/API2/LXC/Config.pm).
//
// It is a backend out of the one-package simulator (issue 27 §1), as
// pvesim/qemuserver is for VMs: pvesim keeps the handlers, the guest lock,
// the volumes and tasks, state.json and /etc/pve, and calls in; this
// package imports nothing of pvesim but pvesim/pvecommon (property
// strings). A guest's config file format is pvesim/guestconf. The
// modules' side is modules-src/modules/pvecontainer, which the lab never
// imports.
package pvecontainer

import "regexp"

var (
	volKeyRe = regexp.MustCompile(`^(rootfs|mp\d+)$`)
	devKeyRe = regexp.MustCompile(`^dev\d+$`) // a passed-through device
)

// IsVolumeKey tells whether key is a mount point holding a volume: rootfs
// or mpN.
func IsVolumeKey(key string) bool { return volKeyRe.MatchString(key) }

// NewDiskRe is $NEW_DISK_RE: "storage:size" allocates a volume (a bare
// size has no storage and is no new disk to the permission check).
var NewDiskRe = regexp.MustCompile(`^([^:\s]+):(\d+(\.\d+)?)$`)

// PermError is a refusal PVE raises with raise_perm_exc (a 403); a die
// is pvecommon.Die's error (a 500 with the message).
type PermError struct{ Msg string }

func (e *PermError) Error() string { return e.Msg }
