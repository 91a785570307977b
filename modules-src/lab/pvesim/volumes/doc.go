// Package volumes is the simulator's volume model, which guests and the
// storage endpoints share: guest volumes with their sizes on a storage,
// per node on a local storage and per cluster on a shared one, allocated,
// freed, linked and listed as pve-storage's plugins name and do it
// (volumes.go: PVE/Storage.pm vdisk_alloc and vdisk_free, the plugins'
// alloc_image, free_image, clone_image), their zvols and datasets in the
// node's ZFS when Config.ZFS is set (zvols.go: ZFSPoolPlugin.pm), and a
// request's volume ID, file volumes and access to them (storagecontent.go:
// Content.pm's $real_volume_id, parse_volname, check_volume_access).
//
// Model embeds the *core.Sim; pvesim/guests' Model embeds it, the
// storage backend (pvesim/storagesim) too. It imports core and rule
// packages only. storage.cfg itself, its lock, activation and the upload
// stay in core.
package volumes
