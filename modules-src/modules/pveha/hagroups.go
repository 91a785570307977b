package pveha

// HA groups (PVE 8; an unmigrated PVE 9 cluster's too): the guest's group
// planned before its resource and read back; its removal goes with the
// resource's (planHAAbsent, hares.go).

import (
	"context"
	"fmt"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
	"github.com/gopve/proxmox/modules-src/pveapi/ha"
)

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
