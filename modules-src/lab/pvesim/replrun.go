package pvesim

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Replication runs, as the source node's pvescheduler does them through
// pvesr (pve-manager PVE/API2/Replication.pm, pve-guest-common
// Replication.pm / ReplicationState.pm), simplified: a job runs
// ReplicationInterval after it is created or scheduled now, then every
// N×ReplicationInterval for a "*/N" schedule (one interval stands for PVE's
// minute; other calendar forms count as */15 — reconstruction). A run takes
// TaskDuration, copies the guest's ZFS volumes to the target node (the
// replica a recovery needs, H8) and records last_sync/duration; a target
// that is down fails it (fail_count, error). Runs are node-local state.

// ReplRun is one job's state on its source node.
type ReplRun struct {
	LastSync  int64    `json:"last_sync"`
	LastTry   int64    `json:"last_try"`
	Duration  float64  `json:"duration"`
	FailCount int      `json:"fail_count"`
	Error     string   `json:"error,omitempty"`
	NextSync  int64    `json:"next_sync"`
	Running   bool     `json:"running,omitempty"`
	Log       []string `json:"log,omitempty"`
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

// scheduleReplRunLocked runs job id of db after d, on the node then
// holding its guest.
// A newer schedule (schedule_now, a new job) replaces the job's chain.
func (s *Sim) scheduleReplRunLocked(dbID, id string, d time.Duration) {
	if s.replGen == nil {
		s.replGen = map[string]int{}
	}
	key := dbID + "/" + id
	s.replGen[key]++
	gen := s.replGen[key]
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if !s.sleep(d) {
			return
		}
		s.runReplicationJob(dbID, id, gen)
	}()
}

func (s *Sim) runReplicationJob(dbID, id string, gen int) {
	s.mu.Lock()
	if s.replGen[dbID+"/"+id] != gen {
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.syncJob(dbID, id, false)
}

// syncJob runs one job now; haveLock says the caller already holds the
// source's pvesr lock (pvesr run), else the scheduler takes it or skips.
func (s *Sim) syncJob(dbID, id string, haveLock bool) {
	s.mu.Lock()
	db := s.st.DBs[dbID]
	if db == nil {
		s.mu.Unlock()
		return
	}
	list, _ := s.readSectionsLocked(db, replicationCfg)
	job := findSection(list, id)
	guest, _ := parseReplID(id)
	e, ok := s.findVMLocked(db, guest)
	if job == nil || !ok || job.Opts["remove_job"] != "" {
		s.mu.Unlock()
		return // the job is gone: its chain ends
	}
	every := time.Duration(scheduleEvery(job.Opts["schedule"])) * s.cfg.dur(s.cfg.ReplicationInterval, time.Minute)
	src, target := e.Node, job.Opts["target"]
	if !s.nodeUpLocked(src) || job.Opts["disable"] == "1" || target == src {
		s.scheduleReplRunLocked(dbID, id, every) // nothing runs there now; try next round
		s.mu.Unlock()
		return
	}
	run := s.replRunLocked(src, id)
	if run.Running {
		s.mu.Unlock()
		return
	}
	// The scheduler's pvesr takes /var/lock/pvesr.lck for the run; while
	// someone else holds it (a `pvesr run`), this round is skipped (H5).
	lock := pvesrLockKey(src)
	if !haveLock && !s.tryLockLocked(lock, false) {
		s.scheduleReplRunLocked(dbID, id, every)
		s.mu.Unlock()
		return
	}
	start := time.Now()
	run.Running, run.LastTry = true, start.Unix()
	stamp := func() string { return time.Now().Format("2006-01-02 15:04:05") }
	run.Log = []string{stamp() + " " + id + ": start replication job", stamp() + " " + id + ": guest => VM " + strconv.Itoa(guest)}
	s.saveLocked()
	s.mu.Unlock()

	alive := s.sleep(s.cfg.dur(s.cfg.TaskDuration, DefaultTaskDuration))

	s.mu.Lock()
	defer s.mu.Unlock()
	if !haveLock {
		s.unlockLocked(lock, false)
	}
	run.Running = false
	if !alive {
		return
	}
	defer func() {
		run.Duration = float64(time.Since(start).Milliseconds()) / 1000
		s.saveLocked()
		s.scheduleReplRunLocked(dbID, id, every)
	}()
	if !s.nodeUpLocked(target) {
		run.FailCount++
		// reconstruction: the ssh to a powered-off target fails like this
		run.Error = fmt.Sprintf("command '/usr/bin/ssh -e none -o 'BatchMode=yes' -o 'HostKeyAlias=%s' root@%s -- pvesr prepare-local-job %s' failed: exit code 255", target, s.st.Nodes[target].Addr, id)
		run.Log = append(run.Log, stamp()+" "+id+": end replication job with error: "+run.Error)
		run.NextSync = time.Now().Unix() + int64(5*run.FailCount*60)
		return
	}
	var conf *qmConf
	raw, _ := s.readEtcPve(db, guestConfPath(src, e.Kind, guest))
	conf = parseQmConf(raw)
	vols, err := s.replicatableVolumes(src, guest, conf)
	if err != nil {
		run.FailCount++
		run.Error = err.Error()
		return
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
	run.NextSync = start.Add(every).Unix()
	run.Log = append(run.Log, stamp()+" "+id+": end replication job")
}

// pvesrLockKey is /var/lock/pvesr.lck on node.
func pvesrLockKey(node string) string { return node + ":/var/lock/pvesr.lck" }

// RunReplication is `pvesr run [--id ID]` on node: it takes
// /var/lock/pvesr.lck (waiting LockTimeout, PVE: 60 s, then "can't lock
// file '/var/lock/pvesr.lck' - got timeout", H5) and syncs the node's jobs
// (or one) in the foreground; the lines are what --verbose prints.
func (s *Sim) RunReplication(node, id string) ([]string, error) {
	s.mu.Lock()
	n := s.st.Nodes[node]
	if n == nil {
		s.mu.Unlock()
		return nil, &NotFoundError{Msg: fmt.Sprintf("no node %q in this lab", node)}
	}
	db := s.dbOf(node)
	var ids []string
	for _, j := range s.jobsOnNodeLocked(db, node) {
		if id == "" || j.ID == id {
			ids = append(ids, j.ID)
		}
	}
	if id != "" && len(ids) == 0 {
		s.mu.Unlock()
		return nil, &BadRequestError{Msg: fmt.Sprintf("no such job '%s'", id)}
	}
	s.mu.Unlock()
	lock := pvesrLockKey(node)
	if !s.acquire(lock, false, s.cfg.dur(s.cfg.LockTimeout, DefaultLockTimeout)) {
		return nil, &ConflictError{Msg: "can't lock file '/var/lock/pvesr.lck' - got timeout"}
	}
	defer s.release(lock, false)
	var out []string
	for _, jid := range ids {
		s.syncJob(db.ID, jid, true)
		s.mu.Lock()
		if r := s.st.Nodes[node].Replication[jid]; r != nil {
			out = append(out, r.Log...)
		}
		s.mu.Unlock()
	}
	return out, nil
}

// replStatusView is $extract_job_status: the job's config plus its state.
func (s *Sim) replStatusView(node string, sec *section) map[string]any {
	v := replView(sec, "")
	delete(v, "digest")
	run := s.st.Nodes[node].Replication[sec.ID]
	if run == nil {
		v["fail_count"], v["last_sync"], v["last_try"], v["next_sync"] = 0, 0, 0, 0
		return v
	}
	v["last_sync"], v["last_try"], v["fail_count"], v["next_sync"] = run.LastSync, run.LastTry, run.FailCount, run.NextSync
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

// jobsOnNodeLocked is job_status: jobs whose guest is on node.
func (s *Sim) jobsOnNodeLocked(db *ConfigDB, node string) []*section {
	list, _ := s.readSectionsLocked(db, replicationCfg)
	var out []*section
	for _, j := range list {
		g, _ := parseReplID(j.ID)
		if e, ok := s.findVMLocked(db, g); ok && e.Node == node && (j.Opts["target"] != node || j.Opts["remove_job"] != "") {
			out = append(out, j)
		}
	}
	return out
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
	s.replRunLocked(rc.node, id).NextSync = 0
	s.scheduleReplRunLocked(db.ID, id, s.cfg.dur(s.cfg.ReplicationInterval, time.Minute))
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
			d := parseDrive(c.Keys[k])
			if d.cdrom() && !d.cloudinit() {
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
