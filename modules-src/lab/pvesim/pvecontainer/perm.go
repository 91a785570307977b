package pvecontainer

import (
	"maps"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// Perm is the caller as check_ct_modify_config_perm sees it: root@pam or
// not, and the checks it calls out to, each nil or the 403 PVE raises.
// (qemuserver.Perm is the VM side; a backend imports no other backend.)
type Perm struct {
	Root bool // `$authuser eq 'root@pam'` skips every rule
	// VM is check_vm_perm with the request's pool; VMNoPool the same with
	// pool undef (assert_tag_permissions).
	VM, VMNoPool func(privs ...string) error
	// Check is $rpcenv->check(path, [priv]).
	Check func(path, priv string) error
	// Volume is check_volume_access for an existing volume given as rootfs
	// or mpN, with content type rootdir (pve-storage: pvesim's volumes).
	Volume func(volid string) error
	// Vnet is check_vnet_access on one NIC's bridge, tag and trunks.
	Vnet func(bridge, tag, trunks string) error
}

// CheckModifyConfigPerm is check_ct_modify_config_perm: oldConf is the
// CT's config (nil at creation), newConf the values set, deletes the keys
// removed (or reverted), unprivileged the CT's (or the create's) flag.
// Reconstruction: PVE walks `keys %$newconf` (Perl's hash order), the lab
// the sorted keys, so with several privileges missing the one named may
// differ; tags are assert_tag_permissions with datacenter.cfg's defaults
// (any tag with VM.Config.Options).
func CheckModifyConfigPerm(p Perm, oldConf, newConf map[string]string, deletes []string, unprivileged bool) error {
	if p.Root {
		return nil
	}
	check := func(opt string, del bool) error {
		switch {
		case opt == "cores" || opt == "cpuunits" || opt == "cpulimit":
			return p.VM("VM.Config.CPU")
		case IsVolumeKey(opt):
			if err := p.VM("VM.Config.Disk"); err != nil || del {
				return err
			}
			return checkVolumePerm(p, pvecommon.ParseProps(newConf[opt], "volume").Get("volume"))
		case opt == "memory" || opt == "swap":
			return p.VM("VM.Config.Memory")
		case netKeyRe.MatchString(opt):
			if err := p.VM("VM.Config.Network"); err != nil {
				return err
			}
			for _, raw := range []string{oldConf[opt], newConf[opt]} {
				if raw == "" {
					continue
				}
				n := pvecommon.ParseProps(raw, "")
				if err := p.Vnet(n.Get("bridge"), n.Get("tag"), n.Get("trunks")); err != nil {
					return err
				}
			}
			return nil
		case devKeyRe.MatchString(opt):
			return &PermError{"configuring device passthrough is only allowed for root@pam"}
		case opt == "nameserver" || opt == "searchdomain" || opt == "hostname":
			return p.VM("VM.Config.Network")
		case opt == "features":
			return checkFeaturesPerm(p, oldConf["features"], newConf["features"], del, unprivileged)
		case opt == "hookscript":
			return &PermError{"changing the hookscript is only allowed for root@pam"}
		case opt == "tags":
			return p.VMNoPool("VM.Config.Options")
		}
		return p.VM("VM.Config.Options")
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

// checkVolumePerm is the rootfs/mpN branch's value check: a bind or
// device mount point is root@pam's, "storage:size" needs
// Datastore.AllocateSpace there, an existing volume check_volume_access.
// Reconstruction: a bind and a device mount point are told apart by the
// path (/dev/…), not by stat() on the node.
func checkVolumePerm(p Perm, volid string) error {
	if strings.HasPrefix(volid, "/") {
		typ := "bind"
		if strings.HasPrefix(volid, "/dev/") {
			typ = "device"
		}
		return &PermError{"mount point type " + typ + " is only allowed for root@pam"}
	}
	if m := NewDiskRe.FindStringSubmatch(volid); m != nil {
		return p.Check("/storage/"+m[1], "Datastore.AllocateSpace")
	}
	if !strings.Contains(volid, ":") {
		// Reconstruction, as PVE does it: a bare size ("8") reaches this
		// check before create_vm prefixes the default storage, so only
		// root@pam may create with one.
		return pvecommon.Die("Only root can pass arbitrary filesystem paths.")
	}
	return p.Volume(volid)
}

// checkFeaturesPerm is the features branch: a privileged CT's features
// are root@pam's; of an unprivileged one's, nesting alone takes
// VM.Allocate and any other flag is root@pam's.
func checkFeaturesPerm(p Perm, oldRaw, newRaw string, del, unprivileged bool) error {
	if !unprivileged {
		return &PermError{"changing feature flags for privileged container is only allowed for root@pam"}
	}
	nesting, other := false, false
	onlyNesting := func(f pvecommon.Props) {
		_, hasNesting := f.Vals["nesting"]
		switch {
		case len(f.Vals) == 1 && hasNesting:
			nesting = true
		case len(f.Vals) > 0:
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
		return &PermError{"changing feature flags (except nesting) is only allowed for root@pam"}
	}
	if nesting {
		return p.VM("VM.Allocate")
	}
	return nil
}
