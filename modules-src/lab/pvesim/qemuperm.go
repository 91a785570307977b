package pvesim

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

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
//     (qemucreate.go, checkCreateAllocate), and on PVE 9 its Sys.Console on
//     / for ha-managed (qemu-server 9.1.8) and VM.PowerMgmt for start=1
//     (9.1.10). Clone's VM.Clone and VM.Allocate are the schema's check,
//     which the lab evaluates for every call.

// NEW_DISK_RE of QemuServer/Drive.pm: "[storage:]size" allocates a disk.
var qmNewDiskRe = regexp.MustCompile(`^(([^/:\s]+):)?(\d+(\.\d+)?)$`)

// isRootUser is qemu-server's `$authuser eq 'root@pam'` (a token of root
// is not root@pam).
func isRootUser(who *principal) bool { return who == nil || who.full() == "root@pam" || who.CLI }

func vmCheck(db *ConfigDB, who *principal, vmid int, pool string, privs []string, anyOf bool) error {
	if pool != "" && hasPriv(db, who, "/pool/"+pool, privs, anyOf) {
		return nil
	}
	if ok, d := checkFull(db, who, fmt.Sprintf("/vms/%d", vmid), privs, anyOf); !ok {
		return errPerm(d)
	}
	return nil
}

// qmPerm is who's privilege checks for qemuserver's permission rules, on
// VM vmid (pool: create's pool parameter, else "").
func qmPerm(db *ConfigDB, who *principal, vmid int, pool string) qemuserver.Perm {
	return qemuserver.Perm{
		Root:  isRootUser(who),
		VM:    func(privs []string, anyOf bool) error { return vmCheck(db, who, vmid, pool, privs, anyOf) },
		Check: func(path, priv string) error { return rpcCheck(db, who, path, priv) },
	}
}

// checkVMModifyConfigPerm is $check_vm_modify_config_perm
// (qemuserver.CheckModifyConfigPerm).
func checkVMModifyConfigPerm(db *ConfigDB, who *principal, vmid int, pool string, keys []string) error {
	return qemuserver.CheckModifyConfigPerm(qmPerm(db, who, vmid, pool), keys)
}

// checkVMCreateDevicePerm is create_vm's checks on passed-through devices
// (qemuserver.CheckCreateDevicePerm); a refused parameter is a 400.
func checkVMCreateDevicePerm(db *ConfigDB, who *principal, vmid int, pool string, conf map[string]string) error {
	err := qemuserver.CheckCreateDevicePerm(qmPerm(db, who, vmid, pool), conf)
	if pe := (*qemuserver.ParamError)(nil); errors.As(err, &pe) {
		return errParams(map[string]string{pe.Param: pe.Msg})
	}
	return err
}

// checkBridgeAccess is QemuServer::check_bridge_access: check_vnet_access
// (lxcperm.go) for each NIC.
func checkBridgeAccess(db *ConfigDB, who *principal, conf map[string]string) error {
	if isRootUser(who) {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		if !isNetKey(k) {
			continue
		}
		p := parseProps(conf[k], "model")
		if err := checkVnetAccess(db, who, p.Get("bridge"), p.Get("tag"), p.Get("trunks")); err != nil {
			return err
		}
	}
	return nil
}

// trunkTags is get_tags_from_trunk: "10;20-22" → 10 20 21 22, sorted as
// strings (the check's order: sort keys).
func trunkTags(trunks string) []string {
	tags := map[string]bool{}
	for _, part := range strings.Split(trunks, ";") {
		var lo, hi int
		if n, _ := fmt.Sscanf(part, "%d-%d", &lo, &hi); n == 2 {
			for t := lo; t <= hi; t++ {
				tags[fmt.Sprint(t)] = true
			}
		} else if n == 1 {
			tags[fmt.Sprint(lo)] = true
		}
	}
	return slices.Sorted(maps.Keys(tags))
}

// checkStorageAccessNew is the new-disk branch of $check_storage_access:
// Datastore.AllocateSpace on the storage a "storage:size" drive allocates
// on, or on defaultStorage for a bare size (create's storage parameter);
// 'cdrom' needs Sys.Console on /. Existing volumes (check_volume_access)
// are left to the handlers that read them.
func checkStorageAccessNew(db *ConfigDB, who *principal, conf map[string]string, defaultStorage string) error {
	if isRootUser(who) {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		if !isDriveKey(k) {
			continue
		}
		d := parseDrive(conf[k])
		f := d.file()
		var path, priv string
		switch m := qmNewDiskRe.FindStringSubmatch(f); {
		case d.cdrom() && f == "cdrom":
			path, priv = "/", "Sys.Console"
		case !d.cdrom() && m != nil && (m[2] != "" || defaultStorage != ""):
			store := m[2]
			if store == "" {
				store = defaultStorage
			}
			path, priv = "/storage/"+store, "Datastore.AllocateSpace"
		default:
			continue
		}
		if ok, det := checkFull(db, who, path, []string{priv}, false); !ok {
			return errPerm(det)
		}
	}
	return nil
}

// checkStorageAccessClone is $check_storage_access_clone: for each disk of
// the source (not CD-ROMs: cloud-init drives are media=cdrom),
// Datastore.AllocateSpace on the clone's target storage, or on the disk's
// own storage when none is given; then clone_vm's check_bridge_access on
// the source's NICs.
func checkStorageAccessClone(db *ConfigDB, who *principal, src map[string]string, storage string) error {
	if isRootUser(who) {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(src)) {
		if !isDriveKey(k) {
			continue
		}
		d := parseDrive(src[k])
		f := d.file()
		if f == "" || f == "none" {
			continue
		}
		path, priv := "", "Datastore.AllocateSpace"
		if d.cdrom() {
			if f != "cdrom" {
				continue // "we simply allow access"
			}
			path, priv = "/", "Sys.Console"
		} else {
			sid, _, _ := volumeID(f)
			if storage != "" {
				sid = storage
			}
			path = "/storage/" + sid
		}
		if ok, det := checkFull(db, who, path, []string{priv}, false); !ok {
			return errPerm(det)
		}
	}
	if v := src["vmstatestorage"]; v != "" {
		if ok, det := checkFull(db, who, "/storage/"+v, []string{"Datastore.AllocateSpace"}, false); !ok {
			return errPerm(det)
		}
	}
	return checkBridgeAccess(db, who, src)
}
