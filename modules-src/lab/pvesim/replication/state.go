package replication

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// State is one job's state on its source node, ReplicationState.pm's
// entry of pve-replication-state.json; the simulator keeps it in
// state.json (nodes.*.replication, keyed by job id).
type State struct {
	LastSync  int64   `json:"last_sync"`
	LastTry   int64   `json:"last_try"`
	Duration  float64 `json:"duration"`
	FailCount int     `json:"fail_count"`
	Error     string  `json:"error,omitempty"`
	// LastTryMilli is LastTry to the millisecond (lab minutes may be short).
	LastTryMilli int64 `json:"last_try_ms,omitempty"`
	// Running is a run's process alive (PVE: the state's pid and ptime).
	Running bool     `json:"running,omitempty"`
	Log     []string `json:"log,omitempty"`
}

// LastTryMs is the last try in Unix milliseconds (the lab's minutes can be
// shorter than a second in tests).
func (r *State) LastTryMs() int64 {
	if r.LastTryMilli != 0 {
		return r.LastTryMilli
	}
	return r.LastTry * 1000
}

// logTime is the time stamp of a replication log line.
func logTime(t time.Time) string { return t.Format("2006-01-02 15:04:05") }

// Begin is record_job_start for a sync of job id (guest's) starting now:
// the run's process lives, last_try is now; fail_count and error stay
// until the run ends. The log starts anew.
func (r *State) Begin(id string, guest int, now time.Time) {
	r.Running, r.LastTry, r.LastTryMilli = true, now.Unix(), now.UnixMilli()
	r.Log = []string{logTime(now) + " " + id + ": start replication job", logTime(now) + " " + id + ": guest => VM " + strconv.Itoa(guest)}
}

// Logf adds a line of job id to the run's log.
func (r *State) Logf(id string, now time.Time, format string, args ...any) {
	r.Log = append(r.Log, logTime(now)+" "+id+": "+fmt.Sprintf(format, args...))
}

// LogSync logs the send of one volume, full for a job never synced, else
// incremental, with the snapshot the run takes
// (ReplicationState.pm replication_snapshot_name).
func (r *State) LogSync(id, volume string, start, now time.Time) {
	kind := "full"
	if r.LastSync > 0 {
		kind = "incremental"
	}
	r.Logf(id, now, "%s sync '%s' (__replicate_%s_%d__)", kind, volume, id, start.Unix())
}

// Failed is record_job_end with an error: fail_count counts it, error
// holds it, last_sync stays (the replica is the old one).
func (r *State) Failed(id, msg string, now time.Time) {
	r.FailCount++
	r.Error = msg
	r.Logf(id, now, "end replication job with error: %s", msg)
}

// Synced is record_job_end without an error: last_sync is the run's
// start, fail_count and error are cleared.
func (r *State) Synced(id string, start, now time.Time) {
	r.LastSync, r.FailCount, r.Error = start.Unix(), 0, ""
	r.Logf(id, now, "end replication job")
}

// RemovalFailed records a removal run that died before it began (the
// target, which must drop its replica first, unreachable): a try and a
// failure, no log.
func (r *State) RemovalFailed(msg string, now time.Time) {
	r.LastTry, r.LastTryMilli, r.FailCount = now.Unix(), now.UnixMilli(), r.FailCount+1
	r.Error = msg
}

// ScheduleNow is schedule_job_now: last_try 0, so the next run finds the
// job due.
func (r *State) ScheduleNow() { r.LastTry, r.LastTryMilli = 0, 0 }

// PrepareFailed is the error of a run whose ssh to a powered-off target
// fails (pvesr prepare-local-job on the target, with args such as
// "--scan tank --force"; reconstruction of ssh's exit code 255).
func PrepareFailed(target, addr, id, args string) string {
	cmd := "pvesr prepare-local-job " + id
	if args != "" {
		cmd += " " + args
	}
	return fmt.Sprintf("command '/usr/bin/ssh -e none -o 'BatchMode=yes' -o 'HostKeyAlias=%s' root@%s -- %s' failed: exit code 255", target, addr, cmd)
}

// LogPage is a page of a run's log as read_job_log answers it: lines
// numbered from 1, from start, at most limit.
func LogPage(log []string, start, limit int) []map[string]any {
	out := []map[string]any{}
	for i, l := range log {
		if i >= start && len(out) < limit {
			out = append(out, map[string]any{"n": i + 1, "t": l})
		}
	}
	return out
}

// PvesrLock is the lock every pvesr run takes on its node
// (API2/Replication.pm $pvesr_lock_path).
const PvesrLock = "/var/lock/pvesr.lck"

// MigrationLockFile is the guest's migration lock (pve-guest-common
// GuestHelpers.pm guest_migration_lock), a local flock a run takes first.
func MigrationLockFile(vmid int) string {
	return fmt.Sprintf("/var/lock/pve-manager/pve-migrate-%d", vmid)
}

// SkippedWarning is the journal line of run_jobs for a job whose run died
// before record_job_start (the migration lock not obtained): only a
// warning, never the job's error (API2/Replication.pm _handle_job_err; H5).
func SkippedWarning(id string, err error) string {
	return fmt.Sprintf("%s: got unexpected replication job error - %v", id, err)
}

// Env is what job_status needs from the simulator for the node whose jobs
// it looks at.
type Env struct {
	// Minute is the lab's replication minute (PVE: a minute).
	Minute time.Duration
	// Online tells whether a node is up (a failed job's target).
	Online func(node string) bool
	// State is a job's state on the node, nil for a job never run there.
	State func(id string) *State
}

// NextSync is job_status's next_sync of j, in Unix milliseconds (0: not
// scheduled): 1 for a job marked for removal; after failures the last try
// plus 5, 10, 15, then 30 minutes, and none while the target is offline;
// else the schedule's next event after the last try (a new job has none,
// so it is due at once).
func (e Env) NextSync(j *Job) int64 {
	if j.Opts["remove_job"] != "" {
		return 1
	}
	run := e.State(j.ID)
	if run == nil {
		return NextEvent(j.Opts["schedule"], 0, e.Minute)
	}
	if run.FailCount > 0 {
		if !e.Online(j.Opts["target"]) {
			return 0
		}
		return run.LastTryMs() + RetryWait(run.FailCount)*e.Minute.Milliseconds()
	}
	return NextEvent(j.Opts["schedule"], run.LastTryMs(), e.Minute)
}

// RetryWait is the minutes job_status waits after fail failed tries.
func RetryWait(fail int) int64 {
	if fail <= 3 {
		return int64(5 * fail)
	}
	return 30
}

// NextJob is get_next_job for a run started at start (Unix ms) over the
// jobs of the node: the due job with the lowest next_sync, then guest,
// then id, skipping the ones this run did already (done: PVE's
// last_iteration) and disabled ones not marked for removal. With only set
// (pvesr run --id) that job is the one, due or not.
func (e Env) NextJob(jobs []*Job, start int64, done map[string]bool, only string) *Job {
	var next *Job
	var nextAt int64
	for _, j := range jobs {
		if done[j.ID] || only != "" && j.ID != only {
			continue
		}
		// job_status without get_disabled skips a disabled job unless it
		// is marked for removal (pve-guest-common ReplicationState.pm:
		// `next if !$jobcfg->{remove_job} && !$get_disabled &&
		// $jobcfg->{disable}`): a disabled job's removal still runs.
		if only == "" && j.Opts["disable"] == "1" && j.Opts["remove_job"] == "" {
			continue
		}
		at := e.NextSync(j)
		if only == "" && (at == 0 || at > start) {
			continue
		}
		if next == nil || at < nextAt || at == nextAt && Guest(j.ID) < Guest(next.ID) ||
			at == nextAt && Guest(j.ID) == Guest(next.ID) && j.ID < next.ID {
			next, nextAt = j, at
		}
	}
	return next
}

// StatusView is $extract_job_status: the job's config plus its state —
// last_sync, last_try, fail_count always, duration and error when set, a
// pid while a run's process lives — with next_sync in seconds and the
// guest's vmtype ("qemu" or "lxc", omitted when empty).
func (e Env) StatusView(j *Job, vmtype string) map[string]any {
	v := View(j, "")
	if vmtype != "" {
		v["vmtype"] = vmtype
	}
	v["next_sync"] = (e.NextSync(j) + 999) / 1000
	run := e.State(j.ID)
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
		v["pid"] = 20000 + len(j.ID)
	}
	return v
}

// ScanArg is the --scan argument of a removal's prepare-local-job: the
// storages of the guest's replicated volumes, in order, each once.
func ScanArg(volumes []string, storageOf func(volid string) (string, bool)) string {
	var out []string
	for _, v := range volumes {
		if st, ok := storageOf(v); ok && !slices.Contains(out, st) {
			out = append(out, st)
		}
	}
	return strings.Join(out, ",")
}
