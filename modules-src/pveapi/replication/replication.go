package replication

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
)

// DefaultSchedule is the schedule of a job that sets none.
const DefaultSchedule = "*/15"

// JobID is a replication job id: guest VMID and job number.
type JobID struct {
	Guest, Num int
}

var jobIDRe = regexp.MustCompile(`^(\d+)-(\d+)$`)

// ParseJobID reads "201-0" as parse_replication_job_id.
func ParseJobID(s string) (JobID, error) {
	m := jobIDRe.FindStringSubmatch(s)
	if m == nil {
		return JobID{}, fmt.Errorf("invalid replication job id '%s'", s)
	}
	g, err1 := strconv.Atoi(m[1])
	n, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil {
		return JobID{}, fmt.Errorf("invalid replication job id '%s'", s)
	}
	if g < 100 {
		return JobID{}, fmt.Errorf("invalid replication job id '%s' (guest IDs < 100 are reserved)", s)
	}
	return JobID{g, n}, nil
}

func (id JobID) String() string { return fmt.Sprintf("%d-%d", id.Guest, id.Num) }

// Job is one job of the replication config.
type Job struct {
	ID        JobID
	Target    string
	Schedule  string // "" = DefaultSchedule
	Rate      float64
	Comment   string
	Disable   bool
	Source    string // set by PVE: the node the job last ran from
	RemoveJob string // "local" or "full" while PVE removes the job
}

type jobRow struct {
	ID        string  `json:"id"`
	Type      string  `json:"type"`
	Target    string  `json:"target"`
	Schedule  string  `json:"schedule"`
	Rate      float64 `json:"rate"`
	Comment   string  `json:"comment"`
	Disable   bool    `json:"disable"`
	Source    string  `json:"source"`
	RemoveJob string  `json:"remove_job"`
}

func (r jobRow) job() (Job, error) {
	id, err := ParseJobID(r.ID)
	if err != nil {
		return Job{}, err
	}
	return Job{ID: id, Target: r.Target, Schedule: r.Schedule, Rate: r.Rate, Comment: r.Comment, Disable: r.Disable,
		Source: r.Source, RemoveJob: r.RemoveJob}, nil
}

// WithDefaults fills what PVE assumes for an unset value, so a job made
// elsewhere compares equal to one asked with the defaults.
func (j Job) WithDefaults() Job {
	if j.Schedule == "" {
		j.Schedule = DefaultSchedule
	}
	return j
}

// Jobs reads every job of the cluster (GET /cluster/replication), sorted by id.
func Jobs(ctx context.Context, g pveapi.Getter) ([]Job, error) {
	var rows []jobRow
	if err := g.Get(ctx, "/cluster/replication", nil, &rows); err != nil {
		return nil, err
	}
	out := make([]Job, 0, len(rows))
	for _, r := range rows {
		j, err := r.job()
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b Job) int {
		if a.ID.Guest != b.ID.Guest {
			return a.ID.Guest - b.ID.Guest
		}
		return a.ID.Num - b.ID.Num
	})
	return out, nil
}

// ForGuest returns the jobs of one guest.
func ForGuest(jobs []Job, vmid int) []Job {
	var out []Job
	for _, j := range jobs {
		if j.ID.Guest == vmid {
			out = append(out, j)
		}
	}
	return out
}

// NextNum is the lowest job number the guest does not use.
func NextNum(jobs []Job, vmid int) int {
	used := map[int]bool{}
	for _, j := range ForGuest(jobs, vmid) {
		used[j.ID.Num] = true
	}
	n := 0
	for used[n] {
		n++
	}
	return n
}

// Create is POST /cluster/replication for a local (ZFS) job.
func Create(j Job) apischema.Request {
	q := url.Values{"id": {j.ID.String()}, "type": {"local"}, "target": {j.Target}}
	if j.Schedule != "" {
		q.Set("schedule", j.Schedule)
	}
	if j.Rate > 0 {
		q.Set("rate", strconv.FormatFloat(j.Rate, 'f', -1, 64))
	}
	if j.Comment != "" {
		q.Set("comment", j.Comment)
	}
	if j.Disable {
		q.Set("disable", "1")
	}
	return apischema.New(http.MethodPost, "/cluster/replication", q)
}

// Update is PUT /cluster/replication/{id}: set is PVE keys to values,
// del the keys to reset to PVE's default (schedule, rate, comment,
// disable). The target cannot change: delete and recreate for that.
func Update(id JobID, set map[string]string, del []string, digest string) apischema.Request {
	q := url.Values{}
	for k, v := range set {
		q.Set(k, v)
	}
	if len(del) > 0 {
		d := slices.Clone(del)
		slices.Sort(d)
		q.Set("delete", strings.Join(d, ","))
	}
	if digest != "" {
		q.Set("digest", digest)
	}
	return apischema.New(http.MethodPut, "/cluster/replication/{id}", q, id.String())
}

// Delete is DELETE /cluster/replication/{id}. PVE only marks the job
// (remove_job); the source node's next replication run removes it, so
// wait until Jobs no longer lists it. keep leaves the replicated volumes
// on the target; force drops the config entry at once without cleanup.
func Delete(id JobID, keep, force bool) apischema.Request {
	q := url.Values{}
	if keep {
		q.Set("keep", "1")
	}
	if force {
		q.Set("force", "1")
	}
	return apischema.New(http.MethodDelete, "/cluster/replication/{id}", q, id.String())
}

// ScheduleNow is POST /nodes/{node}/replication/{id}/schedule_now, on the
// job's source node.
func ScheduleNow(node string, id JobID) apischema.Request {
	return apischema.New(http.MethodPost, "/nodes/{node}/replication/{id}/schedule_now", nil, node, id.String())
}

// Status is a job's state as its source node reports it.
type Status struct {
	ID        JobID
	Guest     int
	Target    string
	Source    string
	Schedule  string
	LastSync  int64 // Unix time of the last good sync; 0 = never (H1: no data yet)
	LastTry   int64
	NextSync  int64
	Duration  float64 // seconds the last run took
	FailCount int
	Error     string // the last failure, "" when the last run went well
	Disable   bool
	RemoveJob string
	// PID is set while a run of the job is in progress (its process
	// lives): pvesr status shows SYNCING.
	PID int
}

type statusRow struct {
	ID        string  `json:"id"`
	Guest     int     `json:"guest"`
	Target    string  `json:"target"`
	Source    string  `json:"source"`
	Schedule  string  `json:"schedule"`
	LastSync  int64   `json:"last_sync"`
	LastTry   int64   `json:"last_try"`
	NextSync  int64   `json:"next_sync"`
	Duration  float64 `json:"duration"`
	FailCount int     `json:"fail_count"`
	Error     string  `json:"error"`
	Disable   bool    `json:"disable"`
	RemoveJob string  `json:"remove_job"`
	PID       int     `json:"pid"`
}

func (r statusRow) status() (Status, error) {
	id, err := ParseJobID(r.ID)
	if err != nil {
		return Status{}, err
	}
	return Status{ID: id, Guest: r.Guest, Target: r.Target, Source: r.Source, Schedule: r.Schedule, LastSync: r.LastSync,
		LastTry: r.LastTry, NextSync: r.NextSync, Duration: r.Duration, FailCount: r.FailCount, Error: r.Error,
		Disable: r.Disable, RemoveJob: r.RemoveJob, PID: r.PID}, nil
}

// Synced tells whether the job has completed a sync.
func (s Status) Synced() bool { return s.LastSync > 0 }

// States of a job, as `pvesr status` tells them (pve-manager
// PVE/CLI/pvesr.pm print_job_status: SYNCING while the run's pid lives,
// else the last error, else OK), with OK split by whether a sync ever
// completed (pvesr prints OK and LastSync "-" for a job never synced).
const (
	StateSyncing = "syncing" // a run is in progress (it may be a retry after an error)
	StateError   = "error"   // the last run failed: Error, FailCount
	StatePending = "pending" // no sync completed yet, none failed
	StateOK      = "ok"      // the last run completed a sync
)

// State is the job's state (see the State constants).
func (s Status) State() string {
	switch {
	case s.PID > 0:
		return StateSyncing
	case s.Error != "":
		return StateError
	case !s.Synced():
		return StatePending
	}
	return StateOK
}

// GetStatus reads one job's status on node (its source).
func GetStatus(ctx context.Context, g pveapi.Getter, node string, id JobID) (Status, error) {
	var r statusRow
	if err := g.Get(ctx, pveapi.Path("/nodes/%s/replication/%s/status", node, id.String()), nil, &r); err != nil {
		return Status{}, err
	}
	return r.status()
}

// NodeStatus reads the status of every job node runs
// (GET /nodes/{node}/replication; guest narrows it to one guest).
func NodeStatus(ctx context.Context, g pveapi.Getter, node string, guest int) ([]Status, error) {
	var q url.Values
	if guest > 0 {
		q = url.Values{"guest": {strconv.Itoa(guest)}}
	}
	var rows []statusRow
	if err := g.Get(ctx, pveapi.Path("/nodes/%s/replication", node), q, &rows); err != nil {
		return nil, err
	}
	out := make([]Status, 0, len(rows))
	for _, r := range rows {
		s, err := r.status()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
