package lxcsim

import (
	"errors"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guests"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecontainer"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/volumes"
)

// The permission checks pve-container makes in its handlers, beyond the
// schema's `permissions` (create_vm's is `user => 'all'`, "check inside";
// PUT config only asks for any VM.Config.* privilege on /vms/{vmid}).
// check_ct_modify_config_perm's rules are package pvecontainer's; this
// file gives them the caller's checks and makes the handlers' own.
// Sources (pve-container master, 6.1, and stable-bookworm, 5.3, which
// agree here but where named):
//   - src/PVE/LXC.pm check_ct_modify_config_perm (pvecontainer) and check_bridge_access,
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
//   - the option order, tags and bind/device mount points: see
//     pvecontainer.CheckModifyConfigPerm;
//   - bridges are in SDN zone "localnetwork" (the lab has no SDN vnets);
//   - restore's in-task checks (check_bridge_access on the archive's NICs,
//     the implicit privileged change: VM.Allocate on PVE 8, Sys.Modify on
//     PVE 9) are not made.

// checkCTModifyConfigPerm is check_ct_modify_config_perm
// (pvecontainer.CheckModifyConfigPerm): oldConf is the CT's config (nil at
// creation), newConf the values set, deletes the keys removed (or
// reverted), unprivileged the CT's (or the create's) flag.
func (s *backend) checkCTModifyConfigPerm(db *core.ConfigDB, who *core.Principal, node string, vmid int, pool string,
	oldConf, newConf map[string]string, deletes []string, unprivileged bool) error {
	p := pvecontainer.Perm{
		Root:     guests.IsRootUser(who),
		VM:       func(privs ...string) error { return guests.VMCheck(db, who, vmid, pool, privs, false) },
		VMNoPool: func(privs ...string) error { return guests.VMCheck(db, who, vmid, "", privs, false) },
		Check:    func(path, priv string) error { return core.RPCCheck(db, who, path, priv) },
		Volume:   func(volid string) error { return s.checkCTVolumeAccess(db, who, node, vmid, volid) },
		Vnet:     func(bridge, tag, trunks string) error { return guests.CheckVnetAccess(db, who, bridge, tag, trunks) },
	}
	err := pvecontainer.CheckModifyConfigPerm(p, oldConf, newConf, deletes, unprivileged)
	if pe := (*pvecontainer.PermError)(nil); errors.As(err, &pe) {
		return core.ErrPerm(pe.Msg)
	}
	return err
}

// checkCTVolumeAccess is check_volume_access with content type rootdir for
// an existing volume given as rootfs/mpN.
func (s *backend) checkCTVolumeAccess(db *core.ConfigDB, who *core.Principal, node string, vmid int, volid string) error {
	r, err := s.ParseVolRef(node, volid)
	if err != nil {
		return pvecommon.Die("%v", err)
	}
	if r.Type != "images" && r.Type != "rootdir" {
		return pvecommon.Die("unable to use volume %s - content type needs to be 'rootdir'", volid)
	}
	if r.Owner == vmid {
		return nil // "we are owner - allow access"
	}
	return volumes.CheckVolumeAccess(db, who, r)
}

// checkCTCreatePerm is create_vm's checks before check_ct_modify_config_perm
// for a create from a template (restore=0): Sys.Modify on / for a
// privileged CT (PVE 9), Sys.Console on / for ha-managed, then VM.Allocate
// on /vms/<vmid> or on /pool/<pool> — else raise_perm_exc() without a
// detail.
func (s *backend) checkCTCreatePerm(rc *core.Req, unprivileged bool) error {
	if guests.IsRootUser(rc.Who) {
		return nil
	}
	db := rc.DB()
	if s.Version() >= 9 && !unprivileged {
		if err := core.RPCCheck(db, rc.Who, "/", "Sys.Modify"); err != nil {
			return err
		}
	}
	if rc.Bool("ha-managed") {
		if err := core.RPCCheck(db, rc.Who, "/", "Sys.Console"); err != nil {
			return err
		}
	}
	return guests.CheckCreateAllocate(rc, false)
}
