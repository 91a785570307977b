package qemusim

import (
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

// QEMU guests' template conversion, disk resize and destroy (qemu-server's
// API2/Qemu.pm template, resize_vm, destroy_vm).

// POST /nodes/{node}/qemu/{vmid}/template: qemu-server's template API
// (API2/Qemu.pm, PVE 8 and 9; reconstructed, snapshots not simulated):
// $load_and_check runs before the answer (check_lock, "you can't convert
// a template to a template", "... if VM is running": a 500, no task),
// then the qmtemplate worker, started by the caller's user, takes the
// guest's config lock, runs the same checks again, writes template: 1 and
// template_create turns every volume that is not a CD-ROM (the cloud-init
// drive is one) into a base volume (create_base), writing the config
// after each.
func (s *backend) postQemuTemplate(rc *core.Req) (any, error) {
	db := rc.DB()
	vmid := rc.VMID()
	node := rc.Node
	check := func() (*guestconf.Conf, error) {
		c, err := s.LoadQMConfLocked(db, node, vmid)
		if err != nil {
			return nil, err
		}
		if err := c.CheckLock("VM"); err != nil {
			return nil, err
		}
		if c.IsTemplate() {
			return nil, fmt.Errorf("you can't convert a template to a template")
		}
		if s.RunningLocked(node, vmid) {
			return nil, fmt.Errorf("you can't convert a VM to template if VM is running")
		}
		return c, nil
	}
	if _, err := check(); err != nil {
		return nil, err
	}
	return s.GuestLockTask(rc, node, "qmtemplate", vmid, func(*core.TaskRun) string {
		c, err := check()
		if err != nil {
			return err.Error()
		}
		c.Keys["template"] = "1"
		s.WriteQMConfLocked(db, node, vmid, c)
		for _, k := range slices.Sorted(maps.Keys(c.Keys)) {
			if !qemuserver.IsDriveKey(k) {
				continue
			}
			d := qemuserver.ParseDrive(c.Keys[k])
			if d.CDROM() || d.Cloudinit() {
				continue
			}
			if _, _, err := s.VolumeLocked(node, d.File()); err != nil || storage.IsBase(d.File()) {
				continue
			}
			nb, err := s.MakeBaseLocked(node, d.File())
			if err != nil {
				s.SaveLocked()
				return err.Error()
			}
			d.Props.Set("file", nb)
			c.Keys[k] = d.Print()
			s.WriteQMConfLocked(db, node, vmid, c)
		}
		s.SaveLocked()
		return ""
	}), nil
}

// PUT /nodes/{node}/qemu/{vmid}/resize: a "resize" task since qemu-server
// 8.0; grow only (K11).
func (s *backend) putQemuResize(rc *core.Req) (any, error) {
	db := rc.DB()
	vmid, node := rc.VMID(), rc.Node
	disk, sizeStr, digest := rc.Str("disk"), rc.Str("size"), rc.Str("digest")
	skiplock, err := skiplockOf(rc)
	if err != nil {
		return nil, err
	}
	return s.GuestLockTask(rc, node, "resize", vmid, func(t *core.TaskRun) string {
		c, err := s.LoadQMConfLocked(db, node, vmid)
		if err != nil {
			return err.Error()
		}
		if digest != "" && digest != c.Digest {
			return "checksum mismatch (file change by other user?)"
		}
		if err := c.CheckLock("VM"); err != nil && !skiplock {
			return err.Error()
		}
		v, ok := c.Keys[disk]
		if !ok {
			return fmt.Sprintf("disk '%s' does not exist", disk)
		}
		d := qemuserver.ParseDrive(v)
		if d.CDROM() {
			return "you can't resize a cdrom"
		}
		vol, _, err := s.VolumeLocked(node, d.File())
		if err != nil {
			return fmt.Sprintf("Could not determine current size of volume '%s'", d.File())
		}
		rel := strings.HasPrefix(sizeStr, "+")
		n, ok := pvecommon.ParseSize(strings.TrimPrefix(sizeStr, "+"))
		if !ok {
			return "internal error"
		}
		if rel {
			n += vol.Size
		}
		if n < vol.Size {
			return "shrinking disks is not supported"
		}
		if n == vol.Size {
			return ""
		}
		t.Task.Log = append(t.Task.Log, fmt.Sprintf("update VM %d: resize --disk %s --size %s", vmid, disk, sizeStr))
		if err := s.ResizeVolumeLocked(node, d.File(), n); err != nil {
			return err.Error()
		}
		d.Props.Set("size", pvecommon.FormatSize(n))
		c.Keys[disk] = d.Print()
		s.WriteQMConfLocked(db, node, vmid, c)
		s.SaveLocked()
		return ""
	}), nil
}

// DELETE /nodes/{node}/qemu/{vmid}: qmdestroy task; frees the VM's volumes
// (not a linked clone's base) and removes the config last.
func (s *backend) deleteQemu(rc *core.Req) (any, error) {
	db := rc.DB()
	vmid, node := rc.VMID(), rc.Node
	if _, err := skiplockOf(rc); err != nil {
		return nil, err
	}
	early := func() error {
		c, err := s.LoadQMConfLocked(db, node, vmid)
		if err != nil {
			return err
		}
		if c.Keys["protection"] == "1" {
			return fmt.Errorf("can't remove VM %d - protection mode enabled", vmid)
		}
		if s.HAConfiguredLocked(db, vmid) && !rc.Bool("purge") {
			return pvecommon.Die("unable to remove VM %d - used in HA resources and purge parameter not set.", vmid)
		}
		if !rc.Bool("purge") {
			// ReplicationConfig.pm check_for_existing_jobs
			if jobs := s.ReplicationJobsOf(db, vmid); len(jobs) > 0 {
				return pvecommon.Die("There is a replication job '%s' for guest '%d' - Please remove that first.", jobs[0], vmid)
			}
		}
		if s.RunningLocked(node, vmid) {
			return fmt.Errorf("VM %d is running - destroy failed", vmid)
		}
		return nil
	}
	if err := early(); err != nil {
		return nil, err
	}
	return s.GuestLockTask(rc, node, "qmdestroy", vmid, func(t *core.TaskRun) string {
		if err := early(); err != nil {
			return err.Error()
		}
		c, _ := s.LoadQMConfLocked(db, node, vmid)
		if err := c.CheckLock("VM"); err != nil && !rc.Bool("skiplock") {
			return err.Error()
		}
		if err := s.assertBaseUnusedLocked(node, c); err != nil {
			return err.Error()
		}
		s.destroyVolumesLocked(node, vmid, c, rc.Bool("destroy-unreferenced-disks"), t.LogfLocked)
		// destroy_vm leaves a "lock: destroyed" config until the end.
		s.WriteQMConfLocked(db, node, vmid, &guestconf.Conf{Keys: map[string]string{"lock": "destroyed"}})
		guests.DropFromPoolsLocked(db, guests.VMKind, vmid)
		if rc.Bool("purge") {
			t.Task.Log = append(t.Task.Log, fmt.Sprintf("purging VM %d from related configurations..", vmid))
			s.PurgeGuestLocked(db, t, "vm", vmid)
		}
		s.RemoveEtcPve(db, guests.GuestConfPath(node, "qemu-server", vmid))
		s.SaveLocked()
		return ""
	}), nil
}
