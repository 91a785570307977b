package pveha

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
	"github.com/gopve/proxmox/modules-src/pveapi/replication"
)

// wantedTargets is where the guest's data must be: the targets given, or
// every other member. In check mode a node that created_earlier.nodes
// names and that is not a member yet (one the cluster phase of this run
// joins: a real run gets here with it a member) counts as a member to be:
// the default targets include it, as the real run's /nodes will, and
// explicit targets may name it (issue 23 §6).
func (g *guestHA) wantedTargets() ([]string, error) {
	if g.p.Targets == nil {
		out := slices.DeleteFunc(slices.Clone(g.members), func(n string) bool { return n == g.guest.Node })
		for _, n := range g.r.CreatedEarlierNames(ansible.CreatedNode) {
			if !slices.Contains(g.members, n) && n != g.guest.Node && g.memberToBe("targets", n, nil) {
				out = append(out, n)
			}
		}
		slices.Sort(out)
		return out, nil
	}
	out := slices.Clone(g.p.Targets)
	slices.Sort(out)
	out = slices.Compact(out)
	for _, t := range out {
		if !slices.Contains(g.members, t) {
			missing := fmt.Errorf("targets: %s is not a member of the cluster (members: %s)", t, strings.Join(g.members, ", "))
			if !g.memberToBe("targets", t, missing) {
				return nil, missing
			}
		}
	}
	return out, nil
}

// memberToBe tells whether node n, not a member now, is assumed to be one
// by the time a real run gets here: in check mode only, when
// created_earlier.nodes names it (ansible.Run.Assume warns and lists it in
// not_yet); fail is the real run's error without it. A node assumed so
// is not read (it is not in the cluster this run reads yet): its storage
// is left to the real run to check (checkReplicatable).
func (g *guestHA) memberToBe(option, n string, fail error) bool {
	if !g.r.Assume(ansible.Prerequisite{Option: option, Kind: ansible.CreatedNode, Name: n, Object: "cluster node " + n,
		Predicts: "it a member (whether its storage can hold the replicas is checked by the real run)"}, fail) {
		return false
	}
	if g.joining == nil {
		g.joining = map[string]bool{}
	}
	g.joining[n] = true
	return true
}

// jobPlan matches the guest's jobs with the wanted targets.
type jobPlan struct {
	keep     []replication.Job // matched (settings may differ)
	followed []replication.Job // rewritten by HA relocation: kept as they are
	create   []string          // targets without a job
	remove   []replication.Job
}

// matchJobs judges jobs by (guest, target). When the guest runs on one of
// the wanted targets, HA recovered it there and PVE switched the job that
// pointed at this node to point at the node it left
// (switch_replication_job_target): one job to a node outside the targets
// is then that job, not drift.
//
// self says the guest's current node belongs to its replication set: it is
// among the targets asked for, or targets were left to "every other
// member" (then the set is every member). A job that still points at that
// node was not switched yet — PVE switches it at the node's next
// replication run, to the node the guest left, which the module cannot
// name for sure (that node is most likely down). Until then the jobs are
// left exactly as they are: nothing is created nor removed, so a rerun
// right after a failover changes nothing and never fights PVE.
func matchJobs(jobs []replication.Job, wanted []string, node string, self bool) jobPlan {
	var p jobPlan
	need := slices.DeleteFunc(slices.Clone(wanted), func(n string) bool { return n == node })
	var extra []replication.Job
	for _, j := range jobs {
		switch {
		case slices.Contains(need, j.Target):
			p.keep = append(p.keep, j)
			need = slices.DeleteFunc(need, func(n string) bool { return n == j.Target })
		case j.Target == node && self:
			// Not switched yet: the next replication run on this node does.
			p.followed = append(p.followed, j)
		default:
			extra = append(extra, j)
		}
	}
	if len(p.followed) > 0 {
		p.followed = append(p.followed, extra...)
		return p
	}
	if slices.Contains(wanted, node) && len(extra) > 0 {
		p.followed, extra = extra[:1], extra[1:]
	}
	p.create, p.remove = need, extra
	return p
}

func (g *guestHA) planReplication(ctx context.Context, _ *ansible.World) ([]ansible.Change, error) {
	if err := g.observeBase(ctx); err != nil {
		return nil, err
	}
	if g.notYet {
		return g.notYetChange(), nil
	}
	all, err := replication.Jobs(ctx, g.c)
	if err != nil {
		return nil, fmt.Errorf("cannot read the replication jobs: %w", err)
	}
	jobs := slices.DeleteFunc(replication.ForGuest(all, g.p.VMID), func(j replication.Job) bool { return j.RemoveJob != "" })
	g.followed, g.created = map[string]bool{}, map[string]bool{}
	if g.p.State == "absent" {
		g.jobs = nil
		var changes []ansible.Change
		for _, j := range replication.ForGuest(all, g.p.VMID) {
			changes = append(changes, g.removeJob(j))
		}
		return changes, nil
	}
	wanted, err := g.wantedTargets()
	if err != nil {
		return nil, err
	}
	plan := matchJobs(jobs, wanted, g.guest.Node, g.p.Targets == nil || slices.Contains(wanted, g.guest.Node))
	if len(plan.create) > 0 && len(jobs) == 0 && slices.Contains(wanted, g.guest.Node) {
		return nil, fmt.Errorf("targets: guest %d runs on %s, which cannot be its own replication target", g.p.VMID, g.guest.Node)
	}
	if len(plan.create) > 0 {
		if err := g.checkReplicatable(ctx, plan.create); err != nil {
			return nil, err
		}
	}
	var changes []ansible.Change
	nums := slices.Clone(all)
	for _, t := range plan.create {
		id := replication.JobID{Guest: g.p.VMID, Num: replication.NextNum(nums, g.p.VMID)}
		j := g.wantedJob(replication.Job{ID: id, Target: t})
		nums = append(nums, j)
		ch, err := g.createJob(j)
		if err != nil {
			return nil, err
		}
		changes = append(changes, ch)
		g.jobs = append(g.jobs, j)
		g.created[j.ID.String()] = true
	}
	for _, j := range append(slices.Clone(plan.keep), plan.followed...) {
		want := g.wantedJob(j)
		if slices.Contains(plan.followed, j) {
			g.followed[j.ID.String()] = true
		}
		g.jobs = append(g.jobs, want)
		if ch, ok, err := g.updateJob(j, want); err != nil {
			return nil, err
		} else if ok {
			changes = append(changes, ch)
		}
	}
	for _, j := range plan.remove {
		changes = append(changes, g.removeJob(j))
	}
	slices.SortFunc(g.jobs, func(a, b replication.Job) int { return a.ID.Num - b.ID.Num })
	if err := g.preflightHA(ctx); err != nil {
		return nil, err
	}
	return changes, nil
}

// wantedJob is j with the task's settings (unset ones kept as they are).
func (g *guestHA) wantedJob(j replication.Job) replication.Job {
	j.Schedule = g.p.Schedule
	if g.p.Rate != nil {
		j.Rate = *g.p.Rate
	}
	if g.p.Comment != nil {
		j.Comment = *g.p.Comment
	}
	j.Disable = g.p.Disable
	return j.WithDefaults()
}

func jobText(j replication.Job) string {
	var b strings.Builder
	fmt.Fprintf(&b, "local: %s\n\ttarget %s\n\tschedule %s\n", j.ID, j.Target, j.WithDefaults().Schedule)
	if j.Rate > 0 {
		fmt.Fprintf(&b, "\trate %s\n", strconv.FormatFloat(j.Rate, 'f', -1, 64))
	}
	if j.Comment != "" {
		fmt.Fprintf(&b, "\tcomment %s\n", j.Comment)
	}
	if j.Disable {
		b.WriteString("\tdisable 1\n")
	}
	return b.String()
}

const replicationCfg = "/etc/pve/replication.cfg"

// findJob reads the job back; nil when it is gone (or only marked for removal
// when marked is false).
func (g *guestHA) findJob(ctx context.Context, id replication.JobID) (*replication.Job, error) {
	all, err := replication.Jobs(ctx, g.c)
	if err != nil {
		return nil, err
	}
	for _, j := range all {
		if j.ID == id {
			return &j, nil
		}
	}
	return nil, nil
}

func (g *guestHA) send(ctx context.Context, req apischema.Request, what string, creates bool, settle func(context.Context) (bool, error)) error {
	g.haRead = nil // whatever it writes, later stages read afresh
	g.acted = true
	refused := false
	_, _, err := pveansible.SendChecked(ctx, g.r, g.c, g.major, req, pveapi.Write{What: what, Settle: settle, Creates: creates}, "",
		func(err error) error { refused = true; return fmt.Errorf("%s: %w", what, err) })
	if !refused {
		g.markWritten(req) // sent: a digest read before it is stale
	}
	return err
}

func (g *guestHA) createJob(j replication.Job) (ansible.Change, error) {
	req := replication.Create(j)
	if err := req.Validate(g.major); err != nil {
		return ansible.Change{}, fmt.Errorf("schedule, rate or comment: %w", err)
	}
	what := fmt.Sprintf("create replication job %s of guest %d to %s", j.ID, j.ID.Guest, j.Target)
	return ansible.Change{
		ID:      "replication:create:" + j.ID.String(),
		Summary: what,
		Diff:    ansible.TextDiff(replicationCfg+" ("+j.ID.String()+")", "", jobText(j)),
		Apply: func(ctx context.Context) error {
			// A lost answer is settled by the job showing in the config:
			// PVE writes it under the replication.cfg lock, which pveapi's
			// dispatch waits out (a lock timeout is re-sent, H5).
			return g.send(ctx, req, what, true, func(ctx context.Context) (bool, error) {
				found, err := g.findJob(ctx, j.ID)
				return found != nil && found.Target == j.Target, err
			})
		},
		Verify: func(ctx context.Context) error { return g.verifyJob(ctx, j) },
	}, nil
}

func (g *guestHA) verifyJob(ctx context.Context, want replication.Job) error {
	got, err := g.findJob(ctx, want.ID)
	if err != nil {
		return err
	}
	if got == nil {
		return fmt.Errorf("replication job %s does not exist", want.ID)
	}
	if d := jobDiffs(*got, want); len(d) > 0 {
		return fmt.Errorf("replication job %s: %s", want.ID, strings.Join(d, "; "))
	}
	return nil
}

// jobDiffs lists the settings in which have differs from want, with PVE's
// defaults filled in on both sides; the target is not compared (HA
// relocation rewrites it).
func jobDiffs(have, want replication.Job) []string {
	h, w := have.WithDefaults(), want.WithDefaults()
	var out []string
	if h.Schedule != w.Schedule {
		out = append(out, fmt.Sprintf("schedule is %q, not %q", h.Schedule, w.Schedule))
	}
	if h.Rate != w.Rate {
		out = append(out, fmt.Sprintf("rate is %v, not %v", h.Rate, w.Rate))
	}
	if h.Comment != w.Comment {
		out = append(out, fmt.Sprintf("comment is %q, not %q", h.Comment, w.Comment))
	}
	if h.Disable != w.Disable {
		out = append(out, fmt.Sprintf("disable is %v, not %v", h.Disable, w.Disable))
	}
	return out
}

func (g *guestHA) updateJob(have, want replication.Job) (ansible.Change, bool, error) {
	diffs := jobDiffs(have, want)
	if len(diffs) == 0 {
		return ansible.Change{}, false, nil
	}
	set := map[string]string{}
	var del []string
	h := have.WithDefaults()
	if h.Schedule != want.Schedule {
		if want.Schedule == replication.DefaultSchedule {
			del = append(del, "schedule")
		} else {
			set["schedule"] = want.Schedule
		}
	}
	if h.Rate != want.Rate {
		if want.Rate == 0 {
			del = append(del, "rate")
		} else {
			set["rate"] = strconv.FormatFloat(want.Rate, 'f', -1, 64)
		}
	}
	if h.Comment != want.Comment {
		if want.Comment == "" {
			del = append(del, "comment")
		} else {
			set["comment"] = want.Comment
		}
	}
	if h.Disable != want.Disable {
		if want.Disable {
			set["disable"] = "1"
		} else {
			del = append(del, "disable")
		}
	}
	req := replication.Update(have.ID, set, del, "")
	if err := req.Validate(g.major); err != nil {
		return ansible.Change{}, false, fmt.Errorf("schedule, rate or comment: %w", err)
	}
	what := fmt.Sprintf("update replication job %s (%s)", have.ID, strings.Join(diffs, ", "))
	return ansible.Change{
		ID:      "replication:update:" + have.ID.String(),
		Summary: what,
		Diff:    ansible.TextDiff(replicationCfg+" ("+have.ID.String()+")", jobText(have), jobText(want)),
		Apply: func(ctx context.Context) error {
			return g.send(ctx, req, what, false, func(ctx context.Context) (bool, error) {
				return g.verifyJob(ctx, want) == nil, nil
			})
		},
		Verify: func(ctx context.Context) error { return g.verifyJob(ctx, want) },
	}, true, nil
}

// removeJob marks the job for removal; PVE's source node removes it at its
// next replication run, so Verify waits until the config no longer lists it.
func (g *guestHA) removeJob(j replication.Job) ansible.Change {
	what := fmt.Sprintf("remove replication job %s of guest %d (to %s)", j.ID, j.ID.Guest, j.Target)
	req := replication.Delete(j.ID, false, false)
	return ansible.Change{
		ID:      "replication:remove:" + j.ID.String(),
		Summary: what,
		Diff:    ansible.TextDiff(replicationCfg+" ("+j.ID.String()+")", jobText(j), ""),
		Apply: func(ctx context.Context) error {
			if j.RemoveJob != "" {
				return nil // already marked by an earlier run: only the wait is left
			}
			return g.send(ctx, req, what, false, func(ctx context.Context) (bool, error) {
				found, err := g.findJob(ctx, j.ID)
				return found == nil || found.RemoveJob != "", err
			})
		},
		Verify: func(ctx context.Context) error {
			return g.waitFor(ctx, "replication job "+j.ID.String()+" to be removed by its source node's next replication run", func(ctx context.Context) (bool, string, error) {
				found, err := g.findJob(ctx, j.ID)
				if err != nil {
					return false, "", err
				}
				if found == nil {
					return true, "", nil
				}
				state := fmt.Sprintf("still listed (remove_job=%s, source %s)", found.RemoveJob, found.Source)
				failure, err := g.removalFailure(ctx, *found)
				if err != nil {
					return false, "", err
				}
				return false, state + failure, nil
			})
		},
	}
}

// waitFirstSync waits, before the HA resource is declared, until every job
// of the guest has completed a sync (H1), on the node that runs the guest
// (a job's status is only listed on its source).
//
// Contention (H5) only delays a run and is waited out: pvesr.lck held by a
// long sync, or the guest's migration lock held by a migration, stops a
// run before it records anything (pve-guest-common Replication.pm
// run_replication), so PVE never shows it as the job's error. An error in
// the status is a run that failed (record_job_end: fail_count, error).
// PVE tries such a job again only 5, 10, 15, then every 30 minutes after
// the failed try, and not at all while the target is offline
// (ReplicationState.pm job_status): when that next try falls after
// wait_timeout, waiting cannot see it succeed, so the wait fails at once,
// naming the job, its error and when PVE tries again.
func (g *guestHA) waitFirstSync(ctx context.Context, onlyNew bool) (waited bool, err error) {
	var jobs []replication.Job
	for _, j := range g.jobs {
		if !onlyNew || g.created[j.ID.String()] {
			jobs = append(jobs, j)
		}
	}
	if len(jobs) == 0 {
		return false, nil
	}
	deadline := time.Now().Add(time.Duration(g.p.WaitTimeout) * time.Second)
	return true, g.waitFor(ctx, "the first sync of every replication job", func(ctx context.Context) (bool, string, error) {
		live, ok, err := g.liveGuest(ctx)
		if err != nil || !ok {
			return false, "guest not listed", err
		}
		sts, err := replication.NodeStatus(ctx, g.c, live.Node, g.p.VMID)
		if err != nil {
			return false, "", fmt.Errorf("cannot read the replication status on %s: %w", live.Node, err)
		}
		var pending []string
		for _, j := range jobs {
			st, found := findStatus(sts, j.ID)
			if !found {
				pending = append(pending, j.ID.String()+" not listed on "+live.Node+" yet")
				continue
			}
			switch st.State() {
			case replication.StateOK:
			case replication.StateSyncing:
				if !st.Synced() {
					pending = append(pending, j.ID.String()+" syncing now")
				}
			case replication.StateError:
				if st.Synced() {
					continue // a replica exists; the report warns that it is getting old
				}
				failed := fmt.Sprintf("replication job %s (to %s) has never synced: its last try failed (fail_count %d): %s", j.ID, st.Target, st.FailCount, st.Error)
				if st.NextSync == 0 {
					return false, "", fmt.Errorf("%s; PVE tries it again only once %s is online", failed, st.Target)
				}
				if next := time.Unix(st.NextSync, 0); next.After(deadline) {
					return false, "", fmt.Errorf("%s; PVE tries it again at %s, after wait_timeout", failed, next.Format(time.RFC3339))
				}
				pending = append(pending, fmt.Sprintf("%s failed %d times (%s), PVE tries again at %s", j.ID, st.FailCount, st.Error,
					time.Unix(st.NextSync, 0).Format(time.TimeOnly)))
			default:
				pending = append(pending, j.ID.String()+" not synced yet")
			}
		}
		return len(pending) == 0, strings.Join(pending, "; "), nil
	})
}

func findStatus(list []replication.Status, id replication.JobID) (replication.Status, bool) {
	for _, s := range list {
		if s.ID == id {
			return s, true
		}
	}
	return replication.Status{}, false
}

// removalFailure reads, on the job's source node, whether PVE's run that
// removes the job failed. A full removal first drops the replica on the
// target over ssh (pve-guest-common Replication.pm replicate), so with the
// target offline every run fails and the job stays until the target is
// back: that is an error now, not something wait_timeout can see end.
// Otherwise the failure is a few words for the wait's message ("" when
// there is none, or the status cannot be read: the source may be down).
func (g *guestHA) removalFailure(ctx context.Context, j replication.Job) (string, error) {
	if j.Source == "" {
		return "", nil
	}
	st, err := replication.GetStatus(ctx, g.c, j.Source, j.ID)
	if err != nil || st.Error == "" {
		return "", nil
	}
	var nodes []struct {
		Node   string `json:"node"`
		Status string `json:"status"`
	}
	if err := g.c.Get(ctx, "/nodes", nil, &nodes); err == nil {
		for _, n := range nodes {
			if n.Node == j.Target && n.Status == "offline" {
				return "", fmt.Errorf("replication job %s cannot be removed while its target %s is offline: PVE's removal first drops the replica there, and its run on %s failed (fail_count %d): %s; PVE tries again at every run and removes the job once %s is back (pvesr delete %s --force on %s drops it now, leaving the replica on %s)",
					j.ID, j.Target, j.Source, st.FailCount, st.Error, j.Target, j.ID, j.Source, j.Target)
			}
		}
	}
	return fmt.Sprintf("; PVE's last removal run failed (fail_count %d): %s", st.FailCount, st.Error), nil
}
