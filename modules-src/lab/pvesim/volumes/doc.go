// Package volumes is the simulator's volume model, which guests and the
// storage endpoints share: guest volumes with their sizes on a storage,
// per node on a local storage and per cluster on a shared one, allocated,
// freed, linked and listed as pve-storage's plugins name and do it
// (volumes.go: PVE/Storage.pm vdisk_alloc and vdisk_free, the plugins'
// alloc_image, free_image, clone_image), their zvols and datasets in the
// node's ZFS when Config.ZFS is set (zvols.go: ZFSPoolPlugin.pm), and a
// request's volume ID, file volumes and access to them (storagecontent.go:
// Content.pm's $real_volume_id, parse_volname, check_volume_access), and a
// storage's activation and size on a node (activate.go: Storage.pm
// activate_storage and storage_info, a pbs or cifs storage asking its
// server with the credentials of /etc/pve/priv/storage, storagepriv.go),
// which the storage endpoints, the cluster's views and pvestatd share.
//
// Model embeds the *core.Sim; pvesim/guests' Model embeds it, the
// storage backend (pvesim/storagesim) too. It imports core and rule
// packages only. storage.cfg itself and pveproxy's part of an upload stay
// in core; storage.cfg's lock and pvestatd are pvesim/storagesim's.
package volumes
