// Package replication is the simulator's model of PVE's storage replication,
// after pve-guest-common and pve-manager:
//
//   - the jobs of /etc/pve/replication.cfg (src/PVE/ReplicationConfig.pm):
//     ids <guest>-<n> (parse_replication_job_id), one job per guest and
//     target, the fixed and updatable options, a DELETE's remove_job mark,
//     switch_replication_job_target_nolock for a migrated or HA-stolen
//     guest, and the job list pve-manager's PVE/API2/ReplicationConfig.pm
//     renders;
//   - a job's state on its source node (src/PVE/ReplicationState.pm:
//     last_sync, last_try, fail_count, error, duration as record_job_start
//     and record_job_end leave them; schedule_job_now), job_status's
//     next_sync — the schedule's next event after the last try (pve-common
//     src/PVE/CalendarEvent.pm compute_next_event, i.e. proxmox-time,
//     through pveapi/calendarevent: every calendar form, on a virtual wall
//     clock whose minute is the lab's minute, in UTC; see NextEvent),
//     5, 10, 15 then 30 minutes after the last failed try and never while
//     the target is offline, 1 for a job marked for removal — and
//     get_next_job's order;
//   - the status view of pve-manager's PVE/API2/Replication.pm
//     ($extract_job_status) and the journal line run_jobs writes for a job
//     it could not start (_handle_job_err, src/PVE/Replication.pm
//     run_replication's guest_migration_lock).
//
// It is a backend out of the one-package simulator (issue 27 §1), as
// pvesim/access is: pvesim/replsim's handlers and runs, core's
// replication model, and the persistence of the state
// (state.json's nodes.*.replication) call it; it never imports pvesim.
// What the rules need from the simulator — the lab's minute, which nodes
// are online, a job's state, which node holds a guest — comes in through
// Env and function arguments.
package replication

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
)

// ConfigFile is the jobs' file in /etc/pve.
const ConfigFile = "replication.cfg"

// Job is one section of replication.cfg: its type ("local", the only one
// PVE has), its id and its options (target, source, schedule, rate,
// comment, disable, remove_job). Its fields are those of pvesim's section,
// so a *section converts to a *Job and changes made here are the file's.
type Job struct {
	Type string
	ID   string
	Opts map[string]string
}

var idRe = regexp.MustCompile(`^(\d+)-(\d+)$`)

// ParseID is parse_replication_job_id: the job's guest, or
// ReplicationConfig.pm's error for an id that is no <guest>-<n>.
func ParseID(id string) (int, error) {
	m := idRe.FindStringSubmatch(id)
	if m == nil {
		return 0, fmt.Errorf("invalid replication job id '%s'", id)
	}
	g, _ := strconv.Atoi(m[1])
	if g < 100 {
		return 0, fmt.Errorf("invalid replication job id '%s' (guest IDs < 100 are reserved)", id)
	}
	return g, nil
}

// Guest is the guest of a job id, 0 for an invalid one.
func Guest(id string) int {
	g, _ := ParseID(id)
	return g
}

// Find is the job with id, nil if there is none.
func Find(jobs []*Job, id string) *Job {
	for _, j := range jobs {
		if j.ID == id {
			return j
		}
	}
	return nil
}

// CreateOptions are the options a new job takes from the create call
// besides id, target and source (API2/ReplicationConfig.pm create).
var CreateOptions = []string{"schedule", "rate", "comment", "disable"}

// Updatable are the options an update may set or delete: the replication
// section type's non-fixed options.
var Updatable = []string{"schedule", "rate", "comment", "disable", "source", "remove_job"}

// CheckNew refuses a job that exists already, by id or by guest and
// target (ReplicationConfig.pm's create checks).
func CheckNew(jobs []*Job, id string, guest int, target string) error {
	if Find(jobs, id) != nil {
		return fmt.Errorf("replication job '%s' already exists", id)
	}
	for _, j := range jobs {
		if Guest(j.ID) == guest && j.Opts["target"] == target {
			return fmt.Errorf("replication job for guest '%d' to target 'local/%s' already exists", guest, target)
		}
	}
	return nil
}

// Update is API2/ReplicationConfig.pm update on job j: param gives the
// call's options (value, given), del the options its delete lists. The
// target is fixed (SectionConfig check_config); the required options
// cannot be deleted.
func Update(j *Job, param func(k string) (string, bool), del []string) error {
	if _, ok := param("target"); ok {
		return fmt.Errorf("can't change value of fixed parameter 'target'")
	}
	for _, k := range Updatable {
		if v, ok := param(k); ok {
			j.Opts[k] = v
		}
	}
	for _, k := range del {
		switch {
		case slices.Contains(Updatable, k):
			delete(j.Opts, k)
		case k == "target" || k == "type" || k == "id":
			return fmt.Errorf("unable to delete required option '%s'", k)
		default:
			return fmt.Errorf("no such option '%s'", k)
		}
	}
	return nil
}

// MarkRemoval is a DELETE without force: the job stays, marked for the
// source's next run to remove (remove_job full, or local with keep, which
// leaves the replica on the target).
func MarkRemoval(j *Job, keep bool) {
	j.Opts["remove_job"] = "full"
	if keep {
		j.Opts["remove_job"] = "local"
	}
}

// View renders a job for the API: its options typed, plus id, guest and
// jobnum, and the file's digest when given.
func View(j *Job, digest string) map[string]any {
	out := map[string]any{"id": j.ID, "type": j.Type}
	for k, v := range j.Opts {
		out[k] = v
	}
	out["guest"] = Guest(j.ID)
	if m := idRe.FindStringSubmatch(j.ID); m != nil {
		n, _ := strconv.Atoi(m[2])
		out["jobnum"] = n
	}
	if r, ok := j.Opts["rate"]; ok {
		if f, err := strconv.ParseFloat(r, 64); err == nil {
			out["rate"] = f
		}
	}
	if d, ok := j.Opts["disable"]; ok {
		n, _ := strconv.Atoi(d)
		out["disable"] = n
	}
	if digest != "" {
		out["digest"] = digest
	}
	return out
}

// IDsOf lists the ids of a guest's jobs, in the file's order.
func IDsOf(jobs []*Job, vmid int) []string {
	var out []string
	for _, j := range jobs {
		if Guest(j.ID) == vmid {
			out = append(out, j.ID)
		}
	}
	return out
}

// SwitchTarget is switch_replication_job_target_nolock($vmid,
// $old_target, $new_target): every local job of the guest gets source
// oldTarget; the one that targeted oldTarget now targets newTarget. A
// migration (AbstractMigrate.pm) passes (target, source); job_status, for
// a guest HA stole, (its node, the old source). It tells whether a job
// changed.
func SwitchTarget(jobs []*Job, vmid int, oldTarget, newTarget string) bool {
	changed := false
	for _, j := range jobs {
		if Guest(j.ID) != vmid || j.Type != "local" {
			continue
		}
		if j.Opts["target"] == oldTarget {
			j.Opts["target"] = newTarget
		}
		j.Opts["source"] = oldTarget
		changed = true
	}
	return changed
}

// OnNode is job_status's choice of the jobs node runs: those whose guest is
// on node (guestNode tells where a guest is), never one to node itself
// unless marked for removal. A job whose source is another node belongs to
// a guest HA stole: its guest's jobs are switched first, and switched
// tells the caller to write the file.
func OnNode(jobs []*Job, node string, guestNode func(guest int) (string, bool)) (out []*Job, switched bool) {
	here := func(j *Job) bool {
		n, ok := guestNode(Guest(j.ID))
		return ok && n == node
	}
	for _, j := range jobs {
		if src := j.Opts["source"]; here(j) && src != "" && src != node {
			switched = SwitchTarget(jobs, Guest(j.ID), node, src) || switched
		}
	}
	for _, j := range jobs {
		if here(j) && (j.Opts["target"] != node || j.Opts["remove_job"] != "") {
			out = append(out, j)
		}
	}
	return out, switched
}
