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
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
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

func groupText(gr *ha.Group) string {
	if gr == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "group: %s\n\tnodes %s\n", gr.Name, gr.Nodes)
	if gr.Restricted {
		b.WriteString("\trestricted 1\n")
	}
	if gr.NoFailback {
		b.WriteString("\tnofailback 1\n")
	}
	if gr.Comment != "" {
		fmt.Fprintf(&b, "\tcomment %s\n", gr.Comment)
	}
	return b.String()
}

const groupsCfg = "/etc/pve/ha/groups.cfg"

func findGroup(list []ha.Group, name string) (ha.Group, bool) {
	for _, gr := range list {
		if gr.Name == name {
			return gr, true
		}
	}
	return ha.Group{}, false
}

func (g *guestHA) readGroup(ctx context.Context, name string) (*ha.Group, error) {
	list, err := ha.Groups(ctx, g.c)
	if err != nil {
		return nil, err
	}
	if gr, ok := findGroup(list, name); ok {
		return &gr, nil
	}
	return nil, nil
}

func sameGroup(a, b ha.Group) bool {
	return a.Name == b.Name && a.Nodes.Equal(b.Nodes) && a.Restricted == b.Restricted && a.NoFailback == b.NoFailback && a.Comment == b.Comment
}

// planGroup writes the guest's group (PVE 8; PVE 9 before migration).
func (g *guestHA) planGroup(cfg haConfig, nodes ha.NodeList, want *ha.Resource) ([]ansible.Change, error) {
	if g.mechanism == ha.UseGroupsUnmigrated {
		g.warn(fmt.Sprintf("this PVE %d cluster's HA groups are not migrated to rules yet: placement is written as HA group %s, which PVE's CRM will turn into rule %s%s once every node runs PVE 9 and every LRM is active; later runs adopt that rule", g.major, g.groupName(), ha.GroupRulePrefix, g.groupName()))
	}
	if len(nodes) == 0 {
		return nil, nil // the resource leaves its group (want.Group is empty)
	}
	name := g.groupName()
	have, exists := findGroup(cfg.groups, name)
	wg := g.wantedGroup(name, nodes, have, exists)
	g.group = &wg
	if exists && sameGroup(have, wg) {
		return nil, nil
	}
	var before *ha.Group
	verify := func(ctx context.Context) error {
		got, err := g.readGroup(ctx, name)
		if err != nil {
			return err
		}
		if got == nil || !sameGroup(*got, wg) {
			return fmt.Errorf("HA group %s reads back as %s", name, groupText(got))
		}
		return nil
	}
	var ch ansible.Change
	if exists {
		before = &have
		upd := wg
		upd.Digest = have.Digest
		req := ha.UpdateGroup(upd)
		what := fmt.Sprintf("update HA group %s (nodes %s)", name, wg.Nodes)
		replan := func(cfg haConfig) (apischema.Request, string, error) {
			have, ok := findGroup(cfg.groups, name)
			if !ok {
				return apischema.Request{}, "", fmt.Errorf("HA group %s no longer exists", name)
			}
			wg = g.wantedGroup(name, nodes, have, true) // what Verify and the report expect now
			if sameGroup(have, wg) {
				return apischema.Request{}, "", nil
			}
			upd := wg
			upd.Digest = have.Digest
			return ha.UpdateGroup(upd), "group " + oneLine(groupText(&wg)), nil
		}
		ch = ansible.Change{ID: "ha:group", Summary: what, Apply: func(ctx context.Context) error {
			return g.update(ctx, req, what, replan, func(ctx context.Context) (bool, error) { return verify(ctx) == nil, nil })
		}}
	} else {
		req := ha.CreateGroup(wg)
		what := fmt.Sprintf("create HA group %s (nodes %s)", name, wg.Nodes)
		ch = ansible.Change{ID: "ha:group", Summary: what, Apply: func(ctx context.Context) error {
			return g.send(ctx, req, what, true, func(ctx context.Context) (bool, error) {
				got, err := g.readGroup(ctx, name)
				return got != nil, err
			})
		}}
	}
	ch.Diff = ansible.TextDiff(groupsCfg+" ("+name+")", groupText(before), groupText(&wg))
	ch.Verify = verify
	_ = want
	return []ansible.Change{ch}, nil
}

// wantedGroup is the group the task asks for: the options it gives, the
// others as have holds them.
func (g *guestHA) wantedGroup(name string, nodes ha.NodeList, have ha.Group, exists bool) ha.Group {
	wg := ha.Group{Name: name, Nodes: nodes, Restricted: g.p.Strict}
	if exists {
		wg.NoFailback, wg.Comment = have.NoFailback, have.Comment
	}
	if g.p.Failback != nil {
		wg.NoFailback = !*g.p.Failback
	}
	if g.p.Comment != nil {
		wg.Comment = *g.p.Comment
	}
	return wg
}

func ruleText(r *ha.Rule) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n\tresources %s\n", r.Type, r.ID, sidsText(r.Resources))
	if r.Type == ha.NodeAffinity {
		fmt.Fprintf(&b, "\tnodes %s\n", r.Nodes)
		if r.Strict {
			b.WriteString("\tstrict 1\n")
		}
	}
	if r.Affinity != "" {
		fmt.Fprintf(&b, "\taffinity %s\n", r.Affinity)
	}
	if r.Disable {
		b.WriteString("\tdisable 1\n")
	}
	if r.Comment != "" {
		fmt.Fprintf(&b, "\tcomment %s\n", r.Comment)
	}
	return b.String()
}

func sidsText(s []ha.SID) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = x.String()
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

const rulesCfg = "/etc/pve/ha/rules.cfg"

func findRule(list []ha.Rule, id string) (ha.Rule, bool) {
	for _, r := range list {
		if r.ID == id {
			return r, true
		}
	}
	return ha.Rule{}, false
}

func (g *guestHA) readRule(ctx context.Context, id string) (*ha.Rule, error) {
	list, err := ha.Rules(ctx, g.c)
	if err != nil {
		return nil, err
	}
	if r, ok := findRule(list, id); ok {
		return &r, nil
	}
	return nil, nil
}

func withSID(list []ha.SID, sid ha.SID) []ha.SID {
	out := slices.Clone(list)
	if !slices.Contains(out, sid) {
		out = append(out, sid)
	}
	slices.SortFunc(out, func(a, b ha.SID) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// planNodeRule writes the guest's node-affinity rule (PVE 9). The rule
// PVE made from the guest's group when it migrated groups is adopted under
// its own name: the module does not fight the migration.
func (g *guestHA) planNodeRule(cfg haConfig, nodes ha.NodeList) ([]ansible.Change, error) {
	id := g.ruleName()
	have, exists := findRule(cfg.rules, id)
	if !exists && g.p.Rule == "" {
		if r, ok := findRule(cfg.rules, ha.GroupRulePrefix+g.groupName()); ok && slices.Contains(r.Resources, g.sid) {
			id, have, exists = r.ID, r, true
		}
	}
	if len(nodes) == 0 {
		if !exists {
			return nil, nil
		}
		return []ansible.Change{g.removeRule(have)}, nil
	}
	if exists && have.Type != ha.NodeAffinity {
		return nil, fmt.Errorf("rule: HA rule %s is a %s rule, not node-affinity; PVE cannot change a rule's type: give another rule name", id, have.Type)
	}
	wantFrom := func(have ha.Rule, exists bool) ha.Rule {
		want := ha.Rule{ID: id, Type: ha.NodeAffinity, Resources: []ha.SID{g.sid}, Nodes: nodes, Strict: g.p.Strict}
		if exists {
			// The guests the rule holds stay: this guest is added to them.
			want.Resources = withSID(have.Resources, g.sid)
			want.Comment = have.Comment
		}
		if g.p.Comment != nil {
			want.Comment = *g.p.Comment
		}
		return want
	}
	return g.planRule(have, exists, wantFrom)
}

// planRule creates or updates one rule to equal wantFrom(have): the rule
// the task asks for, given the rule as read (an update that PVE refuses
// because rules.cfg changed meanwhile is planned again from a fresh read).
func (g *guestHA) planRule(have ha.Rule, exists bool, wantFrom func(have ha.Rule, exists bool) ha.Rule) ([]ansible.Change, error) {
	r := &rulePlan{g: g, want: wantFrom(have, exists), slot: len(g.affinity), wantFrom: wantFrom}
	if r.want.Type == ha.NodeAffinity {
		g.rule = &r.want
	} else {
		g.affinity = append(g.affinity, r.want)
	}
	if exists && have.Same(r.want) {
		if r.want.Type == ha.NodeAffinity {
			g.rule = &have
		} else {
			g.affinity[len(g.affinity)-1] = have
		}
		return nil, nil
	}
	var before *ha.Rule
	var ch ansible.Change
	var err error
	if exists {
		before = &have
		ch, err = r.updateChange(have)
	} else {
		ch, err = r.createChange()
	}
	if err != nil {
		return nil, err
	}
	ch.ID = "ha:rule:" + r.want.ID
	ch.Diff = ansible.TextDiff(rulesCfg+" ("+r.want.ID+")", ruleText(before), ruleText(&r.want))
	ch.Verify = r.verify
	return []ansible.Change{ch}, nil
}

// rulePlan is one rule's write. want is what Verify and the report
// expect: an update planned again from a fresh read replaces it, and the
// report (g.rule, or g.affinity[slot]) points at it.
type rulePlan struct {
	g        *guestHA
	want     ha.Rule
	slot     int // where the report keeps a resource-affinity rule
	wantFrom func(have ha.Rule, exists bool) ha.Rule
}

func (r *rulePlan) verify(ctx context.Context) error {
	got, err := r.g.readRule(ctx, r.want.ID)
	if err != nil {
		return err
	}
	if got == nil || !got.Same(r.want) {
		return fmt.Errorf("HA rule %s reads back as %q", r.want.ID, ruleText(got))
	}
	if len(got.Errors) > 0 {
		return fmt.Errorf("HA rule %s: PVE finds it infeasible: %v", r.want.ID, got.Errors)
	}
	return nil
}

// updateChange updates rule have to want, guarded by have's digest.
func (r *rulePlan) updateChange(have ha.Rule) (ansible.Change, error) {
	upd := r.want
	upd.Digest = have.Digest
	req, err := ha.UpdateRule(upd, r.g.major)
	if err != nil {
		return ansible.Change{}, err
	}
	what := fmt.Sprintf("update HA %s rule %s", r.want.Type, r.want.ID)
	return ansible.Change{Summary: what, Apply: func(ctx context.Context) error {
		return r.g.update(ctx, req, what, r.replan, func(ctx context.Context) (bool, error) { return r.verify(ctx) == nil, nil })
	}}, nil
}

// replan plans the update again from a fresh read of the rules, after
// PVE refused it because rules.cfg changed meanwhile.
func (r *rulePlan) replan(cfg haConfig) (apischema.Request, string, error) {
	have, ok := findRule(cfg.rules, r.want.ID)
	if !ok {
		return apischema.Request{}, "", fmt.Errorf("HA rule %s no longer exists", r.want.ID)
	}
	if have.Type != r.want.Type {
		return apischema.Request{}, "", fmt.Errorf("HA rule %s is a %s rule now, not %s", r.want.ID, have.Type, r.want.Type)
	}
	r.want = r.wantFrom(have, true)
	if r.want.Type == ha.NodeAffinity {
		r.g.rule = &r.want
	} else if r.slot < len(r.g.affinity) {
		r.g.affinity[r.slot] = r.want
	}
	if have.Same(r.want) {
		return apischema.Request{}, "", nil
	}
	upd := r.want
	upd.Digest = have.Digest
	req, err := ha.UpdateRule(upd, r.g.major)
	return req, "rule " + oneLine(ruleText(&r.want)), err
}

func (r *rulePlan) createChange() (ansible.Change, error) {
	req, err := ha.CreateRule(r.want, r.g.major)
	if err != nil {
		return ansible.Change{}, err
	}
	what := fmt.Sprintf("create HA %s rule %s (%s)", r.want.Type, r.want.ID, sidsText(r.want.Resources))
	return ansible.Change{Summary: what, Apply: func(ctx context.Context) error {
		return r.g.send(ctx, req, what, true, func(ctx context.Context) (bool, error) {
			got, err := r.g.readRule(ctx, r.want.ID)
			return got != nil, err
		})
	}}, nil
}

func (g *guestHA) removeRule(r ha.Rule) ansible.Change {
	what := fmt.Sprintf("remove HA %s rule %s", r.Type, r.ID)
	gone := func(ctx context.Context) (bool, error) {
		got, err := g.readRule(ctx, r.ID)
		return got == nil, err
	}
	return ansible.Change{
		ID: "ha:rule-remove:" + r.ID, Summary: what,
		Diff: ansible.TextDiff(rulesCfg+" ("+r.ID+")", ruleText(&r), ""),
		Apply: func(ctx context.Context) error {
			return g.send(ctx, ha.DeleteRule(r.ID), what, false, gone)
		},
		Verify: func(ctx context.Context) error {
			if ok, err := gone(ctx); err != nil || !ok {
				return fmt.Errorf("HA rule %s still exists (%v)", r.ID, err)
			}
			return nil
		},
	}
}

// planAffinity writes the guest's resource-affinity rules (PVE 9). Every
// guest a rule names must be an HA resource already (or be this one).
func (g *guestHA) planAffinity(ctx context.Context, cfg haConfig) ([]ansible.Change, error) {
	guests, err := g.guestTypes(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var changes []ansible.Change
	for i, a := range g.p.ResourceAffinity {
		id := a.Rule
		if id == "" {
			id = ha.RuleIDFor("gopve", g.sid) + "-" + a.Affinity
		}
		if seen[id] {
			return nil, fmt.Errorf("resource_affinity[%d]: rule %s is named twice; give each entry its own rule name", i, id)
		}
		seen[id] = true
		res := []ha.SID{g.sid}
		for _, s := range a.Resources {
			sid, err := ha.ParseSID(s)
			if err != nil {
				return nil, fmt.Errorf("resource_affinity[%d].resources: %w", i, err)
			}
			if !sid.Resolved() {
				t, ok := guests[sid.VMID]
				if !ok {
					return nil, fmt.Errorf("resource_affinity[%d].resources: no guest %d in the cluster", i, sid.VMID)
				}
				if sid, err = sid.Resolve(t); err != nil {
					return nil, fmt.Errorf("resource_affinity[%d].resources: %w", i, err)
				}
			}
			if _, ok := ha.FindResource(cfg.resources, sid); !ok && sid != g.sid {
				return nil, fmt.Errorf("resource_affinity[%d].resources: %s is not an HA resource; declare it with pve_ha first (a rule may only name HA resources)", i, sid)
			}
			res = withSID(res, sid)
		}
		if len(res) < 2 {
			return nil, fmt.Errorf("resource_affinity[%d].resources: a rule needs at least one other guest (PVE: rule is ineffective as there are less than two resources)", i)
		}
		have, exists := findRule(cfg.rules, id)
		if exists && have.Type != ha.ResourceAffinity {
			return nil, fmt.Errorf("resource_affinity[%d].rule: HA rule %s is a %s rule; PVE cannot change a rule's type", i, id, have.Type)
		}
		affinity := a.Affinity
		wantFrom := func(have ha.Rule, exists bool) ha.Rule {
			want := ha.Rule{ID: id, Type: ha.ResourceAffinity, Resources: res, Affinity: affinity}
			if exists {
				want.Comment = have.Comment
			}
			if g.p.Comment != nil {
				want.Comment = *g.p.Comment
			}
			return want
		}
		ch, err := g.planRule(have, exists, wantFrom)
		if err != nil {
			return nil, err
		}
		changes = append(changes, ch...)
	}
	return changes, nil
}

func (g *guestHA) guestTypes(ctx context.Context) (map[int]string, error) {
	list, err := clusterguests.Guests(ctx, g.c)
	if err != nil {
		return nil, err
	}
	out := map[int]string{}
	for _, x := range list {
		out[x.VMID] = x.Type
	}
	return out, nil
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
