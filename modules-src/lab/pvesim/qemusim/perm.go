package qemusim

import (
	"maps"
	"slices"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guests"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
)

// The permission checks qemu-server makes in its handlers, beyond the
// schema's `permissions` (which for PUT/POST config only asks for any
// VM.Config.* privilege on /vms/{vmid}, and for clone only VM.Clone and
// VM.Allocate). Source: qemu-server src/PVE/API2/Qemu.pm
// ($check_vm_modify_config_perm and its option tables, $check_storage_access,
// $check_storage_access_clone, clone_vm's $load_and_check, update_vm_api)
// and check_bridge_access in src/PVE/QemuServer.pm, with
// PVE::GuestHelpers::check_vnet_access (pve-guest-common). Without them a
// token with a single VM.Config.* privilege could change memory, CPU and
// NICs in the lab, which PVE refuses.
//
// Which privilege each option needs and the device checks are
// qemuserver's (OptionPrivs, CheckCreateDevicePerm); this file gives them
// the caller's checks and keeps the storage and bridge checks.
//
// Reconstructions and simplifications, all named here:
//   - check_vm_perm is check_full on /pool/<pool> (create's pool parameter)
//     and then on /vms/<vmid>; with no pool parameter only /vms/<vmid>: the
//     lab's permissions() already merges the ACLs of the VM's pool into
//     /vms/<vmid> (access/perm.go), which is what check_vm_perm's lookup of
//     the VM's pool adds;
//   - options qemu-server lets only root@pam set ("only root can set
//     '<opt>' config": args, lock and every option in none of the tables)
//     are not refused: the lab's own root@pam!lab token sets some of them in
//     other tests and PVE's list moves between releases;
//   - bridges are in SDN zone "localnetwork" (the lab has no SDN vnets);
//   - the per-drive checks update_vm_api makes inside its worker
//     ($check_drive_perms: VM.Config.Disk, VM.Config.CDROM, cloud-init's
//     VM.Config.Cloudinit and VM.Config.CDROM) are not made.
//   - create_vm's VM.Allocate (on /vms/<vmid>, else /pool/<pool>) is made
//     (create.go, core.CheckCreateAllocate), and on PVE 9 its Sys.Console on
//     / for ha-managed (qemu-server 9.1.8) and VM.PowerMgmt for start=1
//     (9.1.10). Clone's VM.Clone and VM.Allocate are the schema's check,
//     which the lab evaluates for every call.

// qmPerm is who's privilege checks for qemuserver's permission rules, on
// VM vmid (pool: create's pool parameter, else "").
func qmPerm(db *core.ConfigDB, who *core.Principal, vmid int, pool string) qemuserver.Perm {
	return qemuserver.Perm{
		Root:  guests.IsRootUser(who),
		VM:    func(privs []string, anyOf bool) error { return guests.VMCheck(db, who, vmid, pool, privs, anyOf) },
		Check: func(path, priv string) error { return core.RPCCheck(db, who, path, priv) },
	}
}

// checkVMModifyConfigPerm is $check_vm_modify_config_perm
// (qemuserver.CheckModifyConfigPerm).
func checkVMModifyConfigPerm(db *core.ConfigDB, who *core.Principal, vmid int, pool string, keys []string) error {
	return qemuserver.CheckModifyConfigPerm(qmPerm(db, who, vmid, pool), keys)
}

// checkVMCreateDevicePerm is create_vm's checks on passed-through devices
// (qemuserver.CheckCreateDevicePerm); a refused parameter is a 400.
func checkVMCreateDevicePerm(db *core.ConfigDB, who *core.Principal, vmid int, pool string, conf map[string]string) error {
	return guests.QMErr(qemuserver.CheckCreateDevicePerm(qmPerm(db, who, vmid, pool), conf))
}

// checkBridgeAccess is QemuServer::check_bridge_access: check_vnet_access
// (core.CheckVnetAccess) for each NIC.
func checkBridgeAccess(db *core.ConfigDB, who *core.Principal, conf map[string]string) error {
	if guests.IsRootUser(who) {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		if !qemuserver.IsNetKey(k) {
			continue
		}
		p := pvecommon.ParseProps(conf[k], "model")
		if err := guests.CheckVnetAccess(db, who, p.Get("bridge"), p.Get("tag"), p.Get("trunks")); err != nil {
			return err
		}
	}
	return nil
}

// checkStorageAccessNew is $check_storage_access's new-disk branch
// (qemuserver.CheckStorageAccessNew; storage paths only, so no VMID).
func checkStorageAccessNew(db *core.ConfigDB, who *core.Principal, conf map[string]string, defaultStorage string) error {
	return qemuserver.CheckStorageAccessNew(qmPerm(db, who, 0, ""), conf, defaultStorage)
}

// checkStorageAccessClone is $check_storage_access_clone
// (qemuserver.CheckStorageAccessClone), then clone_vm's
// check_bridge_access on the source's NICs.
func checkStorageAccessClone(db *core.ConfigDB, who *core.Principal, src map[string]string, storage string) error {
	if err := qemuserver.CheckStorageAccessClone(qmPerm(db, who, 0, ""), src, storage); err != nil {
		return err
	}
	return checkBridgeAccess(db, who, src)
}
