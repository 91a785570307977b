package qemusim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guests"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

// The parts of a VM migration beyond moving its config: the storage map
// (targetstorage), the local devices that block it, and the two ways a
// migration task fails half-way (faults).

// checkStorageAccessMigrate is API2/Qemu.pm $check_storage_access_migrate
// (the privilege check aside): the storage is enabled on the target node
// and holds images.
func checkStorageAccessMigrate(db *core.ConfigDB, id, node string) error {
	st := db.Storage[id]
	switch {
	case st == nil:
		return pvecommon.Die("storage '%s' does not exist", id)
	case st.Disabled():
		return pvecommon.Die("storage '%s' is disabled", id)
	case !st.OnNode(node):
		return pvecommon.Die("storage '%s' is not available on node '%s'", id, node)
	case !st.HasContent("images"):
		return pvecommon.Die("storage '%s' does not support vm images", id)
	}
	return nil
}

// remapVolumesLocked moves the VM's local volumes in files to the storages
// the map names on the target (QemuMigrate.pm phase1, storage_migrate with
// allow_rename): the copy keeps its disk name when the target storage has
// it free, else takes the next free one, and the drive in the config names
// the new volume. A volume whose storage maps to itself is left for
// moveGuestLocked. Reconstruction: the naming follows pve-storage's
// storage_migrate (same name, renamed on a clash), formats are kept.
func (s *backend) remapVolumesLocked(db *core.ConfigDB, c *guestconf.Conf, vmid int, from, to string, sm pvecommon.IDMap, files []string, logf func(string, ...any)) (map[string]string, error) {
	moved := map[string]string{}
	for _, file := range files {
		store, vn, _ := storage.ParseVolumeID(file)
		dst := sm.Target(store)
		if sm.Identity || dst == store {
			continue
		}
		st := db.Storage[dst]
		if err := checkStorageAccessMigrate(db, dst, to); err != nil {
			return moved, err
		}
		v := s.State.Nodes[from].Volumes[file]
		format := "raw"
		var size int64
		if v != nil {
			format, size = v.Format, v.Size
		}
		name := strings.TrimSuffix(vn[strings.LastIndex(vn, "/")+1:], "."+format)
		if s.VolumesFor(to, st)[dst+":"+storage.VolName(st, vmid, name, format)] != nil {
			name = s.FreeDiskName(to, st, vmid, "vm", format)
		}
		newID := dst + ":" + storage.VolName(st, vmid, name, format)
		if err := s.ZFSCreateVolume(to, st, name, size); err != nil {
			return moved, fmt.Errorf("storage migration for '%s' to storage '%s' failed - %w", file, dst, err)
		}
		s.VolumesFor(to, st)[newID] = &core.GuestVolume{Size: size, Format: format}
		if v != nil {
			_ = s.FreeVolumeLocked(from, file)
		}
		moved[file] = newID
		logf("volume '%s' is '%s' on the target", file, newID)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Keys)) {
		if !qemuserver.IsDriveKey(k) {
			continue
		}
		d := qemuserver.ParseDrive(c.Keys[k])
		if n := moved[d.File()]; n != "" {
			d.Props.Set("file", n)
			c.Keys[k] = d.Print()
		}
	}
	return moved, nil
}

// copyThenFree is the half of an aborted migration that happened: the
// local volumes were copied to the target (as the same volids); the
// cleanup frees them again (phase1_cleanup → cleanup_remotedisks).
func (s *backend) copyThenFree(from, to string, files []string, logf func(string, ...any)) {
	tn := s.State.Nodes[to]
	for _, file := range files {
		v := s.State.Nodes[from].Volumes[file]
		if v == nil {
			continue
		}
		if tn.Volumes == nil {
			tn.Volumes = map[string]*core.GuestVolume{}
		}
		cp := *v
		tn.Volumes[file] = &cp
		logf("volume '%s' is '%s' on the target", file, file)
	}
	for _, file := range files {
		if s.State.Nodes[from].Volumes[file] != nil {
			delete(tn.Volumes, file)
		}
	}
}

// checkStorageAvailability is QemuServer.pm check_storage_availability:
// every volume's storage is enabled on the target node too and holds the
// volume's content type.
func (s *backend) checkStorageAvailability(db *core.ConfigDB, c *guestconf.Conf, target string) error {
	for _, k := range slices.Sorted(maps.Keys(c.Keys)) {
		if !qemuserver.IsDriveKey(k) {
			continue
		}
		d := qemuserver.ParseDrive(c.Keys[k])
		store, _, ok := storage.ParseVolumeID(d.File())
		st := db.Storage[store]
		if !ok || st == nil {
			continue
		}
		switch {
		case st.Disabled():
			return pvecommon.Die("storage '%s' is disabled", store)
		case !st.OnNode(target):
			return pvecommon.Die("storage '%s' is not available on node '%s'", store, target)
		}
	}
	return nil
}

func faultMessage(f *core.Fault, def string) string {
	if f.Message != "" {
		return f.Message
	}
	return def
}

// migrateProblems ends a migration whose move was done and whose cleanup
// failed (AbstractMigrate.pm: $self->{errors} → "migration problems"): the
// config is on the target, the local volumes are copied there and still
// on the source.
func (s *backend) migrateProblems(db *core.ConfigDB, t *core.TaskRun, vmid int, from, to string, files []string, reason string, start time.Time) string {
	tn := s.State.Nodes[to]
	for _, file := range files {
		if v := s.State.Nodes[from].Volumes[file]; v != nil {
			if tn.Volumes == nil {
				tn.Volumes = map[string]*core.GuestVolume{}
			}
			cp := *v
			tn.Volumes[file] = &cp
		}
	}
	raw, _ := s.ReadEtcPve(db, guests.GuestConfPath(from, "qemu-server", vmid))
	s.RemoveEtcPve(db, guests.GuestConfPath(from, "qemu-server", vmid))
	s.WriteEtcPve(db, guests.GuestConfPath(to, "qemu-server", vmid), raw)
	if s.RunningLocked(from, vmid) {
		s.SetRunningLocked(from, vmid, false)
		s.SetRunningLocked(to, vmid, true)
	}
	s.SwitchReplicationLocked(db, vmid, to, from)
	s.SaveLocked()
	t.LogfLocked("ERROR: %s", reason)
	t.LogfLocked("ERROR: migration finished with problems (duration %s)", fmtDuration(time.Since(start)))
	return "migration problems"
}
