package qemusim

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/flocktable"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guests"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/replication"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

// VM migration (qemu-server API2/Qemu.pm migrate_vm, QemuMigrate.pm,
// pve-guest-common AbstractMigrate.pm): early refusals answer the POST; the
// qmigrate task on the source holds the config lock and "lock: migrate",
// copies local volumes to the target (offline; online only with
// with-local-disks), renames the config to the target node last and
// switches the guest's replication jobs. A failure in the task logs the
// reason and ends "migration aborted". An HA guest's migration is a
// hamigrate request the CRM carries out HADelay later.

func (s *backend) postQemuMigrate(rc *core.Req) (any, error) {
	db := rc.DB()
	vmid, node, target := rc.VMID(), rc.Node, rc.Str("target")
	if err := s.AssertOnNodeLocked(db, node, vmid); err != nil {
		return nil, err
	}
	if target == node {
		return nil, core.ErrParams(map[string]string{"target": "target is local node."})
	}
	if db.Corosync == nil || db.Corosync.Member(target) == nil {
		return nil, pvecommon.Die("no such cluster node '%s'", target)
	}
	if !s.NodeUpLocked(target) {
		return nil, pvecommon.Die("target node '%s' is not online", target) // reconstruction (remote_node_ip / ssh)
	}
	c, err := s.LoadQMConfLocked(db, node, vmid)
	if err != nil {
		return nil, err
	}
	running := s.RunningLocked(node, vmid)
	online := rc.Bool("online")
	if running && !online {
		return nil, pvecommon.Die("can't migrate running VM without --online")
	}
	if running && !rc.Bool("force") {
		jobs := s.ReplicationJobsOf(db, vmid)
		list, _ := s.ReadSectionsLocked(db, replication.ConfigFile)
		toTarget := false
		for _, id := range jobs {
			if j := pvecommon.FindSection(list, id); j != nil && j.Opts["target"] == target {
				toTarget = true
			}
		}
		if len(jobs) > 0 && !toTarget {
			return nil, pvecommon.Die("Cannot live-migrate replicated VM to node '%s' - not a replication target. Use 'force' to override.", target)
		}
	}
	sm := pvecommon.IDMap{Identity: true}
	if ts := rc.Str("targetstorage"); ts != "" {
		if sm, err = pvecommon.ParseIDMap(ts); err != nil {
			return nil, core.ErrParams(map[string]string{"targetstorage": "failed to parse storage map: " + err.Error()})
		}
		for _, id := range sm.Targets() {
			if err := checkStorageAccessMigrate(db, id, target); err != nil {
				return nil, err
			}
		}
	}
	if sm.Identity {
		if err := s.checkStorageAvailability(db, c, target); err != nil {
			return nil, err
		}
	}
	if _, managed := s.HAManagedLocked(db, vmid); managed {
		return s.StartTaskLocked(rc, node, "hamigrate", strconv.Itoa(vmid), func(t *core.TaskRun) string {
			t.Logf("Requesting HA migration for VM %d to node %s", vmid, target)
			if !s.Sleep(s.Cfg.Dur(s.Cfg.TaskDuration, core.DefaultTaskDuration)) {
				return "unexpected status"
			}
			s.Mu.Lock()
			defer s.Mu.Unlock()
			id := db.ID
			s.Workers.Add(1)
			go func() {
				defer s.Workers.Done()
				if !s.Sleep(s.Cfg.Dur(s.Cfg.HADelay, 10*time.Second)) {
					return
				}
				s.Mu.Lock()
				defer s.Mu.Unlock()
				if d := s.State.DBs[id]; d != nil {
					_ = s.MoveGuestLocked(d, vmid, node, target, func(string, ...any) {})
				}
			}()
			return ""
		}), nil
	}
	withLocal := rc.Bool("with-local-disks")
	return s.StartTaskLocked(rc, node, "qmigrate", strconv.Itoa(vmid), func(t *core.TaskRun) string {
		start := time.Now()
		// The whole migration holds the guest's migration lock
		// (qemu-server API2/Qemu.pm migrate_vm: guest_migration_lock($vmid,
		// 10, …)): a replication run of the guest meanwhile is skipped
		// (pvesim/replsim's syncJob, H5).
		mig := guests.MigrationLockKey(node, vmid)
		if !s.Acquire(mig, false, s.Cfg.Dur(s.Cfg.LockTimeout, core.DefaultLockTimeout)) {
			return flocktable.ErrTimeout(replication.MigrationLockFile(vmid)).Error()
		}
		defer s.Release(mig, false)
		key := guests.GuestLockKey(node, vmid)
		if !s.Acquire(key, false, s.Cfg.Dur(s.Cfg.LockTimeout, core.DefaultLockTimeout)) {
			return flocktable.ErrTimeout(guests.GuestLockFile(vmid)).Error()
		}
		defer s.Release(key, false)
		abort := func(reason string) string {
			t.Logf("ERROR: migration aborted (duration %s): %s", fmtDuration(time.Since(start)), reason)
			return "migration aborted"
		}
		// abortLocked is abort under s.Mu (the second half of the worker).
		abortLocked := func(reason string) string {
			t.LogfLocked("ERROR: migration aborted (duration %s): %s", fmtDuration(time.Since(start)), reason)
			return "migration aborted"
		}
		s.Mu.Lock()
		c, err := s.LoadQMConfLocked(db, node, vmid)
		if err == nil {
			err = c.CheckLock("VM")
		}
		if err != nil {
			s.Mu.Unlock()
			return abort(err.Error())
		}
		t.Task.Log = append(t.Task.Log, fmt.Sprintf("starting migration of VM %d to node '%s' (%s)", vmid, target, s.State.Nodes[target].Addr))
		local, reason := s.localVolumesLocked(db, c, vmid)
		if res := qemuserver.LocalResources(c.Keys); reason == "" && len(res) > 0 {
			// QemuMigrate.pm prepare: without force (root only), a VM with
			// local devices does not migrate, offline or online.
			reason = "can't migrate VM which uses local devices: " + strings.Join(res, ", ")
		}
		for _, file := range local {
			store, _, _ := storage.ParseVolumeID(file)
			if dst := sm.Target(store); reason == "" && !sm.Identity && dst != store {
				if err := checkStorageAccessMigrate(db, dst, target); err != nil {
					reason = err.Error() // target_storage_check_available, in scan_local_volumes
				}
			}
		}
		if reason == "" && running && len(local) > 0 && !withLocal {
			reason = fmt.Sprintf("can't migrate local disk '%s': can't live migrate attached local disks without with-local-disks option", local[0])
		}
		if reason != "" {
			s.Mu.Unlock()
			return abort(reason)
		}
		c.Keys["lock"] = "migrate"
		s.WriteQMConfLocked(db, node, vmid, c)
		s.SaveLocked()
		s.Mu.Unlock()
		if !s.Sleep(s.Cfg.Dur(s.Cfg.TaskDuration, core.DefaultTaskDuration)) {
			return "unexpected status"
		}
		s.Mu.Lock()
		defer s.Mu.Unlock()
		c, _ = s.LoadQMConfLocked(db, node, vmid)
		delete(c.Keys, "lock")
		if f := rc.Fault; f != nil && f.Kind == core.FaultMigrateAbort {
			s.WriteQMConfLocked(db, node, vmid, c)
			s.copyThenFree(node, target, local, t.LogfLocked)
			return abortLocked(faultMessage(f, "storage migration failed"))
		}
		moved, err := s.remapVolumesLocked(db, c, vmid, node, target, sm, local, t.LogfLocked)
		s.WriteQMConfLocked(db, node, vmid, c)
		if err != nil {
			return abortLocked(err.Error())
		}
		var rest []string
		for _, f := range local {
			if moved[f] == "" {
				rest = append(rest, f)
			}
		}
		if f := rc.Fault; f != nil && f.Kind == core.FaultMigrateProblems {
			// The config moves, the source keeps its volumes (their copies
			// are on the target): phase3_cleanup could not remove them.
			return s.migrateProblems(db, t, vmid, node, target, rest, faultMessage(f, "failed to remove source volumes"), start)
		}
		if err := s.ZFSMigrateLocked(db, node, target, rest); err != nil {
			return abortLocked(err.Error())
		}
		if err := s.MoveGuestLocked(db, vmid, node, target, t.LogfLocked); err != nil {
			return abortLocked(err.Error())
		}
		t.Task.Log = append(t.Task.Log, fmt.Sprintf("migration finished successfully (duration %s)", fmtDuration(time.Since(start))))
		return ""
	}), nil
}

func fmtDuration(d time.Duration) string {
	sec := int(d.Seconds())
	return fmt.Sprintf("%02d:%02d:%02d", sec/3600, sec/60%60, sec%60)
}

// localVolumesLocked lists a VM's volumes on local storage that migrate with
// it, or why they cannot (QemuMigrate.pm scan_local_volumes).
func (s *backend) localVolumesLocked(db *core.ConfigDB, c *guestconf.Conf, vmid int) ([]string, string) {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(c.Keys)) {
		if !qemuserver.IsDriveKey(k) {
			continue
		}
		d := qemuserver.ParseDrive(c.Keys[k])
		store, vn, ok := storage.ParseVolumeID(d.File())
		if !ok {
			continue
		}
		st := db.Storage[store]
		if st == nil || st.Shared() {
			continue
		}
		if d.CDROM() && !d.Cloudinit() {
			return nil, fmt.Sprintf("can't migrate local disk '%s': local cdrom image", d.File())
		}
		if base, _, ok := strings.Cut(vn, "/vm-"); ok && strings.Contains(base, "base-") {
			return nil, fmt.Sprintf("can't migrate '%s' as it's a clone of '%s'", d.File(), strings.TrimSuffix(base, "/"))
		}
		out = append(out, d.File())
	}
	return out, ""
}
