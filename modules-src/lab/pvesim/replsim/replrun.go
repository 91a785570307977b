package replsim

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/flocktable"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guests"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/replication"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

// Replication runs, as pvescheduler and pvesr do them (pve-manager
// PVE/Service/pvescheduler.pm, PVE/API2/Replication.pm run_jobs;
// pve-guest-common Replication.pm run_replication): every
// ReplicationInterval (PVE: a minute) each node's scheduler runs pvesr
// under /var/lock/pvesr.lck, and that run works through every due job of
// the guests on the node, one after another. When a job is due (job_status's
// next_sync: schedule, backoff after failures, never while the target is
// offline), the order of get_next_job, the switch of a guest HA stole
// (so a client that treats target as fixed sees it change until failback),
// what a run records and the status view are pvesim/replication's rules;
// here are the scheduler, the locks, the runs — a run takes TaskDuration,
// copies the guest's ZFS volumes to the target (the replica a recovery
// needs, H8), and fails when the target is down — and the node's
// replication endpoints. Runs are node-local state.

// replRunLocked is job id's state on node, created on first use.
func (s *backend) replRunLocked(node, id string) *replication.State {
	n := s.State.Nodes[node]
	if n.Replication == nil {
		n.Replication = map[string]*replication.State{}
	}
	r := n.Replication[id]
	if r == nil {
		r = &replication.State{}
		n.Replication[id] = r
	}
	return r
}

// replMinute is the lab's replication minute; "none" (negative) is made a
// few milliseconds so the scheduler loop does not spin.
func (s *backend) replMinute() time.Duration {
	return max(s.Cfg.Dur(s.Cfg.ReplicationInterval, time.Minute), 10*time.Millisecond)
}

// replEnvLocked is what replication's job_status rules read of node: the
// lab's minute, which nodes are up, the jobs' states there.
func (s *backend) replEnvLocked(node string) replication.Env {
	return replication.Env{
		Minute: s.replMinute(),
		Online: s.NodeUpLocked,
		State:  func(id string) *replication.State { return s.State.Nodes[node].Replication[id] },
	}
}

// schedulerLoop is every node's pvescheduler: a pvesr run at
// each lab minute boundary on every node that is up.
func (s *backend) schedulerLoop() {
	for {
		minute := s.replMinute()
		wait := minute - time.Duration(time.Now().UnixNano()%int64(minute))
		if !s.Sleep(wait) {
			return
		}
		s.Mu.Lock()
		var nodes []string
		for _, n := range s.SortedNodeNamesLocked() {
			if s.NodeUpLocked(n) {
				nodes = append(nodes, n)
			}
		}
		s.Mu.Unlock()
		for _, n := range nodes {
			s.Workers.Add(1)
			go func() {
				defer s.Workers.Done()
				// The scheduler's pvesr takes /var/lock/pvesr.lck; while
				// someone else holds it (a `pvesr run`), this minute is
				// skipped (reconstruction; H5).
				s.Mu.Lock()
				lock := pvesrLockKey(n)
				ok := s.Flocks.TryLock(lock, false)
				s.Mu.Unlock()
				if !ok {
					return
				}
				s.runDueJobs(n, "")
				s.Mu.Lock()
				s.Flocks.Unlock(lock, false)
				s.Mu.Unlock()
			}()
		}
	}
}

// runDueJobs is run_jobs on node (the caller holds pvesr.lck): every job
// that is due now runs once, in get_next_job's order (next_sync, guest,
// id); with only set, that job runs whether due or not (pvesr run --id).
func (s *backend) runDueJobs(node, only string) []string {
	start := time.Now().UnixMilli()
	done := map[string]bool{}
	var log []string
	for {
		s.Mu.Lock()
		n := s.State.Nodes[node]
		if n == nil || !s.NodeUpLocked(node) {
			s.Mu.Unlock()
			return log
		}
		db := s.DBOf(node)
		next := s.replEnvLocked(node).NextJob(s.jobsOnNodeLocked(db, node), start, done, only)
		s.Mu.Unlock()
		if next == nil {
			return log
		}
		done[next.ID] = true
		log = append(log, s.syncJob(db.ID, node, next.ID)...)
	}
}

// syncJob runs one job of node now (run_replication under pvesr.lck) and
// returns its log.
func (s *backend) syncJob(dbID, src, id string) []string {
	// run_replication takes the guest's migration lock with a 2 s timeout
	// before anything is recorded (pve-guest-common Replication.pm
	// run_replication → guest_migration_lock, then $run_replication_nolock
	// → record_job_start). Not obtained (a migration or a snapshot
	// rollback holds it), the run dies before the state is touched:
	// run_jobs only warns ("got unexpected replication job error", journal;
	// pve-manager API2/Replication.pm _handle_job_err), so the job's
	// status keeps its fail_count, error and last_try — contention is
	// never a job's error (H5) — and it stays due for the next run.
	if g, err := replication.ParseID(id); err == nil {
		mig := guests.MigrationLockKey(src, g)
		if !s.Acquire(mig, false, min(2*time.Second, s.Cfg.Dur(s.Cfg.LockTimeout, core.DefaultLockTimeout))) {
			s.Mu.Lock()
			s.JournalLocked(replication.SkippedWarning(id, flocktable.ErrTimeout(replication.MigrationLockFile(g))))
			s.Mu.Unlock()
			return nil
		}
		defer s.Release(mig, false)
	}
	s.Mu.Lock()
	db := s.State.DBs[dbID]
	if db == nil {
		s.Mu.Unlock()
		return nil
	}
	jobs, _ := s.ReplJobsLocked(db)
	job := replication.Find(jobs, id)
	guest := replication.Guest(id)
	e, ok := s.FindVMLocked(db, guest)
	if job == nil || !ok || e.Node != src {
		s.Mu.Unlock()
		return nil
	}
	if job.Opts["remove_job"] != "" {
		// The job's removal: its replicas go (remove_job full), then the job.
		// replicate() first asks the target to drop them
		// (remote_prepare_local_job over ssh, pve-guest-common
		// Replication.pm); with the target down that dies, record_job_end
		// counts the failure and the job stays, tried again at every run
		// (job_status: next_sync 1 for a job marked for removal) until the
		// target is back or the job is deleted with force.
		if t := job.Opts["target"]; job.Opts["remove_job"] == "full" && t != src && !s.NodeUpLocked(t) {
			scan := "--scan " + s.replStoragesLocked(db, e, src, guest) + " --force"
			s.replRunLocked(src, id).RemovalFailed(replication.PrepareFailed(t, s.State.Nodes[t].Addr, id, scan), time.Now())
			s.SaveLocked()
			s.Mu.Unlock()
			return nil
		}
		if job.Opts["remove_job"] == "full" && s.NodeUpLocked(job.Opts["target"]) {
			if c := s.guestConfLocked(db, e); c != nil {
				if vols, err := s.replicatableVolumes(src, guest, c); err == nil {
					for _, v := range vols {
						delete(s.State.Nodes[job.Opts["target"]].Volumes, v)
					}
				}
			}
		}
		s.WriteReplJobsLocked(db, slices.DeleteFunc(jobs, func(j *replication.Job) bool { return j.ID == id }))
		delete(s.State.Nodes[src].Replication, id)
		s.SaveLocked()
		s.Mu.Unlock()
		return nil
	}
	target := job.Opts["target"]
	run := s.replRunLocked(src, id)
	start := time.Now()
	run.Begin(id, guest, start)
	s.SaveLocked()
	s.Mu.Unlock()

	alive := s.Sleep(s.Cfg.Dur(s.Cfg.TaskDuration, core.DefaultTaskDuration))

	s.Mu.Lock()
	defer s.Mu.Unlock()
	run.Running = false
	if !alive {
		return run.Log
	}
	defer func() {
		run.Duration = float64(time.Since(start).Milliseconds()) / 1000
		s.SaveLocked()
	}()
	fail := func(msg string) []string {
		run.Failed(id, msg, time.Now())
		return run.Log
	}
	if !s.NodeUpLocked(target) {
		return fail(replication.PrepareFailed(target, s.State.Nodes[target].Addr, id, ""))
	}
	conf := s.guestConfLocked(db, e)
	if conf == nil {
		return fail(fmt.Sprintf("guest %d has no config", guest)) // reconstruction
	}
	vols, err := s.replicatableVolumes(src, guest, conf)
	if err != nil {
		return fail(err.Error())
	}
	run.Logf(id, time.Now(), "volumes => %s", strings.Join(vols, ","))
	tn := s.State.Nodes[target]
	if tn.Volumes == nil {
		tn.Volumes = map[string]*core.GuestVolume{}
	}
	for _, v := range vols {
		if sv := s.State.Nodes[src].Volumes[v]; sv != nil {
			c := *sv
			tn.Volumes[v] = &c
		}
		run.LogSync(id, v, start, time.Now())
	}
	run.Synced(id, start, time.Now())
	return run.Log
}

// replStoragesLocked lists the storages of a guest's replicated volumes,
// comma-separated (replication.ScanArg).
func (s *backend) replStoragesLocked(db *core.ConfigDB, e core.VMEntry, src string, guest int) string {
	var vols []string
	if c := s.guestConfLocked(db, e); c != nil {
		vols, _ = s.replicatableVolumes(src, guest, c)
	}
	return replication.ScanArg(vols, func(v string) (string, bool) {
		st, _, ok := storage.ParseVolumeID(v)
		return st, ok
	})
}

// guestConfLocked reads a guest's config wherever it is, VM or CT.
func (s *backend) guestConfLocked(db *core.ConfigDB, e core.VMEntry) *guestconf.Conf {
	c, err := s.LoadGuestConfLocked(db, guests.KindOf(e), e.Node, e.VMID)
	if err != nil {
		return nil
	}
	return c
}

// pvesrLockKey is /var/lock/pvesr.lck on node.
func pvesrLockKey(node string) string { return node + ":" + replication.PvesrLock }

// Run is `pvesr run [--id ID]` on node of s: it takes
// /var/lock/pvesr.lck (waiting LockTimeout, PVE: 60 s, then "can't lock
// file '/var/lock/pvesr.lck' - got timeout", H5) and runs the node's due
// jobs (or the one named, due or not) in the foreground; the lines are
// what --verbose prints. The control API's POST
// /v1/nodes/{node}/replication/run is the same call.
func Run(s *core.Sim, node, id string) ([]string, error) {
	return (&backend{guests.New(s)}).run(node, id)
}

func (s *backend) run(node, id string) ([]string, error) {
	s.Mu.Lock()
	n := s.State.Nodes[node]
	s.Mu.Unlock()
	if n == nil {
		return nil, &core.NotFoundError{Msg: fmt.Sprintf("no node %q in this lab", node)}
	}
	lock := pvesrLockKey(node)
	if !s.Acquire(lock, false, s.Cfg.Dur(s.Cfg.LockTimeout, core.DefaultLockTimeout)) {
		return nil, &core.ConflictError{Msg: "can't lock file '/var/lock/pvesr.lck' - got timeout"}
	}
	defer s.Release(lock, false)
	if id != "" {
		s.Mu.Lock()
		err := s.checkSingleJobLocked(node, id)
		s.Mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	return s.runDueJobs(node, id), nil
}

// checkSingleJobLocked is run_single_job's checks, under pvesr.lck and in
// its order (pve-manager API2/Replication.pm): the job in replication.cfg,
// not disabled, its guest in the cluster and on this node, its target
// another node.
func (s *backend) checkSingleJobLocked(node, id string) error {
	db := s.DBOf(node)
	jobs, _ := s.ReplJobsLocked(db)
	j := replication.Find(jobs, id)
	if j == nil {
		return &core.BadRequestError{Msg: fmt.Sprintf("no such job '%s'", id)}
	}
	if pvecommon.PerlTrue(j.Opts["disable"]) {
		return &core.BadRequestError{Msg: fmt.Sprintf("job '%s' is disabled", id)}
	}
	g := replication.Guest(id)
	e, ok := s.FindVMLocked(db, g)
	switch {
	case !ok:
		return &core.BadRequestError{Msg: fmt.Sprintf("no such guest '%d'", g)}
	case e.Node != node:
		return &core.BadRequestError{Msg: fmt.Sprintf("guest '%d' is not on local node", g)}
	case j.Opts["target"] == node:
		return &core.BadRequestError{Msg: "unable to sync to local node"}
	}
	return nil
}

// replStatusView is $extract_job_status for a job of node, with the
// guest's vmtype from the vmlist (job_status).
func (s *backend) replStatusView(node string, j *replication.Job) map[string]any {
	vmtype := ""
	if e, ok := s.FindVMLocked(s.DBOf(node), replication.Guest(j.ID)); ok {
		vmtype = map[string]string{"qemu-server": "qemu", "lxc": "lxc"}[e.Kind]
	}
	return s.replEnvLocked(node).StatusView(j, vmtype)
}

// jobsOnNodeLocked is job_status: the jobs node runs
// (replication.OnNode), after switching those of a guest HA stole onto
// it, which writes replication.cfg.
func (s *backend) jobsOnNodeLocked(db *core.ConfigDB, node string) []*replication.Job {
	jobs, _ := s.ReplJobsLocked(db)
	out, switched := replication.OnNode(jobs, node, func(g int) (string, bool) {
		e, ok := s.FindVMLocked(db, g)
		return e.Node, ok
	})
	if switched {
		s.WriteReplJobsLocked(db, jobs)
		s.SaveLocked()
	}
	return out
}

// GET /nodes/{node}/replication
func (s *backend) getNodeReplication(rc *core.Req) (any, error) {
	db := rc.DB()
	out := []map[string]any{}
	for _, j := range s.jobsOnNodeLocked(db, rc.Node) {
		g := replication.Guest(j.ID)
		if rc.Has("guest") && rc.Str("guest") != strconv.Itoa(g) {
			continue
		}
		if !core.HasPriv(db, rc.Who, fmt.Sprintf("/vms/%d", g), []string{"VM.Audit"}, false) {
			continue
		}
		out = append(out, s.replStatusView(rc.Node, j))
	}
	return out, nil
}

// GET /nodes/{node}/replication/{id}/status
func (s *backend) getNodeReplicationStatus(rc *core.Req) (any, error) {
	db := rc.DB()
	for _, j := range s.jobsOnNodeLocked(db, rc.Node) {
		if j.ID == rc.Str("id") {
			return s.replStatusView(rc.Node, j), nil
		}
	}
	return nil, pvecommon.Die("no such replication job '%s'", rc.Str("id"))
}

// GET /nodes/{node}/replication/{id}/log
func (s *backend) getNodeReplicationLog(rc *core.Req) (any, error) {
	db := rc.DB()
	jobs, _ := s.ReplJobsLocked(db)
	if replication.Find(jobs, rc.Str("id")) == nil {
		return nil, pvecommon.Die("no such replication job '%s'", rc.Str("id"))
	}
	var log []string
	if run := s.State.Nodes[rc.Node].Replication[rc.Str("id")]; run != nil {
		log = run.Log
	}
	return replication.LogPage(log, rc.Int("start", 0), rc.Int("limit", 50)), nil
}

// POST /nodes/{node}/replication/{id}/schedule_now: the next scheduler
// round runs it (schedule_job_now). The schema says string and PVE returns
// whatever the state write returned; the lab answers "" (reconstruction).
func (s *backend) postReplicationScheduleNow(rc *core.Req) (any, error) {
	db := rc.DB()
	id := rc.Str("id")
	if _, err := s.replJobGuest(rc, db, id); err != nil {
		return nil, err
	}
	jobs, _ := s.ReplJobsLocked(db)
	if replication.Find(jobs, id) == nil {
		return nil, pvecommon.Die("no such replication job '%s'", id)
	}
	s.replRunLocked(rc.Node, id).ScheduleNow()
	s.SaveLocked()
	return "", nil
}

// ctlRun serves POST /v1/nodes/{node}/replication/run {"id"}
// (`pvesr run`): {"log": [...]}, or 409 with the pvesr.lck timeout (H5).
func (s *backend) ctlRun(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ID string `json:"id"`
	}
	if !core.ControlDecode(w, r, &body) {
		return
	}
	lines, err := s.run(r.PathValue("node"), body.ID)
	if lines == nil {
		lines = []string{}
	}
	core.ControlResult(w, map[string]any{"log": lines}, err)
}
