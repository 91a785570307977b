package lxcsim

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guesthelpers"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guests"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/ha"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecontainer"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

// Containers' config updates, pending section and resize, as pve-container
// does them (src/PVE/LXC/Config.pm update_pct_config,
// vmconfig_hotplug_pending, vmconfig_apply_pending; src/PVE/API2/LXC.pm
// resize_vm, vm_pending; src/PVE/API2/LXC/Config.pm update_vm):
// every change is written to the pending section first; a stopped CT
// applies it at once, a running one hot-plugs what it can and keeps the
// rest pending until its next start. The deletes and the new values
// follow two different rules (pvecontainer.HotplugDelete, HotplugSet):
// e.g. an unusedN goes at once (its volume freed) but an mpN waits, net10
// is plugged at once but its delete waits, a new devN is plugged. A
// removed or replaced mount point's volume is kept as unusedN.

// PUT /nodes/{node}/lxc/{vmid}/config: synchronous under the config lock.
func (s *backend) putLxcConfig(rc *core.Req) (any, error) {
	db := rc.DB()
	vmid, node := rc.VMID(), rc.Node
	set := map[string]string{}
	for k, v := range rc.Params {
		if !slices.Contains([]string{"node", "vmid", "digest", "delete", "revert"}, k) {
			set[k] = pvecommon.ParamString(v)
		}
	}
	deletes := pveschema.SplitList(rc.Str("delete"))
	if len(set) == 0 && len(deletes) == 0 && rc.Str("revert") == "" {
		return nil, pvecommon.Die("no options specified")
	}
	reverts := pveschema.SplitList(rc.Str("revert"))
	return s.WithGuestLockLocked(node, vmid, func() (any, error) {
		c, err := s.LoadCTConfLocked(db, node, vmid)
		if err != nil {
			return nil, err
		}
		if d := rc.Str("digest"); d != "" && d != c.Digest {
			return nil, pvecommon.Die("detected modified configuration - file changed by other user? Try again.")
		}
		if err := c.CheckLock("CT"); err != nil {
			return nil, err
		}
		// update_vm's permission checks (perm.go) on the deletes, the
		// reverts and the new values, against the config as it is, before
		// update_pct_config's refusals.
		unpriv := c.Keys["unprivileged"] == "1"
		for _, step := range []struct {
			set  map[string]string
			dels []string
		}{{nil, deletes}, {nil, reverts}, {set, nil}} {
			if err := s.checkCTModifyConfigPerm(db, rc.Who, node, vmid, "", c.Keys, step.set, step.dels, unpriv); err != nil {
				return nil, err
			}
		}
		if err := pvecontainer.UpdateChecks(vmid, set, deletes, c.IsSet, c.Keys["protection"] == "1"); err != nil {
			return nil, err
		}
		for k, v := range set {
			if qemuserver.IsNetKey(k) {
				set[k] = pvecontainer.NormaliseNet(v, guests.RandomMAC)
			}
		}
		if err := s.ctWritePendingLocked(node, vmid, c, set, deletes, reverts); err != nil {
			return nil, err
		}
		s.WriteCTConfLocked(db, node, vmid, c)
		s.SaveLocked()
		return nil, nil
	})
}

// ctWritePendingLocked writes the update to the pending section, then
// applies it: all of it on a stopped CT, what can be hot-plugged on a
// running one. Only the keys this update names are applied
// (update_pct_config passes its $modified to vmconfig_hotplug_pending and
// vmconfig_apply_pending as $selection): what a running CT left pending
// stays pending after a stop until the next start, even through an
// update of other keys.
func (s *backend) ctWritePendingLocked(node string, vmid int, c *guestconf.Conf, set map[string]string, deletes, revert []string) error {
	for _, k := range revert {
		delete(c.Pending, k)
		c.PendingDelete = slices.DeleteFunc(c.PendingDelete, func(d string) bool { return d == k })
	}
	if c.Pending == nil {
		c.Pending = map[string]string{}
	}
	modified := map[string]bool{}
	for _, k := range deletes {
		if k == "description" {
			c.Description = "" // a fast-plug option, the config's comment lines
			continue
		}
		if !c.IsSet(k) {
			continue // "cannot delete '$opt' - not set in current configuration!" (a warning)
		}
		modified[k] = true
		delete(c.Pending, k)
		if !c.PendingDeleted(k) {
			c.PendingDelete = append(c.PendingDelete, k)
		}
	}
	for k, v := range set {
		if k == "description" {
			c.SetDescription(v) // a fast-plug option, kept as the config's comment lines
			continue
		}
		modified[k] = true
		c.Pending[k] = v
		c.PendingDelete = slices.DeleteFunc(c.PendingDelete, func(d string) bool { return d == k })
	}
	running := s.RunningLocked(node, vmid)
	errs := map[string]string{}
	for _, pk := range slices.Sorted(slices.Values(c.PendingDelete)) {
		k := strings.TrimPrefix(pk, "!") // parse_pending_delete
		if !modified[k] || running && !pvecontainer.HotplugDelete(k) {
			continue // not selected, or "skip": waits for the next start
		}
		if err := s.ctApplyDeleteLocked(node, vmid, c, pk); err != nil {
			errs[k] = ctPendingError(running, k, err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Pending)) {
		if !modified[k] || running && !pvecontainer.HotplugSet(c.Keys, k) {
			continue
		}
		if err := s.ctApplySetLocked(node, vmid, c, k); err != nil {
			return err
		}
	}
	// update_vm: "don't write to config if we get any errors".
	if len(errs) > 0 {
		return core.ErrParams(errs)
	}
	// cleanup_pending: a pending value equal to the current one goes.
	for k, v := range c.Pending {
		if c.Keys[k] == v {
			delete(c.Pending, k)
		}
	}
	return nil
}

// ctApplyDeleteLocked applies the pending delete of key (stored as key or
// !key) as vmconfig_hotplug_pending and vmconfig_apply_pending do
// (src/PVE/LXC/Config.pm): an unusedN's volume is freed
// (delete_mountpoint_volume) unless a mount point, current or pending,
// still uses it, and only when the CT owns it ("ignore deletion of …,
// CT … isn't the owner!", a warning); a removed mpN's volume is kept as
// unusedN (add_unused_volume; only reached on a stopped CT, since the
// running one keeps an mpN delete pending). On an error the delete stays
// pending.
func (s *backend) ctApplyDeleteLocked(node string, vmid int, c *guestconf.Conf, pk string) error {
	k := strings.TrimPrefix(pk, "!")
	v := c.Keys[k]
	switch {
	case pvecontainer.IsUnusedKey(k):
		if v != "" && !pvecontainer.VolumeInUse(c.Keys, c.Pending, v) && guests.OwnsVolume(vmid, v) {
			if err := s.FreeVolumeLocked(node, v); err != nil {
				return err
			}
		}
	case k != "rootfs" && pvecontainer.IsVolumeKey(k):
		if err := s.ctKeepUnusedLocked(c, v); err != nil {
			return err
		}
	}
	delete(c.Keys, k)
	c.PendingDelete = slices.DeleteFunc(c.PendingDelete, func(d string) bool { return d == pk })
	return nil
}

// ctPendingError is the message update_pct_config collects for a change
// it could not apply: vmconfig_hotplug_pending's on a running CT,
// vmconfig_apply_pending's on a stopped one.
func ctPendingError(running bool, key string, err error) string {
	if running {
		return fmt.Sprintf("unable to hotplug %s: %v", key, err)
	}
	return fmt.Sprintf("unable to apply pending change %s : %v", key, err)
}

// ctApplyPendingLocked is vm_start's vmconfig_apply_pending: what waited
// for the start is in force now.
func (s *backend) ctApplyPendingLocked(node string, vmid int, c *guestconf.Conf) error {
	for _, k := range slices.Sorted(slices.Values(c.PendingDelete)) {
		// vm_start passes no error hash: a failure is a warning and
		// the delete stays pending.
		_ = s.ctApplyDeleteLocked(node, vmid, c, k)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Pending)) {
		if err := s.ctApplySetLocked(node, vmid, c, k); err != nil {
			return err
		}
	}
	return nil
}

// ctApplySetLocked makes the pending value of key current: a rootfs or
// mount point "store:N" allocates its volume; a mount point in place of
// another keeps the old volume as unusedN (apply_pending_mountpoint,
// src/PVE/LXC/Config.pm; on a running CT only a new mpN gets here).
func (s *backend) ctApplySetLocked(node string, vmid int, c *guestconf.Conf, k string) error {
	v := c.Pending[k]
	if pvecontainer.IsVolumeKey(k) {
		nv, err := s.createCtVolume(node, vmid, v, c.Keys["unprivileged"] == "1")
		if err != nil {
			return err
		}
		v = nv
		if old, ok := c.Keys[k]; ok && k != "rootfs" {
			if err := s.ctKeepUnusedLocked(c, old); err != nil {
				return err
			}
		}
	}
	c.Keys[k] = v
	delete(c.Pending, k)
	return nil
}

// ctKeepUnusedLocked is add_unused_volume for the mount point value mp a
// CT no longer uses, when it holds a volume (not a bind or device mount)
// and is_volume_in_use does not find it; PVE passes the whole mount point
// string there (see pvecontainer.VolumeInUse).
func (s *backend) ctKeepUnusedLocked(c *guestconf.Conf, mp string) error {
	vol := pvecontainer.ParseMountPoint(mp).Volume()
	if vol == "" || strings.HasPrefix(vol, "/") || pvecontainer.VolumeInUse(c.Keys, c.Pending, mp) {
		return nil
	}
	slot, err := qemuserver.UnusedSlot(c.Keys, vol)
	if err != nil || slot == "" {
		return err
	}
	c.Keys[slot] = vol
	return nil
}

// GET /nodes/{node}/lxc/{vmid}/pending: config_with_pending_array, as for
// a VM.
func (s *backend) getLxcPending(rc *core.Req) (any, error) {
	c, err := s.LoadCTConfLocked(rc.DB(), rc.Node, rc.VMID())
	if err != nil {
		return nil, err
	}
	typed := func(k, v string) any { return s.TypedGuestConf(guests.CTKind, map[string]string{k: v})[k] }
	return guesthelpers.ConfigWithPendingArray(c, typed, guestconf.CTDescription), nil
}

// PUT /nodes/{node}/lxc/{vmid}/resize: resize_vm's $load_and_check runs
// before the worker is forked (its refusals are the call's 500, not a
// failed task: lock, digest, shrink, same size), then a "resize" task
// grows the volume under the config lock.
func (s *backend) putLxcResize(rc *core.Req) (any, error) {
	db := rc.DB()
	vmid, node := rc.VMID(), rc.Node
	disk, sizeStr, digest := rc.Str("disk"), rc.Str("size"), rc.Str("digest")
	check := func() (*guestconf.Conf, *pvecontainer.MountPoint, int64, error) {
		c, err := s.LoadCTConfLocked(db, node, vmid)
		if err != nil {
			return nil, nil, 0, err
		}
		if err := c.CheckLock("CT"); err != nil {
			return nil, nil, 0, err
		}
		// check_ct_modify_config_perm on resize's own parameters: "disk"
		// is no config key, so it falls to VM.Config.Options (as PVE
		// does: resizing a CT takes VM.Config.Options besides the schema's
		// VM.Config.Disk).
		if err := s.checkCTModifyConfigPerm(db, rc.Who, node, vmid, "", c.Keys, map[string]string{"disk": disk}, nil, c.Keys["unprivileged"] == "1"); err != nil {
			return nil, nil, 0, err
		}
		if digest != "" && digest != c.Digest {
			return nil, nil, 0, pvecommon.Die("detected modified configuration - file changed by other user? Try again.")
		}
		v, ok := c.Keys[disk]
		if !ok {
			return nil, nil, 0, pvecommon.Die("unable to parse mount point '%s'", disk) // parse_volume of undef
		}
		mp := pvecontainer.ParseMountPoint(v)
		if sid, _, ok := storage.ParseVolumeID(mp.Volume()); ok && !guests.IsRootUser(rc.Who) {
			if err := core.RPCCheck(db, rc.Who, "/storage/"+sid, "Datastore.AllocateSpace"); err != nil {
				return nil, nil, 0, err
			}
		}
		vol, _, err := s.VolumeLocked(node, mp.Volume())
		if err != nil {
			return nil, nil, 0, pvecommon.Die("Could not determine current size of volume '%s'", mp.Volume())
		}
		rel := strings.HasPrefix(sizeStr, "+")
		n, ok := pvecommon.ParseSize(strings.TrimPrefix(sizeStr, "+"))
		if !ok {
			return nil, nil, 0, pvecommon.Die("invalid size string")
		}
		if rel {
			n += vol.Size
		}
		switch {
		case n < vol.Size:
			return nil, nil, 0, pvecommon.Die("unable to shrink disk size")
		case n == vol.Size:
			return nil, nil, 0, pvecommon.Die("disk is already at specified size")
		}
		return c, &mp, n, nil
	}
	if _, _, _, err := check(); err != nil {
		return nil, err
	}
	return s.GuestLockTask(rc, node, "resize", vmid, func(t *core.TaskRun) string {
		c, mp, n, err := check()
		if err != nil {
			return err.Error()
		}
		if err := s.ResizeVolumeLocked(node, mp.Volume(), n); err != nil {
			return err.Error()
		}
		mp.Set("size", pvecommon.FormatSize(n))
		c.Keys[disk] = mp.Print()
		s.WriteCTConfLocked(db, node, vmid, c)
		s.SaveLocked()
		return ""
	}), nil
}

// ctDestroyChecks are destroy_vm's $early_checks, in pve-container's order:
// protection, lock, HA without purge, replication jobs without purge; then
// the running check.
func (s *backend) ctDestroyChecks(db *core.ConfigDB, node string, vmid int, purge bool) error {
	c, err := s.LoadCTConfLocked(db, node, vmid)
	if err != nil {
		return err
	}
	if c.Keys["protection"] == "1" {
		return pvecommon.Die("can't remove CT %d - protection mode enabled", vmid)
	}
	if err := c.CheckLock("CT"); err != nil {
		return err
	}
	list, _ := s.HAResourcesLocked(db)
	if !purge {
		if ha.FindResource(list, fmt.Sprintf("ct:%d", vmid)) != nil {
			return pvecommon.Die("unable to remove CT %d - used in HA resources and purge parameter not set.", vmid)
		}
		if jobs := s.ReplicationJobsOf(db, vmid); len(jobs) > 0 {
			return pvecommon.Die("There is a replication job '%s' for guest '%d' - Please remove that first.", jobs[0], vmid)
		}
	}
	if s.RunningLocked(node, vmid) {
		return pvecommon.Die("unable to destroy CT %d - container is running", vmid)
	}
	return nil
}
