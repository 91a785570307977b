package pvesim

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/access"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
)

// The permission checks pve-container makes in its handlers, beyond the
// schema's `permissions` (create_vm's is `user => 'all'`, "check inside";
// PUT config only asks for any VM.Config.* privilege on /vms/{vmid}).
// Sources (pve-container master, 6.1, and stable-bookworm, 5.3, which
// agree here but where named):
//   - src/PVE/LXC.pm check_ct_modify_config_perm and check_bridge_access,
//     with PVE::GuestHelpers::check_vnet_access and assert_tag_permissions
//     (pve-guest-common);
//   - src/PVE/API2/LXC.pm create_vm (VM.Allocate on /vms/<vmid> or
//     /pool/<pool>, or VM.Backup for a forced restore over an existing CT;
//     Sys.Modify on / for a privileged CT since 6.0.6, commit 4cc73b7, so
//     PVE 9 only; Sys.Console on / for ha-managed; $check_and_activate_storage's
//     Datastore.AllocateSpace), resize_vm's $load_and_check;
//   - src/PVE/API2/LXC/Config.pm update_vm (the checks run under the config
//     lock, after check_lock and the digest: deletes, reverts, then the
//     new values);
//   - pve-storage src/PVE/Storage.pm check_volume_access for an existing
//     volume given as rootfs/mpN.
//
// Reconstructions and simplifications, all named here:
//   - the option order: PVE walks `keys %$newconf` (Perl's hash order), the
//     lab sorted keys, so with several privileges missing the one named
//     may differ from PVE's;
//   - tags: assert_tag_permissions with datacenter.cfg's defaults (no
//     registered-tags, user-tag-access user-allow=free: any tag is allowed
//     with VM.Config.Options); the lab's datacenter.cfg sets neither;
//   - bridges are in SDN zone "localnetwork" (the lab has no SDN vnets);
//   - a bind or device mount point is told apart by its path (/dev/… is a
//     device), not by stat() on the node;
//   - restore's in-task checks (check_bridge_access on the archive's NICs,
//     the implicit privileged change: VM.Allocate on PVE 8, Sys.Modify on
//     PVE 9) are not made.

// ctNewDiskRe is pve-container's $NEW_DISK_RE: "storage:size" allocates a
// volume (a bare size has no storage and is no new disk to this check).
var ctNewDiskRe = regexp.MustCompile(`^([^:\s]+):(\d+(\.\d+)?)$`)

// checkCTModifyConfigPerm is check_ct_modify_config_perm: oldConf is the
// CT's config (nil at creation), newConf the values set, deletes the keys
// removed (or reverted), unprivileged the CT's (or the create's) flag.
func (s *Sim) checkCTModifyConfigPerm(db *ConfigDB, who *principal, node string, vmid int, pool string,
	oldConf, newConf map[string]string, deletes []string, unprivileged bool) error {
	if isRootUser(who) {
		return nil
	}
	vm := func(privs ...string) error { return vmCheck(db, who, vmid, pool, privs, false) }
	check := func(opt string, del bool) error {
		switch {
		case opt == "cores" || opt == "cpuunits" || opt == "cpulimit":
			return vm("VM.Config.CPU")
		case ctVolKeyRe.MatchString(opt):
			if err := vm("VM.Config.Disk"); err != nil || del {
				return err
			}
			return s.checkCTVolumePerm(db, who, node, vmid, pvecommon.ParseProps(newConf[opt], "volume").Get("volume"))
		case opt == "memory" || opt == "swap":
			return vm("VM.Config.Memory")
		case qemuserver.IsNetKey(opt):
			if err := vm("VM.Config.Network"); err != nil {
				return err
			}
			for _, raw := range []string{oldConf[opt], newConf[opt]} {
				if raw == "" {
					continue
				}
				p := pvecommon.ParseProps(raw, "")
				if err := checkVnetAccess(db, who, p.Get("bridge"), p.Get("tag"), p.Get("trunks")); err != nil {
					return err
				}
			}
			return nil
		case strings.HasPrefix(opt, "dev") && ctDevKeyRe.MatchString(opt):
			return errPerm("configuring device passthrough is only allowed for root@pam")
		case opt == "nameserver" || opt == "searchdomain" || opt == "hostname":
			return vm("VM.Config.Network")
		case opt == "features":
			return checkCTFeaturesPerm(db, who, vmid, pool, oldConf["features"], newConf["features"], del, unprivileged)
		case opt == "hookscript":
			return errPerm("changing the hookscript is only allowed for root@pam")
		case opt == "tags":
			// assert_tag_permissions: check_vm_perm with pool undef.
			return vmCheck(db, who, vmid, "", []string{"VM.Config.Options"}, false)
		}
		return vm("VM.Config.Options")
	}
	for _, opt := range slices.Sorted(maps.Keys(newConf)) {
		if err := check(opt, false); err != nil {
			return err
		}
	}
	for _, opt := range deletes {
		if err := check(opt, true); err != nil {
			return err
		}
	}
	return nil
}

var ctDevKeyRe = regexp.MustCompile(`^dev\d+$`)

// checkCTVolumePerm is the rootfs/mpN branch's value check: a bind or
// device mount point is root@pam's, "storage:size" needs
// Datastore.AllocateSpace there, an existing volume check_volume_access
// with content type rootdir.
func (s *Sim) checkCTVolumePerm(db *ConfigDB, who *principal, node string, vmid int, volid string) error {
	if strings.HasPrefix(volid, "/") {
		typ := "bind"
		if strings.HasPrefix(volid, "/dev/") {
			typ = "device"
		}
		return errPerm(fmt.Sprintf("mount point type %s is only allowed for root@pam", typ))
	}
	if m := ctNewDiskRe.FindStringSubmatch(volid); m != nil {
		if err := rpcCheck(db, who, "/storage/"+m[1], "Datastore.AllocateSpace"); err != nil {
			return err
		}
		return nil
	}
	if !strings.Contains(volid, ":") {
		// Reconstruction, as PVE does it: a bare size ("8") reaches this
		// check before create_vm prefixes the default storage, so only
		// root@pam may create with one.
		return pvecommon.Die("Only root can pass arbitrary filesystem paths.")
	}
	r, err := s.parseVolRef(node, volid)
	if err != nil {
		return pvecommon.Die("%v", err)
	}
	if r.Type != "images" && r.Type != "rootdir" {
		return pvecommon.Die("unable to use volume %s - content type needs to be 'rootdir'", volid)
	}
	if r.Owner == vmid {
		return nil // "we are owner - allow access"
	}
	return checkVolumeAccess(db, who, r)
}

// checkCTFeaturesPerm is the features branch: a privileged CT's features
// are root@pam's; of an unprivileged one's, nesting alone takes
// VM.Allocate and any other flag is root@pam's.
func checkCTFeaturesPerm(db *ConfigDB, who *principal, vmid int, pool, oldRaw, newRaw string, del, unprivileged bool) error {
	if !unprivileged {
		return errPerm("changing feature flags for privileged container is only allowed for root@pam")
	}
	nesting, other := false, false
	onlyNesting := func(p pvecommon.Props) {
		switch {
		case len(p.Vals) == 1 && hasKey(p, "nesting"):
			nesting = true
		case len(p.Vals) > 0:
			other = true
		}
	}
	switch {
	case del:
		onlyNesting(pvecommon.ParseProps(oldRaw, ""))
	case oldRaw != "":
		oldF, newF := pvecommon.ParseProps(oldRaw, ""), pvecommon.ParseProps(newRaw, "")
		keys := append(slices.Sorted(maps.Keys(oldF.Vals)), slices.Sorted(maps.Keys(newF.Vals))...)
		for _, f := range keys {
			if oldF.Vals[f] != newF.Vals[f] {
				if f == "nesting" {
					nesting = true
					continue
				}
				other = true
				break
			}
		}
	default:
		onlyNesting(pvecommon.ParseProps(newRaw, ""))
	}
	if other {
		return errPerm("changing feature flags (except nesting) is only allowed for root@pam")
	}
	if nesting {
		return vmCheck(db, who, vmid, pool, []string{"VM.Allocate"}, false)
	}
	return nil
}

func hasKey(p pvecommon.Props, k string) bool { _, ok := p.Vals[k]; return ok }

// checkCTCreatePerm is create_vm's checks before check_ct_modify_config_perm
// for a create from a template (restore=0): Sys.Modify on / for a
// privileged CT (PVE 9), Sys.Console on / for ha-managed, then VM.Allocate
// on /vms/<vmid> or on /pool/<pool> — else raise_perm_exc() without a
// detail.
func (s *Sim) checkCTCreatePerm(rc *reqCtx, unprivileged bool) error {
	if isRootUser(rc.who) {
		return nil
	}
	db := rc.db()
	if s.cfg.Version >= 9 && !unprivileged {
		if err := rpcCheck(db, rc.who, "/", "Sys.Modify"); err != nil {
			return err
		}
	}
	if rc.boolean("ha-managed") {
		if err := rpcCheck(db, rc.who, "/", "Sys.Console"); err != nil {
			return err
		}
	}
	return checkCreateAllocate(rc, false)
}

// checkCreateAllocate is the VM.Allocate alternatives of create_vm, which
// pve-container (API2/LXC.pm) and qemu-server (API2/Qemu.pm) write alike:
// on /vms/<vmid>, else on /pool/<pool>; overwrite is restore+force over an
// existing guest, where VM.Backup on it is enough.
func checkCreateAllocate(rc *reqCtx, overwrite bool) error {
	if isRootUser(rc.who) {
		return nil
	}
	db, vmid, pool := rc.db(), rc.vmid(), rc.str("pool")
	vms := fmt.Sprintf("/vms/%d", vmid)
	switch {
	case hasPriv(db, rc.who, vms, []string{"VM.Allocate"}, false):
	case pool != "" && hasPriv(db, rc.who, "/pool/"+pool, []string{"VM.Allocate"}, false):
	case overwrite && hasPriv(db, rc.who, vms, []string{"VM.Backup"}, false):
	default:
		return errPerm(access.PermNoDetail)
	}
	return nil
}

// checkVnetAccess is PVE::GuestHelpers::check_vnet_access: SDN.Use on the
// bridge, or on each VLAN of it that the NIC uses (tag, trunks).
func checkVnetAccess(db *ConfigDB, who *principal, bridge, tag, trunks string) error {
	if isRootUser(who) || bridge == "" {
		return nil
	}
	base := "/sdn/zones/localnetwork/" + bridge
	var paths []string
	if tag != "" && tag != "0" {
		paths = append(paths, base+"/"+tag)
	}
	for _, t := range trunkTags(trunks) {
		paths = append(paths, base+"/"+t)
	}
	if (tag == "" || tag == "0") && trunks == "" {
		paths = append(paths, base)
	}
	for _, path := range paths {
		if err := rpcCheck(db, who, path, "SDN.Use"); err != nil {
			return err
		}
	}
	return nil
}
