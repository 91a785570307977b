package qemusim

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guests"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

// What happens to a VM's volumes when its config changes, as qemu-server
// does it (src/PVE/API2/Qemu.pm $update_vm_api, QemuServer.pm
// vmconfig_register_unused_drive, try_deallocate_drive,
// vmconfig_delete_or_detach_drive, vmconfig_apply_pending,
// vmconfig_hotplug_pending, vmconfig_update_disk, write_vm_config,
// destroy_vm): a disk replaced or removed is kept as unusedN when the VM
// owns it; `delete=unusedN`, or a removal with force=1, frees it; a
// cloud-init volume is freed at once; a CD-ROM is simply dropped.

// addUnusedVolume is QemuConfig.pm add_unused_volume: a cloud-init volume
// is freed ("found unused cloudinit disk … removing it"); anything else goes
// to the lowest free unusedN unless it is already one (AbstractConfig.pm).
func (s *backend) addUnusedVolume(node string, c *guestconf.Conf, volid string, logf func(string, ...any)) error {
	if strings.Contains(volid, "-cloudinit") {
		logf("found unused cloudinit disk '%s', removing it", volid)
		return s.FreeVolumeLocked(node, volid)
	}
	key, err := qemuserver.UnusedSlot(c.Keys, volid)
	if err != nil || key == "" {
		return err
	}
	c.Keys[key] = volid
	return nil
}

// registerUnusedDriveLocked is vmconfig_register_unused_drive.
func (s *backend) registerUnusedDriveLocked(node string, vmid int, c *guestconf.Conf, value string, logf func(string, ...any)) error {
	d := qemuserver.ParseDrive(value)
	switch {
	case d.Cloudinit():
		if err := s.FreeVolumeLocked(node, d.File()); err != nil {
			logf("%v", err) // warn $@
		}
		return nil
	case d.CDROM():
		return nil
	}
	store, _, ok := storage.ParseVolumeID(d.File())
	if !ok {
		return nil // not a PVE-managed volume
	}
	if s.DBOf(node).Storage[store] == nil {
		logf("WARN: storage '%s' no longer exists, volume '%s' will be removed from config", store, d.File())
		return nil
	}
	if guests.OwnsVolume(vmid, d.File()) {
		return s.addUnusedVolume(node, c, d.File(), logf)
	}
	return nil
}

// tryDeallocateDriveLocked is try_deallocate_drive: with force, or for an
// unusedN key, an owned volume that nothing else uses is freed; a volume
// of another VM only leaves the config. It tells whether the key may go.
func (s *backend) tryDeallocateDriveLocked(node string, vmid int, c *guestconf.Conf, key, value string, force bool) (bool, error) {
	d := qemuserver.ParseDrive(value)
	if !(force || strings.HasPrefix(key, "unused")) || (d.CDROM() && !d.Cloudinit()) {
		return false, nil
	}
	if !guests.OwnsVolume(vmid, d.File()) {
		return true, nil
	}
	if qemuserver.VolumeInUse(c.Keys, c.Pending, key, d.File()) {
		return false, pvecommon.Die("unable to delete '%s' - volume is still in use (snapshot?)", d.File())
	}
	if err := s.FreeVolumeLocked(node, d.File()); err != nil {
		return false, err
	}
	return true, nil
}

// deleteOrDetachDriveLocked is vmconfig_delete_or_detach_drive.
func (s *backend) deleteOrDetachDriveLocked(node string, vmid int, c *guestconf.Conf, key string, force bool, logf func(string, ...any)) error {
	if force {
		_, err := s.tryDeallocateDriveLocked(node, vmid, c, key, c.Keys[key], true)
		return err
	}
	return s.registerUnusedDriveLocked(node, vmid, c, c.Keys[key], logf)
}

// hotplugSetLocked is vmconfig_hotplug_pending for one pending value of a
// running VM: it applies it (true) or leaves it pending. Disks follow
// vmconfig_update_disk: a CD-ROM's medium changes at once; another volume
// in place of a disk unplugs it and keeps the old one as unusedN; a new
// disk is plugged, except on IDE/SATA; efidisk0/tpmstate0 wait.
func (s *backend) hotplugSetLocked(node string, vmid int, c *guestconf.Conf, key string, logf func(string, ...any)) (bool, error) {
	if !qemuserver.IsDriveKey(key) {
		if !qemuserver.Hotpluggable(c.Keys, key) {
			return false, nil
		}
		if qemuserver.IsNetKey(key) {
			if err := s.updateNetLocked(node, vmid, key, c.Keys[key], c.Pending[key], logf); err != nil {
				return false, err
			}
		}
		return true, nil
	}
	if key == "efidisk0" || key == "tpmstate0" {
		return false, nil
	}
	hp := qemuserver.HotplugFeatures(c.Keys)
	nd := qemuserver.ParseDrive(c.Pending[key])
	if nd.Cloudinit() {
		return true, nil // generated after the other changes
	}
	old, exists := c.Keys[key]
	if !exists {
		return hp["disk"] && !strings.HasPrefix(key, "ide") && !strings.HasPrefix(key, "sata"), nil
	}
	od := qemuserver.ParseDrive(old)
	if od.CDROM() != nd.CDROM() {
		return false, pvecommon.Die("unable to change media type")
	}
	if od.CDROM() {
		if nd.File() == "none" && od.Cloudinit() {
			if err := s.registerUnusedDriveLocked(node, vmid, c, old, logf); err != nil {
				return false, err
			}
		}
		return true, nil
	}
	if nd.File() != od.File() {
		if !hp["disk"] {
			return false, nil
		}
		if err := s.unplugLocked(node, vmid, key); err != nil {
			return false, err
		}
		return true, s.registerUnusedDriveLocked(node, vmid, c, old, logf)
	}
	return !qemuserver.DiskChangeNeedsRestart(od, nd), nil
}

// hotplugDeleteLocked is the deletion half of vmconfig_hotplug_pending.
func (s *backend) hotplugDeleteLocked(node string, vmid int, c *guestconf.Conf, key string, force bool, logf func(string, ...any)) (bool, error) {
	if !qemuserver.IsDriveKey(key) {
		if !qemuserver.Hotpluggable(c.Keys, key) {
			return false, nil
		}
		if qemuserver.IsNetKey(key) {
			if err := s.unplugLocked(node, vmid, key); err != nil {
				return false, err
			}
		}
		return true, nil
	}
	if !qemuserver.HotplugFeatures(c.Keys)["disk"] || qemuserver.DriveNoUnplug(key) {
		return false, nil
	}
	if err := s.unplugLocked(node, vmid, key); err != nil {
		return false, err
	}
	return true, s.deleteOrDetachDriveLocked(node, vmid, c, key, force, logf)
}

// applyPendingLocked is vmconfig_apply_pending (a stopped VM, or a start):
// deletions first (a disk goes to unusedN, or is freed with force), then
// the new values (a replaced disk's old volume goes to unusedN). An option
// that fails stays pending and the others go on ($add_apply_error): the
// errors are returned per option, `unable to apply pending change <opt> :
// <die>`, after everything else was applied.
func (s *backend) applyPendingLocked(node string, vmid int, c *guestconf.Conf, logf func(string, ...any)) map[string]string {
	errs := map[string]string{}
	for _, mark := range slices.Clone(c.PendingDelete) {
		k := strings.TrimPrefix(mark, "!")
		if _, ok := c.Keys[k]; ok && qemuserver.IsDriveKey(k) && !strings.HasPrefix(k, "unused") {
			if err := s.deleteOrDetachDriveLocked(node, vmid, c, k, mark != k, logf); err != nil {
				errs[k] = applyProblem(k, err)
				continue
			}
		}
		delete(c.Keys, k)
		c.PendingDelete = slices.DeleteFunc(c.PendingDelete, func(d string) bool { return d == mark })
	}
	for _, k := range slices.Sorted(maps.Keys(c.Pending)) {
		if old, ok := c.Keys[k]; ok && qemuserver.IsDriveKey(k) && qemuserver.ParseDrive(old).File() != qemuserver.ParseDrive(c.Pending[k]).File() {
			if err := s.registerUnusedDriveLocked(node, vmid, c, old, logf); err != nil {
				errs[k] = applyProblem(k, err)
				continue
			}
		}
		c.Keys[k] = c.Pending[k]
		delete(c.Pending, k)
	}
	qemuserver.DropReusedUnused(c.Keys, c.Pending)
	if len(errs) == 0 {
		return nil
	}
	return errs
}

func applyProblem(key string, err error) string {
	msg := err.Error()
	var ae *core.APIError
	if errors.As(err, &ae) {
		msg = ae.Message
	}
	return fmt.Sprintf("unable to apply pending change %s : %s\n", key, strings.TrimRight(msg, "\n"))
}

// destroyVolumesLocked is destroy_vm's volume part: every volume the VM
// owns that its config references (drives, unusedN, cloud-init, pending
// values; CD-ROMs and other VMs' volumes stay), each once; with
// destroy-unreferenced-disks also every image of the VMID on the node's
// storages (vdisk_list). A failure is a warning and the destroy goes on.
func (s *backend) destroyVolumesLocked(node string, vmid int, c *guestconf.Conf, unreferenced bool, logf func(string, ...any)) {
	done := map[string]bool{}
	free := func(volid string) {
		if done[volid] {
			return
		}
		done[volid] = true
		if err := s.FreeVolumeLocked(node, volid); err != nil {
			logf("WARN: Could not remove disk '%s', check manually: %v", volid, err)
		}
	}
	for _, keys := range []map[string]string{c.Keys, c.Pending} {
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			if !qemuserver.IsDriveKey(k) {
				continue
			}
			d := qemuserver.ParseDrive(keys[k])
			if d.CDROM() && !d.Cloudinit() || !guests.OwnsVolume(vmid, d.File()) {
				continue
			}
			free(d.File())
		}
	}
	if !unreferenced {
		return
	}
	db := s.DBOf(node)
	for _, id := range db.SortedStorageIDs() {
		st := db.Storage[id]
		if !st.OnNode(node) || st.Disabled() {
			continue
		}
		for _, volid := range slices.Sorted(maps.Keys(s.VolumesFor(node, st))) {
			if store, _, _ := storage.ParseVolumeID(volid); store == id && guests.OwnsVolume(vmid, volid) {
				free(volid)
			}
		}
	}
}

// assertBaseUnusedLocked is destroy_vm's first check for a template: no
// base volume may still carry a linked clone (volume_is_base_and_used).
func (s *backend) assertBaseUnusedLocked(node string, c *guestconf.Conf) error {
	if !c.IsTemplate() {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(c.Keys)) {
		if !qemuserver.IsDriveKey(k) {
			continue
		}
		d := qemuserver.ParseDrive(c.Keys[k])
		if d.CDROM() || !storage.IsBase(d.File()) {
			continue
		}
		_, st, err := s.VolumeLocked(node, d.File())
		if err != nil {
			continue
		}
		for _, v := range s.VolumesFor(node, st) {
			if v.Parent == d.File() {
				return pvecommon.Die("base volume '%s' is still in use by linked cloned", d.File())
			}
		}
	}
	return nil
}

// PUT /nodes/{node}/qemu/{vmid}/unlink (qm disk unlink): update_vm with
// delete=<idlist> — so without force a disk becomes unusedN, with force
// its volume is freed.
func (s *backend) putQemuUnlink(rc *core.Req) (any, error) {
	rc.Params["delete"] = rc.Params["idlist"]
	delete(rc.Params, "idlist")
	return s.putQemuConfig(rc)
}
