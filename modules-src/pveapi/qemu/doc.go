// Package qemu types a VM's configuration as qemu-server writes it, for
// pve_clone: the property strings of `netN` (QemuServer/Network.pm
// $net_fmt, print_net), disks `ideN/sataN/scsiN/virtioN/efidisk0/
// tpmstate0` and `unusedN` (QemuServer/Drive.pm parse_drive, print_drive,
// $NEW_DISK_RE), `ipconfigN` (Network.pm $ipconfig_fmt, parse_ipconfig),
// `agent` (QemuServer/Agent.pm), `boot` (QemuServer.pm $boot_fmt) and
// `sshkeys` (stored URL-encoded; API2/Qemu.pm and QemuServer/Cloudinit.pm
// uri_unescape it, K12).
//
// Each typed value parses what PVE returns and prints what PVE would store
// (pveformat, print_property_string's order); keys it does not model are
// kept in Other, so a read-modify-write never drops them (K16).
//
// Reads: GetConfig (`current=1` for the live view: API2/Qemu.pm
// vm_config), GetPending (API2/Qemu.pm vm_pending, GuestHelpers.pm
// config_with_pending_array) split into live and pending. Writes are
// values (apischema.Request) the caller dispatches: Update carries the
// digest PVE compares before it changes anything, and is validated against
// the node's PVE version by Request.Validate.
//
// It also holds qemu-server's and pve-storage's rules that a caller
// predicts with, none of them about one module: the config clone_vm and
// create_vm write (predict.go: API2/Qemu.pm), which keys a running VM
// takes at once (hotplug.go: QemuServer.pm vmconfig_hotplug_pending,
// vmconfig_update_disk), the names PVE gives the volumes it allocates
// (disknames.go: find_free_diskname, create_disks, create_efidisk), and
// what a volume ID says (volume.go: parse_volume_id, the cloud-init
// drive's fixed name, a linked clone's base by parse_volname, a template's
// base volumes by template_create/create_base).
package qemu
