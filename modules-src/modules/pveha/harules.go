package pveha

// HA rules (PVE 9): the guest's node-affinity rule, which adopts the rule
// PVE made from its group when it migrated groups, and its resource-affinity
// rules.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
	"github.com/gopve/proxmox/modules-src/pveapi/ha"
)

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
