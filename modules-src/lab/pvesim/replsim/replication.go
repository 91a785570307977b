// Package replsim simulates PVE's storage replication: the endpoints of
// pve-manager's PVE/API2/ReplicationConfig.pm (/cluster/replication) and
// PVE/API2/Replication.pm (/nodes/{node}/replication: the status view,
// the log, schedule_now; run_jobs and run_single_job, `pvesr run`), and the
// runs as every node's pvescheduler (pve-manager PVE/Service/pvescheduler.pm)
// starts them each minute and pve-guest-common's PVE/Replication.pm
// (run_replication, replicate) does them, recording a job's state as
// PVE/ReplicationState.pm does. The jobs' rules (ids, validation, views,
// job_status's next_sync, get_next_job) are pvesim/replication's; what
// the guest model needs of replication (replication.cfg's jobs, a
// migration's target switch, the migration lock a run shares with
// migrate, the replicas a recovery needs) is pvesim/guests' replmodel.go.
//
// Storage replication jobs live in /etc/pve/replication.cfg. Only ZFS
// volumes replicate (H6: volume_has_feature replicate is ZFSPoolPlugin's
// alone). DELETE only marks the job (remove_job full, or local with
// keep); the source node's next pvesr run — Config.ReplicationInterval, a
// minute in PVE — removes it, and never while the source node is down
// (force=1 drops it at once). The runs are replrun.go's.
package replsim

import (
	"fmt"
	"maps"
	"slices"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guests"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecontainer"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/replication"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
	"github.com/gopve/proxmox/modules-src/pveapi/storagetype"
)

// backend serves the replication endpoints and runs pvescheduler on the
// core's state; a job's runs are State's (nodes.*.replication), so the
// backend keeps nothing of its own.
type backend struct{ guests.Model }

// Register adds the replication endpoints, every node's pvescheduler loop
// and the control API's `pvesr run` to s.
func Register(s *core.Sim) {
	b := &backend{guests.New(s)}
	s.Handle(b.routes())
	s.OnStart(b.schedulerLoop)
	s.HandleControl("POST /v1/nodes/{node}/replication/run", b.ctlRun)
}

// replJobGuest parses a job id and checks VM.Replicate on its guest, as
// every replication call of PVE::API2::ReplicationConfig does first on PVE
// 9. PVE 8 has no VM.Replicate (pve-access-control added it in 9.0): its
// schema's checks (Datastore.Allocate on /storage) are all there is.
func (s *backend) replJobGuest(rc *core.Req, db *core.ConfigDB, id string) (int, error) {
	guest, err := replication.ParseID(id)
	if err != nil {
		return 0, err
	}
	if s.Cfg.Version != 8 && !core.HasPriv(db, rc.Who, fmt.Sprintf("/vms/%d", guest), []string{"VM.Replicate"}, false) {
		return 0, core.ErrPerm(fmt.Sprintf("/vms/%d, VM.Replicate", guest))
	}
	return guest, nil
}

func (s *backend) getReplicationJobs(rc *core.Req) (any, error) {
	db := rc.DB()
	jobs, _ := s.ReplJobsLocked(db)
	out := []map[string]any{}
	for _, j := range jobs {
		if !core.HasPriv(db, rc.Who, fmt.Sprintf("/vms/%d", replication.Guest(j.ID)), []string{"VM.Audit"}, false) {
			continue // filtered (K19)
		}
		out = append(out, replication.View(j, ""))
	}
	return out, nil
}

func (s *backend) getReplicationJob(rc *core.Req) (any, error) {
	db := rc.DB()
	jobs, digest := s.ReplJobsLocked(db)
	j := replication.Find(jobs, rc.Str("id"))
	if j == nil {
		return nil, fmt.Errorf("no such replication job '%s'", rc.Str("id"))
	}
	return replication.View(j, digest), nil
}

// replicatableVolumes is get_replicatable_volumes for a VM config: shared
// and foreign volumes are skipped, a local volume without the replicate
// feature is an error.
func (s *backend) replicatableVolumes(node string, vmid int, c *guestconf.Conf) ([]string, error) {
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

func (s *backend) postReplicationJob(rc *core.Req) (any, error) {
	db := rc.DB()
	id, target := rc.Str("id"), rc.Str("target")
	guest, err := s.replJobGuest(rc, db, id)
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
	c, err := s.LoadGuestConfLocked(db, guests.KindOf(e), e.Node, guest)
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
	// ReplicationConfig::lock without a message: cfs_lock_file's own.
	if aerr := s.CfsWriteLocked(db, replication.ConfigFile, ""); aerr != nil {
		return nil, aerr
	}
	jobs, _ := s.ReplJobsLocked(db)
	if err := replication.CheckNew(jobs, id, guest, target); err != nil {
		return nil, err
	}
	j := &replication.Job{Type: "local", ID: id, Opts: map[string]string{"target": target, "source": e.Node}}
	for _, k := range replication.CreateOptions {
		if rc.Has(k) {
			j.Opts[k] = rc.Str(k)
		}
	}
	s.WriteReplJobsLocked(db, append(jobs, j))
	s.SaveLocked()
	return nil, nil
}

func (s *backend) putReplicationJob(rc *core.Req) (any, error) {
	db := rc.DB()
	id := rc.Str("id")
	if _, err := s.replJobGuest(rc, db, id); err != nil {
		return nil, err
	}
	jobs, digest := s.ReplJobsLocked(db)
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
	s.WriteReplJobsLocked(db, jobs)
	s.SaveLocked()
	return nil, nil
}

func (s *backend) deleteReplicationJob(rc *core.Req) (any, error) {
	db := rc.DB()
	id := rc.Str("id")
	if _, err := s.replJobGuest(rc, db, id); err != nil {
		return nil, err
	}
	jobs, _ := s.ReplJobsLocked(db)
	if rc.Bool("force") {
		if rc.Bool("keep") {
			return nil, core.ErrParams(map[string]string{"keep": "conflicts with parameter 'force'"})
		}
		s.WriteReplJobsLocked(db, slices.DeleteFunc(jobs, func(j *replication.Job) bool { return j.ID == id }))
		s.SaveLocked()
		return nil, nil
	}
	j := replication.Find(jobs, id)
	if j == nil {
		return nil, fmt.Errorf("no such job '%s'", id)
	}
	replication.MarkRemoval(j, rc.Bool("keep"))
	s.WriteReplJobsLocked(db, jobs)
	s.SaveLocked()
	return nil, nil
}

// routes are the replication endpoints.
func (s *backend) routes() map[string]core.Handler {
	return map[string]core.Handler{
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
