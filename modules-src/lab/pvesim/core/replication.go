package core

import (
	"fmt"
	"maps"
	"slices"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecontainer"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/replication"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
	"github.com/gopve/proxmox/modules-src/pveapi/storagetype"
)

// Storage replication jobs, /etc/pve/replication.cfg (pve-manager
// PVE/API2/ReplicationConfig.pm, pve-guest-common ReplicationConfig.pm):
// the handlers, the file's lock and persistence; the jobs' model and rules
// (ids, validation, the views, the state and next_sync) are
// pvesim/replication's. Only ZFS volumes replicate (H6: volume_has_feature
// replicate is ZFSPoolPlugin's alone). DELETE only marks the job
// (remove_job full, or local with keep); the source node's next pvesr run —
// Config.ReplicationInterval, a minute in PVE — removes it, and never while
// the source node is down (force=1 drops it at once). The runs are
// replrun.go's.

// replJobsLocked reads replication.cfg's jobs; they are the file's
// sections, so a change to one is written with writeReplJobsLocked.
func (s *Sim) replJobsLocked(db *ConfigDB) ([]*replication.Job, string) {
	list, digest := s.ReadSectionsLocked(db, replication.ConfigFile)
	jobs := make([]*replication.Job, len(list))
	for i, sec := range list {
		jobs[i] = (*replication.Job)(sec)
	}
	return jobs, digest
}

func (s *Sim) writeReplJobsLocked(db *ConfigDB, jobs []*replication.Job) {
	list := make([]*section, len(jobs))
	for i, j := range jobs {
		list[i] = (*section)(j)
	}
	s.WriteSectionsLocked(db, replication.ConfigFile, list)
}

// replJobGuest parses a job id and checks VM.Replicate on its guest, as
// every replication call of PVE::API2::ReplicationConfig does first on PVE
// 9. PVE 8 has no VM.Replicate (pve-access-control added it in 9.0): its
// schema's checks (Datastore.Allocate on /storage) are all there is.
func replJobGuest(rc *Req, db *ConfigDB, id string) (int, error) {
	guest, err := replication.ParseID(id)
	if err != nil {
		return 0, err
	}
	if rc.Who.ver != 8 && !HasPriv(db, rc.Who, fmt.Sprintf("/vms/%d", guest), []string{"VM.Replicate"}, false) {
		return 0, ErrPerm(fmt.Sprintf("/vms/%d, VM.Replicate", guest))
	}
	return guest, nil
}

func (s *Sim) getReplicationJobs(rc *Req) (any, error) {
	db := rc.DB()
	jobs, _ := s.replJobsLocked(db)
	out := []map[string]any{}
	for _, j := range jobs {
		if !HasPriv(db, rc.Who, fmt.Sprintf("/vms/%d", replication.Guest(j.ID)), []string{"VM.Audit"}, false) {
			continue // filtered (K19)
		}
		out = append(out, replication.View(j, ""))
	}
	return out, nil
}

func (s *Sim) getReplicationJob(rc *Req) (any, error) {
	db := rc.DB()
	jobs, digest := s.replJobsLocked(db)
	j := replication.Find(jobs, rc.Str("id"))
	if j == nil {
		return nil, fmt.Errorf("no such replication job '%s'", rc.Str("id"))
	}
	return replication.View(j, digest), nil
}

// replicatableVolumes is get_replicatable_volumes for a VM config: shared
// and foreign volumes are skipped, a local volume without the replicate
// feature is an error.
func (s *Sim) replicatableVolumes(node string, vmid int, c *guestconf.Conf) ([]string, error) {
	db := s.DBOf(node)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(c.Keys)) {
		var d qemuserver.Drive
		switch {
		case qemuserver.IsDriveKey(k):
			d = qemuserver.ParseDrive(c.Keys[k])
		case pvecontainer.IsVolumeKey(k): // a container's rootfs and mount points
			d = qemuserver.Drive{Props: pvecommon.ParseProps(c.Keys[k], "volume")}
			d.Props.Set("file", d.Props.Get("volume"))
		default:
			continue
		}
		if d.CDROM() || d.Props.Get("replicate") == "0" {
			continue
		}
		store, vn, ok := storage.ParseVolumeID(d.File())
		if !ok {
			continue
		}
		st := db.Storage[store]
		if st == nil || st.Shared() || storage.Owner(vn) != vmid {
			continue
		}
		if !storagetype.Of(st.Type).Replicates {
			return nil, fmt.Errorf("missing replicate feature on volume '%s'", d.File())
		}
		out = append(out, d.File())
	}
	return out, nil
}

func (s *Sim) postReplicationJob(rc *Req) (any, error) {
	db := rc.DB()
	id, target := rc.Str("id"), rc.Str("target")
	guest, err := replJobGuest(rc, db, id)
	if err != nil {
		return nil, err
	}
	e, ok := s.FindVMLocked(db, guest)
	if !ok {
		return nil, pvecommon.Die("Guest '%d' does not exist.", guest)
	}
	if !slices.Contains(s.MembersLocked(rc.Node), target) {
		return nil, pvecommon.Die("Target '%s' does not exist.", target)
	}
	if src := rc.Str("source"); src != "" && src != e.Node {
		return nil, pvecommon.Die("Source '%s' does not match current node of guest '%d' (%s)", src, guest, e.Node)
	}
	if target == e.Node {
		return nil, pvecommon.Die("Source and target must not be identical")
	}
	var c *guestconf.Conf
	if e.Kind == "lxc" {
		c, err = s.LoadCTConfLocked(db, e.Node, guest)
	} else {
		c, err = s.loadQmConfLocked(db, e.Node, guest)
	}
	if err != nil {
		return nil, err
	}
	vols, err := s.replicatableVolumes(e.Node, guest, c)
	if err != nil {
		return nil, err
	}
	if len(vols) == 0 {
		return nil, pvecommon.Die("No replicatable volumes found")
	}
	if !s.QuorateLocked(db) {
		// ReplicationConfig::lock without a message: cfs_lock_file's own.
		e := ErrStatus(500, "cfs-lock 'file-replication_cfg' error: no quorum!")
		e.wait = s.Cfg.Dur(s.Cfg.LockTimeout, DefaultLockTimeout)
		return nil, e
	}
	jobs, _ := s.replJobsLocked(db)
	if err := replication.CheckNew(jobs, id, guest, target); err != nil {
		return nil, err
	}
	j := &replication.Job{Type: "local", ID: id, Opts: map[string]string{"target": target, "source": e.Node}}
	for _, k := range replication.CreateOptions {
		if rc.Has(k) {
			j.Opts[k] = rc.Str(k)
		}
	}
	s.writeReplJobsLocked(db, append(jobs, j))
	s.SaveLocked()
	return nil, nil
}

func (s *Sim) putReplicationJob(rc *Req) (any, error) {
	db := rc.DB()
	id := rc.Str("id")
	if _, err := replJobGuest(rc, db, id); err != nil {
		return nil, err
	}
	jobs, digest := s.replJobsLocked(db)
	if d := rc.Str("digest"); d != "" && d != digest {
		return nil, pvecommon.Die("detected modified configuration - file changed by other user? Try again.")
	}
	j := replication.Find(jobs, id)
	if j == nil {
		return nil, fmt.Errorf("no such job '%s'", id)
	}
	param := func(k string) (string, bool) { return rc.Str(k), rc.Has(k) }
	if err := replication.Update(j, param, pveschema.SplitList(rc.Str("delete"))); err != nil {
		return nil, err
	}
	s.writeReplJobsLocked(db, jobs)
	s.SaveLocked()
	return nil, nil
}

func (s *Sim) deleteReplicationJob(rc *Req) (any, error) {
	db := rc.DB()
	id := rc.Str("id")
	if _, err := replJobGuest(rc, db, id); err != nil {
		return nil, err
	}
	jobs, _ := s.replJobsLocked(db)
	if rc.Bool("force") {
		if rc.Bool("keep") {
			return nil, ErrParams(map[string]string{"keep": "conflicts with parameter 'force'"})
		}
		s.writeReplJobsLocked(db, slices.DeleteFunc(jobs, func(j *replication.Job) bool { return j.ID == id }))
		s.SaveLocked()
		return nil, nil
	}
	j := replication.Find(jobs, id)
	if j == nil {
		return nil, fmt.Errorf("no such job '%s'", id)
	}
	replication.MarkRemoval(j, rc.Bool("keep"))
	s.writeReplJobsLocked(db, jobs)
	s.SaveLocked()
	return nil, nil
}

// ReplicationJobsOf lists the job ids of a guest (destroy refuses them).
func (s *Sim) ReplicationJobsOf(db *ConfigDB, vmid int) []string {
	jobs, _ := s.replJobsLocked(db)
	return replication.IDsOf(jobs, vmid)
}

// replicationRoutes are the replication endpoints.
func (s *Sim) replicationRoutes() map[string]Handler {
	return map[string]Handler{
		"GET /cluster/replication":                         s.getReplicationJobs,
		"GET /nodes/{node}/replication":                    s.getNodeReplication,
		"GET /nodes/{node}/replication/{id}/status":        s.getNodeReplicationStatus,
		"GET /nodes/{node}/replication/{id}/log":           s.getNodeReplicationLog,
		"POST /nodes/{node}/replication/{id}/schedule_now": s.postReplicationScheduleNow,
		"POST /cluster/replication":                        s.postReplicationJob,
		"GET /cluster/replication/{id}":                    s.getReplicationJob,
		"PUT /cluster/replication/{id}":                    s.putReplicationJob,
		"DELETE /cluster/replication/{id}":                 s.deleteReplicationJob,
	}
}
