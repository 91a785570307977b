package pveha

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
	"github.com/gopve/proxmox/modules-src/pveapi/ha"
)

// nodePriorities reads node_affinity ({node: priority}); nil when unset.
func nodePriorities(m map[string]any) (ha.NodeList, error) {
	if m == nil {
		return nil, nil
	}
	out := ha.NodeList{}
	for _, n := range slices.Sorted(maps.Keys(m)) {
		v := m[n]
		var prio int
		switch x := v.(type) {
		case int:
			prio = x
		case int64:
			prio = int(x)
		case float64:
			prio = int(x)
			if float64(prio) != x {
				return nil, fmt.Errorf("node_affinity: priority of %s must be a whole number, not %v", n, v)
			}
		case string:
			p, err := strconv.Atoi(x)
			if err != nil {
				return nil, fmt.Errorf("node_affinity: priority of %s must be a number, not %q", n, x)
			}
			prio = p
		case nil:
			prio = 0
		default:
			return nil, fmt.Errorf("node_affinity: priority of %s must be a number, not %v", n, v)
		}
		if prio < 0 {
			return nil, fmt.Errorf("node_affinity: priority of %s must be at least 0, not %d", n, prio)
		}
		if _, err := ha.ParseNodeList(n); err != nil {
			return nil, fmt.Errorf("node_affinity: %q is not a node name", n)
		}
		out[n] = prio
	}
	return out, nil
}

func (g *guestHA) ruleName() string {
	if g.p.Rule != "" {
		return g.p.Rule
	}
	return ha.RuleIDFor("gopve", g.sid)
}

func (g *guestHA) groupName() string {
	if g.p.Group != "" {
		return g.p.Group
	}
	return ha.RuleIDFor("gopve", g.sid)
}

// haConfig is the HA manager's config as observed.
type haConfig struct {
	resources []ha.Resource
	groups    []ha.Group
	rules     []ha.Rule
}

// observeHA is the HA config this run last read, or a fresh read when it
// has sent a write or waited since (haRead): the replication stage's
// preflight and the HA stage plan from one read in a run that writes
// nothing, and the digest of each PUT still guards against what others
// wrote meanwhile (digest.go, which always reads afresh).
func (g *guestHA) observeHA(ctx context.Context) (haConfig, error) {
	if g.haRead != nil {
		return *g.haRead, nil
	}
	return g.readHA(ctx)
}

// readHA reads the HA config from the cluster.
func (g *guestHA) readHA(ctx context.Context) (haConfig, error) {
	var cfg haConfig
	if g.mechanism == "" { // once per run
		mech, groups, err := ha.DetectGroups(ctx, g.c, g.major)
		if err != nil {
			return cfg, fmt.Errorf("cannot tell how this cluster places HA guests (GET /cluster/ha/groups): %w", err)
		}
		g.mechanism = mech
		cfg.groups = groups // an unmigrated PVE 9's groups, just read: not read again
	}
	mech := g.mechanism
	var err error
	if cfg.resources, err = ha.Resources(ctx, g.c); err != nil {
		return cfg, fmt.Errorf("cannot read the HA resources: %w", err)
	}
	if mech != ha.UseRules && cfg.groups == nil {
		if cfg.groups, err = ha.Groups(ctx, g.c); err != nil {
			return cfg, fmt.Errorf("cannot read the HA groups: %w", err)
		}
	}
	if ha.Gates(g.major).Rules {
		if cfg.rules, err = ha.Rules(ctx, g.c); err != nil {
			return cfg, fmt.Errorf("cannot read the HA rules: %w", err)
		}
	}
	g.haRead = &cfg
	return cfg, nil
}

func (g *guestHA) planHA(ctx context.Context, _ *ansible.World) ([]ansible.Change, error) {
	if err := g.observeBase(ctx); err != nil {
		return nil, err
	}
	if g.notYet {
		return nil, nil // the replication stage predicted the whole chain
	}
	cfg, err := g.observeHA(ctx)
	if err != nil {
		return nil, err
	}
	if g.p.State != "absent" && g.p.WaitFirstSync && !g.r.CheckMode() {
		// H1 gates the declaration of the resource: before it exists every
		// job must have synced; once it does, only jobs new in this run
		// are waited for (after a failover, the job to the dead node fails
		// until it returns, and HA already manages the guest).
		_, declared := ha.FindResource(cfg.resources, g.sid)
		g.r.Step("waiting for the first sync of the replication jobs (wait_first_sync)")
		waited, err := g.waitFirstSync(ctx, declared)
		if err != nil {
			return nil, fmt.Errorf("wait_first_sync: %w; the HA resource was not declared or changed (H1: HA without replicated data restarts nothing useful)", err)
		}
		if waited { // the config may have changed meanwhile: plan from a fresh read
			if cfg, err = g.readHA(ctx); err != nil {
				return nil, err
			}
		}
	}
	if g.p.State == "absent" {
		return g.planHAAbsent(cfg)
	}
	return g.haChanges(ctx, cfg)
}

// preflightHA plans the HA stage against the config as it is, to refuse
// what it would refuse before the replication stage writes anything;
// the changes are planned again, for real, in the HA stage.
func (g *guestHA) preflightHA(ctx context.Context) error {
	cfg, err := g.observeHA(ctx)
	if err != nil {
		return err
	}
	g.quiet = true
	defer func() { g.quiet = false }()
	_, err = g.haChanges(ctx, cfg)
	return err
}

func (g *guestHA) warn(msg string) {
	if !g.quiet {
		g.r.Warn(msg)
	}
}

// haChanges plans the HA objects of a present guest, in PVE's order.
func (g *guestHA) haChanges(ctx context.Context, cfg haConfig) ([]ansible.Change, error) {
	g.affinity, g.rule, g.group = nil, nil, nil
	g.seen = cfg
	nodes, _ := nodePriorities(g.p.NodeAffinity)
	if err := g.checkHAInput(cfg, nodes); err != nil {
		return nil, err
	}
	var changes []ansible.Change
	have, exists := ha.FindResource(cfg.resources, g.sid)
	want := g.wantedResource(have, exists)

	// PVE 8 (and unmigrated 9): the group exists before a resource names it.
	if nodes != nil && g.mechanism != ha.UseRules {
		ch, err := g.planGroup(cfg, nodes, &want)
		if err != nil {
			return nil, err
		}
		changes = append(changes, ch...)
	}
	ch, err := g.planResource(have, exists, want)
	if err != nil {
		return nil, err
	}
	changes = append(changes, ch...)
	// An emptied node_affinity: the group goes once the resource left it.
	if nodes != nil && len(nodes) == 0 && g.mechanism != ha.UseRules {
		changes = append(changes, g.removeGroupIfUnused(cfg)...)
	}
	// PVE 9: rules name resources that exist.
	if nodes != nil && g.mechanism == ha.UseRules {
		ch, err := g.planNodeRule(cfg, nodes)
		if err != nil {
			return nil, err
		}
		changes = append(changes, ch...)
	}
	if g.p.ResourceAffinity != nil {
		ch, err := g.planAffinity(ctx, cfg)
		if err != nil {
			return nil, err
		}
		changes = append(changes, ch...)
	}
	return changes, nil
}

// checkHAInput refuses, before any write, what the options and the HA
// config decide.
func (g *guestHA) checkHAInput(cfg haConfig, nodes ha.NodeList) error {
	for _, n := range nodes.Nodes() {
		if !slices.Contains(g.members, n) {
			missing := fmt.Errorf("node_affinity: %s is not a member of the cluster (members: %s)", n, strings.Join(g.members, ", "))
			if !g.memberToBe("node_affinity", n, missing) {
				return missing
			}
		}
	}
	if g.p.Failback != nil && !ha.Gates(g.major).Failback && g.p.NodeAffinity == nil {
		return fmt.Errorf("failback: on PVE %d failback is the HA group's nofailback; give node_affinity so the module manages the guest's group", g.major)
	}
	if g.p.ResourceAffinity != nil && g.mechanism != ha.UseRules {
		if g.mechanism == ha.UseGroupsUnmigrated {
			return fmt.Errorf("resource_affinity: this PVE %d cluster's HA groups are not migrated to rules yet (PVE migrates them once every node runs PVE 9 and every LRM is active); PVE refuses new rules until then", g.major)
		}
		return fmt.Errorf("resource_affinity: PVE %d has no HA rules (PVE 9 and newer)", g.major)
	}
	if nodes != nil && g.mechanism == ha.UseRules {
		for _, r := range ha.NodeAffinityRulesOf(cfg.rules, g.sid) {
			if r.ID != g.ruleName() && r.ID != ha.GroupRulePrefix+g.groupName() {
				return fmt.Errorf("node_affinity: %s is already in node-affinity rule %s (PVE allows one per guest); remove it from that rule, or give rule: %s to manage that one", g.sid, r.ID, r.ID)
			}
		}
	}
	if nodes != nil {
		replicas := map[string]bool{g.guest.Node: true}
		for _, j := range g.jobs {
			replicas[j.Target] = true
		}
		var outside []string
		for _, n := range nodes.Nodes() {
			if !replicas[n] {
				outside = append(outside, n)
			}
		}
		if len(outside) > 0 && len(g.jobs) > 0 {
			g.warn(fmt.Sprintf("node_affinity: %s hold no replica of guest %d; HA could start it there without its data (H1)", strings.Join(outside, ", "), g.p.VMID))
		}
	}
	return nil
}

// wantedResource is the resource the task asks for: the options it gives,
// the others as they are.
func (g *guestHA) wantedResource(have ha.Resource, exists bool) ha.Resource {
	want := ha.Resource{SID: g.sid, State: g.p.State}
	if exists {
		want = have
		want.State = g.p.State
	}
	if g.p.MaxRestart != nil {
		want.MaxRestart = g.p.MaxRestart
	}
	if g.p.MaxRelocate != nil {
		want.MaxRelocate = g.p.MaxRelocate
	}
	if g.p.Comment != nil {
		want.Comment = *g.p.Comment
	}
	if g.p.Failback != nil && ha.Gates(g.major).Failback {
		want.Failback = g.p.Failback
	}
	if g.p.NodeAffinity != nil && g.mechanism == ha.UseGroups || g.mechanism == ha.UseGroupsUnmigrated && g.p.NodeAffinity != nil {
		want.Group = ""
		if len(g.p.NodeAffinity) > 0 {
			want.Group = g.groupName()
		}
	}
	return want
}

func resourceText(r *ha.Resource) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d\n\tstate %s\n", r.SID.Type, r.SID.VMID, r.State)
	if r.MaxRestart != nil {
		fmt.Fprintf(&b, "\tmax_restart %d\n", *r.MaxRestart)
	}
	if r.MaxRelocate != nil {
		fmt.Fprintf(&b, "\tmax_relocate %d\n", *r.MaxRelocate)
	}
	if r.Failback != nil {
		fmt.Fprintf(&b, "\tfailback %s\n", map[bool]string{true: "1", false: "0"}[*r.Failback])
	}
	if r.Group != "" {
		fmt.Fprintf(&b, "\tgroup %s\n", r.Group)
	}
	if r.Comment != "" {
		fmt.Fprintf(&b, "\tcomment %s\n", r.Comment)
	}
	return b.String()
}

// resourceDiffs compares two resources with PVE's defaults filled in.
func (g *guestHA) resourceDiffs(have, want ha.Resource) []string {
	h, w := have.WithDefaults(g.major), want.WithDefaults(g.major)
	var out []string
	if h.State != w.State {
		out = append(out, fmt.Sprintf("state %s → %s", h.State, w.State))
	}
	if *h.MaxRestart != *w.MaxRestart {
		out = append(out, fmt.Sprintf("max_restart %d → %d", *h.MaxRestart, *w.MaxRestart))
	}
	if *h.MaxRelocate != *w.MaxRelocate {
		out = append(out, fmt.Sprintf("max_relocate %d → %d", *h.MaxRelocate, *w.MaxRelocate))
	}
	if h.Failback != nil && w.Failback != nil && *h.Failback != *w.Failback {
		out = append(out, fmt.Sprintf("failback %v → %v", *h.Failback, *w.Failback))
	}
	if h.Comment != w.Comment {
		out = append(out, "comment")
	}
	if h.Group != w.Group {
		out = append(out, fmt.Sprintf("group %q → %q", h.Group, w.Group))
	}
	return out
}

const resourcesCfg = "/etc/pve/ha/resources.cfg"

func (g *guestHA) readResource(ctx context.Context) (*ha.Resource, error) {
	list, err := ha.Resources(ctx, g.c)
	if err != nil {
		return nil, err
	}
	if r, ok := ha.FindResource(list, g.sid); ok {
		return &r, nil
	}
	return nil, nil
}

func (g *guestHA) verifyResource(ctx context.Context, want ha.Resource) error {
	got, err := g.readResource(ctx)
	if err != nil {
		return err
	}
	if got == nil {
		return fmt.Errorf("HA resource %s does not exist", g.sid)
	}
	if d := g.resourceDiffs(*got, want); len(d) > 0 {
		return fmt.Errorf("HA resource %s: %s", g.sid, strings.Join(d, ", "))
	}
	return nil
}

func (g *guestHA) planResource(have ha.Resource, exists bool, want ha.Resource) ([]ansible.Change, error) {
	g.resource = &want
	var before *ha.Resource
	var diffs []string
	if exists {
		before = &have
		diffs = g.resourceDiffs(have, want)
		if len(diffs) == 0 {
			g.resource = &have
			return nil, nil
		}
	}
	create := !exists
	var what string
	var apply func(ctx context.Context) error
	if create {
		req, err := ha.CreateResource(want, g.major)
		if err != nil {
			return nil, fmt.Errorf("failback: %w", err)
		}
		what = fmt.Sprintf("declare HA resource %s (state %s)", g.sid, want.State)
		apply = func(ctx context.Context) error {
			return g.send(ctx, req, what, true, func(ctx context.Context) (bool, error) {
				r, err := g.readResource(ctx)
				return r != nil, err
			})
		}
	} else {
		req, err := g.updateResourceReq(have, want)
		if err != nil {
			return nil, err
		}
		what = fmt.Sprintf("update HA resource %s (%s)", g.sid, strings.Join(diffs, ", "))
		replan := func(cfg haConfig) (apischema.Request, string, error) {
			have, ok := ha.FindResource(cfg.resources, g.sid)
			if !ok {
				return apischema.Request{}, "", fmt.Errorf("HA resource %s no longer exists", g.sid)
			}
			next := g.wantedResource(have, true)
			d := g.resourceDiffs(have, next)
			want = next // what Verify and the report expect now
			g.resource = &want
			if len(d) == 0 {
				return apischema.Request{}, "", nil
			}
			req, err := g.updateResourceReq(have, next)
			return req, strings.Join(d, ", "), err
		}
		apply = func(ctx context.Context) error {
			return g.update(ctx, req, what, replan, func(ctx context.Context) (bool, error) {
				return g.verifyResource(ctx, want) == nil, nil
			})
		}
	}
	stateChanges := create || have.WithDefaults(g.major).State != want.WithDefaults(g.major).State
	return []ansible.Change{{
		ID:      "ha:resource",
		Summary: what,
		Diff:    ansible.TextDiff(resourcesCfg+" ("+g.sid.String()+")", resourceText(before), resourceText(&want)),
		Apply:   apply,
		Verify: func(ctx context.Context) error {
			if err := g.verifyResource(ctx, want); err != nil {
				return err
			}
			if stateChanges {
				return g.waitGuestState(ctx, want.State)
			}
			return nil
		},
	}}, nil
}

// updateResourceReq is the PUT making have equal want, guarded by the
// digest have was read with.
func (g *guestHA) updateResourceReq(have, want ha.Resource) (apischema.Request, error) {
	var del []string
	upd := want
	upd.Digest = have.Digest
	if want.Comment == "" && have.Comment != "" {
		del = append(del, "comment")
	}
	if want.Group == "" && have.Group != "" {
		del = append(del, "group")
	}
	req, err := ha.UpdateResource(upd, del, g.major)
	if err != nil {
		return req, fmt.Errorf("failback: %w", err)
	}
	return req, nil
}

// waitGuestState polls the guest's real state until it is what the HA
// manager was asked for (H4: the HA stack starts and stops it, in its next
// round; the module never calls the guest's start or stop).
func (g *guestHA) waitGuestState(ctx context.Context, state string) error {
	want := map[string]string{ha.StateStarted: "running", ha.StateStopped: "stopped", ha.StateDisabled: "stopped"}[state]
	if want == "" {
		return nil // ignored: HA leaves the guest as it is
	}
	return g.waitFor(ctx, fmt.Sprintf("the HA manager to bring guest %d to %s", g.p.VMID, want), func(ctx context.Context) (bool, string, error) {
		live, ok, err := g.liveGuest(ctx)
		if err != nil || !ok {
			return false, "not listed", err
		}
		return live.Status == want, fmt.Sprintf("%s on %s (HA state %s)", live.Status, live.Node, live.HAState), nil
	})
}

// planHAAbsent removes, in reverse order of creation, the guest's rule
// (PVE 9), its resource, then its group when no other resource uses it.
func (g *guestHA) planHAAbsent(cfg haConfig) ([]ansible.Change, error) {
	var changes []ansible.Change
	if g.mechanism == ha.UseRules {
		for _, r := range ha.NodeAffinityRulesOf(cfg.rules, g.sid) {
			if r.ID != g.ruleName() && r.ID != ha.GroupRulePrefix+g.groupName() {
				continue // not this module's: PVE's purge takes the guest out of it
			}
			if len(r.Resources) == 1 {
				changes = append(changes, g.removeRule(r))
			}
		}
	}
	have, exists := ha.FindResource(cfg.resources, g.sid)
	if exists {
		what := fmt.Sprintf("remove HA resource %s", g.sid)
		gone := func(ctx context.Context) (bool, error) {
			r, err := g.readResource(ctx)
			return r == nil, err
		}
		changes = append(changes, ansible.Change{
			ID: "ha:resource-remove", Summary: what,
			Diff: ansible.TextDiff(resourcesCfg+" ("+g.sid.String()+")", resourceText(&have), ""),
			Apply: func(ctx context.Context) error {
				return g.send(ctx, ha.DeleteResource(g.sid), what, false, gone)
			},
			Verify: func(ctx context.Context) error {
				if ok, err := gone(ctx); err != nil || !ok {
					return fmt.Errorf("HA resource %s still exists (%v)", g.sid, err)
				}
				return nil
			},
		})
	}
	if g.mechanism != ha.UseRules {
		changes = append(changes, g.removeGroupIfUnused(cfg)...)
	}
	return changes, nil
}

// removeGroupIfUnused removes the guest's group once the guest has left it,
// unless another resource still names it.
func (g *guestHA) removeGroupIfUnused(cfg haConfig) []ansible.Change {
	name := g.groupName()
	gr, ok := findGroup(cfg.groups, name)
	if !ok {
		return nil
	}
	for _, r := range cfg.resources {
		if r.SID != g.sid && r.Group == name {
			return nil
		}
	}
	what := fmt.Sprintf("remove HA group %s", name)
	gone := func(ctx context.Context) (bool, error) {
		got, err := g.readGroup(ctx, name)
		return got == nil, err
	}
	return []ansible.Change{{
		ID: "ha:group-remove", Summary: what,
		Diff: ansible.TextDiff(groupsCfg+" ("+name+")", groupText(&gr), ""),
		Apply: func(ctx context.Context) error {
			return g.send(ctx, ha.DeleteGroup(name), what, false, gone)
		},
		Verify: func(ctx context.Context) error {
			if ok, err := gone(ctx); err != nil || !ok {
				return fmt.Errorf("HA group %s still exists (%v)", name, err)
			}
			return nil
		},
	}}
}
