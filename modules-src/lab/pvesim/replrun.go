package pvesim

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Replication runs, as pvescheduler and pvesr do them (pve-manager
// PVE/Service/pvescheduler.pm, PVE/API2/Replication.pm run_jobs;
// pve-guest-common ReplicationState.pm job_status / get_next_job,
// Replication.pm run_replication): every ReplicationInterval (PVE: a
// minute) each node's scheduler runs pvesr under /var/lock/pvesr.lck, and
// that run works through every due job of the guests on the node, one after
// another. A job is due at its schedule's next event after its last try (a
// new job has none, so it is due at once), after a failure 5, 10, 15, then
// 30 minutes after the last try — and not at all while the target is
// offline —, and a job marked for removal at once. job_status also fixes
// the jobs of a guest stolen by HA recovery: a job whose source is not the
// node holding the guest gets source and target switched
// (switch_replication_job_target_nolock), so a client that treats target as
// fixed sees it change until failback. A run takes TaskDuration, copies the
// guest's ZFS volumes to the target (the replica a recovery needs, H8) and
// records last_sync/duration; a target that is down fails it. Calendar
// events count the lab's minutes (ReplicationInterval); only "*/N" and
// plain minute schedules are parsed, others count as */15
// (reconstruction). Runs are node-local state.

// ReplRun is one job's state on its source node.
type ReplRun struct {
	LastSync  int64   `json:"last_sync"`
	LastTry   int64   `json:"last_try"`
	Duration  float64 `json:"duration"`
	FailCount int     `json:"fail_count"`
	Error     string  `json:"error,omitempty"`
	// LastTryMilli is LastTry to the millisecond (lab minutes may be short).
	LastTryMilli int64    `json:"last_try_ms,omitempty"`
	Running      bool     `json:"running,omitempty"`
	Log          []string `json:"log,omitempty"`
}

func (s *Sim) replRunLocked(node, id string) *ReplRun {
	n := s.st.Nodes[node]
	if n.Replication == nil {
		n.Replication = map[string]*ReplRun{}
	}
	r := n.Replication[id]
	if r == nil {
		r = &ReplRun{}
		n.Replication[id] = r
	}
	return r
}

func scheduleEvery(schedule string) int {
	if n, err := strconv.Atoi(strings.TrimPrefix(schedule, "*/")); err == nil && strings.HasPrefix(schedule, "*/") && n > 0 {
		return n
	}
	return 15
}

// replMinute is the lab's replication minute; "none" (negative) is made a
// few milliseconds so the scheduler loop does not spin.
func (s *Sim) replMinute() time.Duration {
	return max(s.cfg.dur(s.cfg.ReplicationInterval, time.Minute), 10*time.Millisecond)
}

// nextEvent is compute_next_event for a "*/N" schedule on the lab's clock:
// the first multiple of N lab minutes after last (Unix ms).
func (s *Sim) nextEvent(schedule string, lastMs int64) int64 {
	minute := s.replMinute().Milliseconds()
	if minute <= 0 {
		minute = 1
	}
	n := int64(scheduleEvery(schedule))
	m := lastMs/minute + 1
	next := (m + n - 1) / n * n
	return next * minute
}

// nextSyncLocked is job_status's next_sync for a job on node (Unix ms,
// 0 = not scheduled).
func (s *Sim) nextSyncLocked(node string, job *section) int64 {
	if job.Opts["remove_job"] != "" {
		return 1
	}
	run := s.st.Nodes[node].Replication[job.ID]
	if run == nil {
		return s.nextEvent(job.Opts["schedule"], 0)
	}
	if run.FailCount > 0 {
		if !s.nodeUpLocked(job.Opts["target"]) {
			return 0
		}
		wait := int64(30)
		if run.FailCount <= 3 {
			wait = int64(5 * run.FailCount)
		}
		return run.LastTryMs() + wait*s.replMinute().Milliseconds()
	}
	return s.nextEvent(job.Opts["schedule"], run.LastTryMs())
}

// LastTryMs is the last try in Unix milliseconds (the lab's minutes can be
// shorter than a second in tests).
func (r *ReplRun) LastTryMs() int64 {
	if r.LastTryMilli != 0 {
		return r.LastTryMilli
	}
	return r.LastTry * 1000
}

// replicationSchedulerLoop is every node's pvescheduler: a pvesr run at
// each lab minute boundary on every node that is up.
func (s *Sim) replicationSchedulerLoop() {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			minute := s.replMinute()
			wait := minute - time.Duration(time.Now().UnixNano()%int64(minute))
			if !s.sleep(wait) {
				return
			}
			s.mu.Lock()
			var nodes []string
			for _, n := range s.sortedNodeNamesLocked() {
				if s.nodeUpLocked(n) {
					nodes = append(nodes, n)
				}
			}
			s.mu.Unlock()
			for _, n := range nodes {
				s.wg.Add(1)
				go func() {
					defer s.wg.Done()
					// The scheduler's pvesr takes /var/lock/pvesr.lck; while
					// someone else holds it (a `pvesr run`), this minute is
					// skipped (reconstruction; H5).
					s.mu.Lock()
					lock := pvesrLockKey(n)
					ok := s.tryLockLocked(lock, false)
					s.mu.Unlock()
					if !ok {
						return
					}
					s.runDueJobs(n, "")
					s.mu.Lock()
					s.unlockLocked(lock, false)
					s.mu.Unlock()
				}()
			}
		}
	}()
}

// runDueJobs is run_jobs on node (the caller holds pvesr.lck): every job
// that is due now runs once, in get_next_job's order (next_sync, guest,
// id); with only set, that job runs whether due or not (pvesr run --id).
func (s *Sim) runDueJobs(node, only string) []string {
	start := time.Now().UnixMilli()
	done := map[string]bool{}
	var log []string
	for {
		s.mu.Lock()
		n := s.st.Nodes[node]
		if n == nil || !s.nodeUpLocked(node) {
			s.mu.Unlock()
			return log
		}
		db := s.dbOf(node)
		var next *section
		var nextAt int64
		for _, j := range s.jobsOnNodeLocked(db, node) {
			if done[j.ID] || only != "" && j.ID != only {
				continue
			}
			if only == "" && j.Opts["disable"] == "1" && j.Opts["remove_job"] == "" {
				continue // job_status without get_disabled
			}
			at := s.nextSyncLocked(node, j)
			if only == "" && (at == 0 || at > start) {
				continue
			}
			g, _ := parseReplID(j.ID)
			if next == nil || at < nextAt || at == nextAt && g < mustGuest(next.ID) || at == nextAt && g == mustGuest(next.ID) && j.ID < next.ID {
				next, nextAt = j, at
			}
		}
		s.mu.Unlock()
		if next == nil {
			return log
		}
		done[next.ID] = true
		log = append(log, s.syncJob(db.ID, node, next.ID)...)
	}
}

func mustGuest(id string) int { g, _ := parseReplID(id); return g }

// syncJob runs one job of node now (run_replication under pvesr.lck) and
// returns its log.
func (s *Sim) syncJob(dbID, src, id string) []string {
	// run_replication takes the guest's migration lock with a 2 s timeout
	// before anything is recorded (pve-guest-common Replication.pm
	// run_replication → guest_migration_lock, then $run_replication_nolock
	// → record_job_start). Not obtained (a migration or a snapshot
	// rollback holds it), the run dies before the state is touched:
	// run_jobs only warns ("got unexpected replication job error", journal;
	// pve-manager API2/Replication.pm _handle_job_err), so the job's
	// status keeps its fail_count, error and last_try — contention is
	// never a job's error (H5) — and it stays due for the next run.
	if g, err := parseReplID(id); err == nil {
		mig := migrationLockKey(src, g)
		if !s.acquire(mig, false, min(2*time.Second, s.cfg.dur(s.cfg.LockTimeout, DefaultLockTimeout))) {
			s.mu.Lock()
			s.replSkipped = append(s.replSkipped, fmt.Sprintf("%s: got unexpected replication job error - %v", id, errLockTimeout(migrationLockFile(g))))
			s.mu.Unlock()
			return nil
		}
		defer s.release(mig, false)
	}
	s.mu.Lock()
	db := s.st.DBs[dbID]
	if db == nil {
		s.mu.Unlock()
		return nil
	}
	list, _ := s.readSectionsLocked(db, replicationCfg)
	job := findSection(list, id)
	guest, _ := parseReplID(id)
	e, ok := s.findVMLocked(db, guest)
	if job == nil || !ok || e.Node != src {
		s.mu.Unlock()
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
		if t := job.Opts["target"]; job.Opts["remove_job"] == "full" && t != src && !s.nodeUpLocked(t) {
			run := s.replRunLocked(src, id)
			now := time.Now()
			run.LastTry, run.LastTryMilli, run.FailCount = now.Unix(), now.UnixMilli(), run.FailCount+1
			// reconstruction: the ssh to a powered-off target fails like this
			run.Error = fmt.Sprintf("command '/usr/bin/ssh -e none -o 'BatchMode=yes' -o 'HostKeyAlias=%s' root@%s -- pvesr prepare-local-job %s --scan %s --force' failed: exit code 255",
				t, s.st.Nodes[t].Addr, id, strings.Join(s.replStoragesLocked(db, e, src, guest), ","))
			s.saveLocked()
			s.mu.Unlock()
			return nil
		}
		if job.Opts["remove_job"] == "full" && s.nodeUpLocked(job.Opts["target"]) {
			if c := s.guestConfLocked(db, e); c != nil {
				if vols, err := s.replicatableVolumes(src, guest, c); err == nil {
					for _, v := range vols {
						delete(s.st.Nodes[job.Opts["target"]].Volumes, v)
					}
				}
			}
		}
		list = slices.DeleteFunc(list, func(j *section) bool { return j.ID == id })
		s.writeSectionsLocked(db, replicationCfg, list)
		delete(s.st.Nodes[src].Replication, id)
		s.saveLocked()
		s.mu.Unlock()
		return nil
	}
	target := job.Opts["target"]
	run := s.replRunLocked(src, id)
	start := time.Now()
	run.Running, run.LastTry, run.LastTryMilli = true, start.Unix(), start.UnixMilli()
	stamp := func() string { return time.Now().Format("2006-01-02 15:04:05") }
	run.Log = []string{stamp() + " " + id + ": start replication job", stamp() + " " + id + ": guest => VM " + strconv.Itoa(guest)}
	s.saveLocked()
	s.mu.Unlock()

	alive := s.sleep(s.cfg.dur(s.cfg.TaskDuration, DefaultTaskDuration))

	s.mu.Lock()
	defer s.mu.Unlock()
	run.Running = false
	if !alive {
		return run.Log
	}
	defer func() {
		run.Duration = float64(time.Since(start).Milliseconds()) / 1000
		s.saveLocked()
	}()
	fail := func(msg string) []string {
		run.FailCount++
		run.Error = msg
		run.Log = append(run.Log, stamp()+" "+id+": end replication job with error: "+msg)
		return run.Log
	}
	if !s.nodeUpLocked(target) {
		// reconstruction: the ssh to a powered-off target fails like this
		return fail(fmt.Sprintf("command '/usr/bin/ssh -e none -o 'BatchMode=yes' -o 'HostKeyAlias=%s' root@%s -- pvesr prepare-local-job %s' failed: exit code 255", target, s.st.Nodes[target].Addr, id))
	}
	conf := s.guestConfLocked(db, e)
	if conf == nil {
		return fail(fmt.Sprintf("guest %d has no config", guest)) // reconstruction
	}
	vols, err := s.replicatableVolumes(src, guest, conf)
	if err != nil {
		return fail(err.Error())
	}
	run.Log = append(run.Log, stamp()+" "+id+": volumes => "+strings.Join(vols, ","))
	tn := s.st.Nodes[target]
	if tn.Volumes == nil {
		tn.Volumes = map[string]*GuestVolume{}
	}
	for _, v := range vols {
		if sv := s.st.Nodes[src].Volumes[v]; sv != nil {
			c := *sv
			tn.Volumes[v] = &c
		}
		kind := "full"
		if run.LastSync > 0 {
			kind = "incremental"
		}
		run.Log = append(run.Log, fmt.Sprintf("%s %s: %s sync '%s' (__replicate_%s_%d__)", stamp(), id, kind, v, id, start.Unix()))
	}
	run.LastSync, run.FailCount, run.Error = start.Unix(), 0, ""
	run.Log = append(run.Log, stamp()+" "+id+": end replication job")
	return run.Log
}

// replStoragesLocked lists the storages of a guest's replicated volumes.
func (s *Sim) replStoragesLocked(db *ConfigDB, e vmEntry, src string, guest int) []string {
	var out []string
	if c := s.guestConfLocked(db, e); c != nil {
		if vols, err := s.replicatableVolumes(src, guest, c); err == nil {
			for _, v := range vols {
				if st, _, ok := volumeID(v); ok && !slices.Contains(out, st) {
					out = append(out, st)
				}
			}
		}
	}
	return out
}

// guestConfLocked reads a guest's config wherever it is, VM or CT.
func (s *Sim) guestConfLocked(db *ConfigDB, e vmEntry) *qmConf {
	raw, ok := s.readEtcPve(db, guestConfPath(e.Node, e.Kind, e.VMID))
	if !ok {
		return nil
	}
	return parseQmConf(raw)
}

// migrationLockKey is /var/lock/pve-manager/pve-migrate-<vmid> on node
// (pve-guest-common GuestHelpers.pm guest_migration_lock), a local flock.
func migrationLockKey(node string, vmid int) string { return node + ":" + migrationLockFile(vmid) }

func migrationLockFile(vmid int) string {
	return fmt.Sprintf("/var/lock/pve-manager/pve-migrate-%d", vmid)
}

// ReplicationWarnings are the lines pvesr's runs wrote to the journal for
// jobs they could not even start (the migration lock busy), oldest first.
func (s *Sim) ReplicationWarnings() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.replSkipped)
}

// pvesrLockKey is /var/lock/pvesr.lck on node.
func pvesrLockKey(node string) string { return node + ":/var/lock/pvesr.lck" }

// RunReplication is `pvesr run [--id ID]` on node: it takes
// /var/lock/pvesr.lck (waiting LockTimeout, PVE: 60 s, then "can't lock
// file '/var/lock/pvesr.lck' - got timeout", H5) and runs the node's due
// jobs (or the one named, due or not) in the foreground; the lines are
// what --verbose prints.
func (s *Sim) RunReplication(node, id string) ([]string, error) {
	s.mu.Lock()
	n := s.st.Nodes[node]
	if n == nil {
		s.mu.Unlock()
		return nil, &NotFoundError{Msg: fmt.Sprintf("no node %q in this lab", node)}
	}
	if id != "" {
		found := false
		for _, j := range s.jobsOnNodeLocked(s.dbOf(node), node) {
			found = found || j.ID == id
		}
		if !found {
			s.mu.Unlock()
			return nil, &BadRequestError{Msg: fmt.Sprintf("no such job '%s'", id)}
		}
	}
	s.mu.Unlock()
	lock := pvesrLockKey(node)
	if !s.acquire(lock, false, s.cfg.dur(s.cfg.LockTimeout, DefaultLockTimeout)) {
		return nil, &ConflictError{Msg: "can't lock file '/var/lock/pvesr.lck' - got timeout"}
	}
	defer s.release(lock, false)
	return s.runDueJobs(node, id), nil
}

// replStatusView is $extract_job_status: the job's config plus its state.
func (s *Sim) replStatusView(node string, sec *section) map[string]any {
	v := replView(sec, "")
	delete(v, "digest")
	if g, _ := parseReplID(sec.ID); g > 0 {
		if e, ok := s.findVMLocked(s.dbOf(node), g); ok {
			v["vmtype"] = map[string]string{"qemu-server": "qemu", "lxc": "lxc"}[e.Kind] // job_status: the vmlist's type
		}
	}
	v["next_sync"] = (s.nextSyncLocked(node, sec) + 999) / 1000
	run := s.st.Nodes[node].Replication[sec.ID]
	if run == nil {
		v["fail_count"], v["last_sync"], v["last_try"] = 0, 0, 0
		return v
	}
	v["last_sync"], v["last_try"], v["fail_count"] = run.LastSync, run.LastTry, run.FailCount
	if run.Duration > 0 {
		v["duration"] = run.Duration
	}
	if run.Error != "" {
		v["error"] = run.Error
	}
	if run.Running {
		v["pid"] = 20000 + len(sec.ID)
	}
	return v
}

// jobsOnNodeLocked is job_status: the jobs whose guest is on node (never
// one to the node itself, unless marked for removal). A job whose source is
// another node belongs to a guest HA stole: its jobs are switched first.
func (s *Sim) jobsOnNodeLocked(db *ConfigDB, node string) []*section {
	list, _ := s.readSectionsLocked(db, replicationCfg)
	for _, j := range list {
		g, _ := parseReplID(j.ID)
		if e, ok := s.findVMLocked(db, g); ok && e.Node == node && j.Opts["source"] != "" && j.Opts["source"] != node {
			s.switchReplicationLocked(db, g, node, j.Opts["source"])
			list, _ = s.readSectionsLocked(db, replicationCfg)
		}
	}
	var out []*section
	for _, j := range list {
		g, _ := parseReplID(j.ID)
		if e, ok := s.findVMLocked(db, g); ok && e.Node == node && (j.Opts["target"] != node || j.Opts["remove_job"] != "") {
			out = append(out, j)
		}
	}
	return out
}

// switchReplicationLocked is ReplicationConfig.pm
// switch_replication_job_target_nolock($vmid, $old_target, $new_target):
// every job of the guest gets source old; the one that targeted old now
// targets new. HA's stolen guest (job_status) passes (its node, the old
// source); a migration (AbstractMigrate.pm) (target, source).
func (s *Sim) switchReplicationLocked(db *ConfigDB, vmid int, oldTarget, newTarget string) {
	list, _ := s.readSectionsLocked(db, replicationCfg)
	changed := false
	for _, j := range list {
		if g, _ := parseReplID(j.ID); g != vmid || j.Type != "local" {
			continue
		}
		if j.Opts["target"] == oldTarget {
			j.Opts["target"] = newTarget
		}
		j.Opts["source"] = oldTarget
		changed = true
	}
	if changed {
		s.writeSectionsLocked(db, replicationCfg, list)
		s.saveLocked()
	}
}

// GET /nodes/{node}/replication
func (s *Sim) getNodeReplication(rc *reqCtx) (any, error) {
	db := rc.db()
	out := []map[string]any{}
	for _, j := range s.jobsOnNodeLocked(db, rc.node) {
		g, _ := parseReplID(j.ID)
		if rc.has("guest") && rc.str("guest") != strconv.Itoa(g) {
			continue
		}
		if !hasPriv(db, rc.who, fmt.Sprintf("/vms/%d", g), []string{"VM.Audit"}, false) {
			continue
		}
		out = append(out, s.replStatusView(rc.node, j))
	}
	return out, nil
}

// GET /nodes/{node}/replication/{id}/status
func (s *Sim) getNodeReplicationStatus(rc *reqCtx) (any, error) {
	db := rc.db()
	for _, j := range s.jobsOnNodeLocked(db, rc.node) {
		if j.ID == rc.str("id") {
			return s.replStatusView(rc.node, j), nil
		}
	}
	return nil, pveDie("no such replication job '%s'", rc.str("id"))
}

// GET /nodes/{node}/replication/{id}/log
func (s *Sim) getNodeReplicationLog(rc *reqCtx) (any, error) {
	db := rc.db()
	list, _ := s.readSectionsLocked(db, replicationCfg)
	if findSection(list, rc.str("id")) == nil {
		return nil, pveDie("no such replication job '%s'", rc.str("id"))
	}
	out := []map[string]any{}
	if run := s.st.Nodes[rc.node].Replication[rc.str("id")]; run != nil {
		start, limit := rc.integer("start", 0), rc.integer("limit", 50)
		for i, l := range run.Log {
			if i >= start && len(out) < limit {
				out = append(out, map[string]any{"n": i + 1, "t": l})
			}
		}
	}
	return out, nil
}

// POST /nodes/{node}/replication/{id}/schedule_now: the next scheduler
// round runs it (schedule_job_now). The schema says string and PVE returns
// whatever the state write returned; the lab answers "" (reconstruction).
func (s *Sim) postReplicationScheduleNow(rc *reqCtx) (any, error) {
	db := rc.db()
	id := rc.str("id")
	if _, err := replJobGuest(rc, db, id); err != nil {
		return nil, err
	}
	list, _ := s.readSectionsLocked(db, replicationCfg)
	if findSection(list, id) == nil {
		return nil, pveDie("no such replication job '%s'", id)
	}
	// schedule_job_now: last_try 0, so the next scheduler run finds it due.
	run := s.replRunLocked(rc.node, id)
	run.LastTry, run.LastTryMilli = 0, 0
	s.saveLocked()
	return "", nil
}

// missingVolumesLocked lists a guest's local volumes absent on node (a
// recovery without a replica cannot start it, H8).
func (s *Sim) missingVolumesLocked(db *ConfigDB, e vmEntry, node string) []string {
	raw, _ := s.readEtcPve(db, guestConfPath(e.Node, e.Kind, e.VMID))
	c := parseQmConf(raw)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(c.Keys)) {
		var file string
		switch {
		case isDriveKey(k):
			// A cdrom, cloud-init's included, is never replicated
			// (QemuConfig.pm get_replicatable_volumes skips cdrom): a
			// recovered VM gets a fresh cloud-init drive at start.
			d := parseDrive(c.Keys[k])
			if d.cdrom() || d.cloudinit() {
				continue
			}
			file = d.file()
		case ctVolKeyRe.MatchString(k):
			file = parseProps(c.Keys[k], "volume").get("volume")
		default:
			continue
		}
		store, _, ok := volumeID(file)
		st := db.Storage[store]
		if !ok || st == nil || st.shared() {
			continue
		}
		if s.st.Nodes[node].Volumes[file] == nil {
			out = append(out, file)
		}
	}
	return out
}
