package guests

import (
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/replication"
)

// The replication model the guests need (qemusim's migration, lxcsim, HA's
// recovery, a guest's destroy): replication.cfg's jobs (pve-guest-common ReplicationConfig.pm;
// their rules are pvesim/replication's), the target switch of a migration,
// the guest's migration lock a run shares with migrate, and the replicas a
// recovery needs (H8). The endpoints, pvescheduler and the pvesr runs are
// pvesim/replsim's.

// ReplJobsLocked reads replication.cfg's jobs; they are the file's
// sections, so a change to one is written with WriteReplJobsLocked.
func (s Model) ReplJobsLocked(db *core.ConfigDB) ([]*replication.Job, string) {
	list, digest := s.ReadSectionsLocked(db, replication.ConfigFile)
	jobs := make([]*replication.Job, len(list))
	for i, sec := range list {
		jobs[i] = (*replication.Job)(sec)
	}
	return jobs, digest
}

// WriteReplJobsLocked writes jobs as replication.cfg.
func (s Model) WriteReplJobsLocked(db *core.ConfigDB, jobs []*replication.Job) {
	list := make([]*pvecommon.Section, len(jobs))
	for i, j := range jobs {
		list[i] = (*pvecommon.Section)(j)
	}
	s.WriteSectionsLocked(db, replication.ConfigFile, list)
}

// ReplicationJobsOf lists the job ids of a guest (destroy refuses them).
func (s Model) ReplicationJobsOf(db *core.ConfigDB, vmid int) []string {
	jobs, _ := s.ReplJobsLocked(db)
	return replication.IDsOf(jobs, vmid)
}

// MigrationLockKey is /var/lock/pve-manager/pve-migrate-<vmid> on node
// (pve-guest-common GuestHelpers.pm guest_migration_lock), a local flock.
func MigrationLockKey(node string, vmid int) string {
	return node + ":" + replication.MigrationLockFile(vmid)
}

// SwitchReplicationLocked is switch_replication_job_target_nolock for a
// migration (AbstractMigrate.pm passes target, source), written back.
func (s Model) SwitchReplicationLocked(db *core.ConfigDB, vmid int, oldTarget, newTarget string) {
	jobs, _ := s.ReplJobsLocked(db)
	if replication.SwitchTarget(jobs, vmid, oldTarget, newTarget) {
		s.WriteReplJobsLocked(db, jobs)
		s.SaveLocked()
	}
}

// MissingVolumesLocked lists a guest's local volumes absent on node (a
// recovery without a replica cannot start it, H8).
func (s Model) MissingVolumesLocked(db *core.ConfigDB, e core.VMEntry, node string) []string {
	raw, _ := s.ReadEtcPve(db, GuestConfPath(e.Node, e.Kind, e.VMID))
	var out []string
	for _, file := range localVolids(db, e.Kind, guestconf.Parse(raw), true) {
		if s.State.Nodes[node].Volumes[file] == nil {
			out = append(out, file)
		}
	}
	return out
}
