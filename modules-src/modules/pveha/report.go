package pveha

import (
	"context"
	"fmt"
	"time"

	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
	"github.com/gopve/proxmox/modules-src/pveapi/replication"
)

// report sets the result: the jobs with their live status, the resource
// with the guest's live state, the placement, the version and mechanism.
// In check mode the objects are the predicted ones; live values are what
// the cluster shows now.
func (g *guestHA) report() {
	if g.major == 0 {
		return
	}
	pveansible.ReportVersion(g.r, g.major)
	g.r.Set("mechanism", string(g.mechanism))
	ctx, cancel := context.WithTimeout(g.r.Context(), 20*time.Second)
	defer cancel()
	live, ok, err := g.reportedGuest(ctx)
	guest := map[string]any{"vmid": g.p.VMID, "sid": g.sid.String()}
	if err == nil && ok {
		guest["node"], guest["status"], guest["hastate"] = live.Node, live.Status, live.HAState
	}
	g.r.Set("guest", guest)

	var sts []replication.Status
	if err == nil && ok {
		sts, _ = replication.NodeStatus(ctx, g.c, live.Node, g.p.VMID)
	}
	jobs := []any{}
	for _, j := range g.jobs {
		e := map[string]any{"id": j.ID.String(), "target": j.Target, "source": j.Source, "schedule": j.WithDefaults().Schedule,
			"disable": j.Disable, "followed_guest": g.followed[j.ID.String()]}
		if j.Rate > 0 {
			e["rate"] = j.Rate
		}
		if j.Comment != "" {
			e["comment"] = j.Comment
		}
		if st, found := findStatus(sts, j.ID); found {
			e["source"], e["target"] = st.Source, st.Target
			e["last_sync"], e["fail_count"], e["state"] = st.LastSync, st.FailCount, st.State()
			if st.Error != "" {
				e["error"] = st.Error
			}
			g.warnJob(st)
		} else if err == nil && ok {
			e["state"] = "not listed"
		}
		jobs = append(jobs, e)
	}
	g.r.Set("jobs", jobs)

	res := map[string]any{}
	if g.resource != nil && g.p.State != "absent" {
		d := g.resource.WithDefaults(g.major)
		res = map[string]any{"sid": d.SID.String(), "state": d.State, "max_restart": *d.MaxRestart, "max_relocate": *d.MaxRelocate}
		if d.Comment != "" {
			res["comment"] = d.Comment
		}
		if d.Failback != nil {
			res["failback"] = *d.Failback
		}
		if d.Group != "" {
			res["group"] = d.Group
		}
		if ok {
			res["live"] = map[string]any{"node": live.Node, "status": live.Status, "hastate": live.HAState}
		}
	}
	g.r.Set("resource", res)

	placement := map[string]any{}
	switch {
	case g.rule != nil:
		placement = map[string]any{"rule": g.rule.ID, "nodes": g.rule.Nodes.String(), "strict": g.rule.Strict}
	case g.group != nil:
		placement = map[string]any{"group": g.group.Name, "nodes": g.group.Nodes.String(), "strict": g.group.Restricted,
			"nofailback": g.group.NoFailback}
	}
	g.r.Set("placement", placement)
	aff := []any{}
	for _, r := range g.affinity {
		aff = append(aff, map[string]any{"rule": r.ID, "resources": sidsText(r.Resources), "affinity": r.Affinity})
	}
	g.r.Set("resource_affinity", aff)
}

// warnJob says, for a guest that is to be highly available, that a job
// does not give it the replica a recovery needs (H1): one that never
// synced (syncing, pending, failing), or one whose last run failed (the
// replica on the target is from the last good sync). A green recap must
// not read as "replicated" when it is not.
func (g *guestHA) warnJob(st replication.Status) {
	if g.p.State == "absent" || st.RemoveJob != "" {
		return
	}
	switch {
	case st.Error != "" && st.Synced():
		g.r.Warn(fmt.Sprintf("replication job %s (to %s) failed its last run (fail_count %d): %s; the replica there is from %s",
			st.ID, st.Target, st.FailCount, st.Error, time.Unix(st.LastSync, 0).UTC().Format(time.RFC3339)))
	case !st.Synced():
		why := map[string]string{replication.StateSyncing: "its first sync is running", replication.StatePending: "its first sync has not run yet",
			replication.StateError: fmt.Sprintf("its last try failed (fail_count %d): %s", st.FailCount, st.Error)}[st.State()]
		g.r.Warn(fmt.Sprintf("replication job %s (to %s) has never completed a sync (%s): until it does, HA recovering guest %d on %s has no data there (H1); wait_first_sync: true waits for it",
			st.ID, st.Target, why, g.p.VMID, st.Target))
	}
}
