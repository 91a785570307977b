package pveha

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
)

// Digest-guarded updates of the HA config (issue 23 §5).
//
// An update of an HA resource, group or rule sends the whole object as the
// module planned it from what it read: without the digest of that read,
// two runs adding a guest each to one rule both succeed and the rule ends
// with one guest. So every PUT carries the digest of the file it was
// planned from (PVE 8 and 9 take digest on PUT /cluster/ha/resources/{sid},
// /groups/{group}, /rules/{rule}), and PVE checks it under the HA domain
// lock before anything is written (pve-ha-manager API2/HA/*.pm update:
// PVE::SectionConfig::assert_if_modified, "detected modified configuration
// - file changed by other user? Try again."): such a refusal wrote
// nothing. The module then reads the HA config again, plans that one
// object anew from it (the other run's guest stays in the rule), and sends
// it once more with the fresh digest; a second refusal fails the task,
// naming what changed meanwhile. Nothing is ever sent blindly again.

// haFile is the /etc/pve/ha file an HA API path writes.
func haFile(path string) string {
	switch {
	case strings.HasPrefix(path, "/cluster/ha/rules"):
		return rulesCfg
	case strings.HasPrefix(path, "/cluster/ha/groups"):
		return groupsCfg
	case strings.HasPrefix(path, "/cluster/ha/resources"):
		return resourcesCfg
	}
	return ""
}

// markWritten records that this run sent a write to req's file (a
// resource's removal purges it from the rules on PVE 9 too): the digest
// of a read made before it is stale by this run's own write.
func (g *guestHA) markWritten(req apischema.Request) {
	f := haFile(req.Path)
	if f == "" {
		return
	}
	if g.wrote == nil {
		g.wrote = map[string]bool{}
	}
	g.wrote[f] = true
	if f == resourcesCfg && req.Method == "DELETE" && g.major >= 9 {
		g.wrote[rulesCfg] = true
	}
}

// replanFunc plans one object's update again from cfg: the PUT (guarded by
// cfg's digest) and what it changes, or an empty request when cfg already
// has everything the task asks of the object.
type replanFunc func(cfg haConfig) (req apischema.Request, changes string, err error)

// update sends one digest-guarded PUT of an HA object (see above): req as
// planned, or planned again first when an earlier change of this run wrote
// the same file.
func (g *guestHA) update(ctx context.Context, req apischema.Request, what string, replan replanFunc, settle func(context.Context) (bool, error)) error {
	file := haFile(req.Path)
	if g.wrote[file] {
		// This run's own earlier write changed the file: plan from a
		// fresh read so the digest is the file's again.
		cfg, err := g.readHA(ctx)
		if err != nil {
			return ansible.NothingChanged(fmt.Errorf("%s: reading the HA config again after this run's earlier write to %s: %w", what, file, err))
		}
		g.seen = cfg
		if req, _, err = replan(cfg); err != nil {
			return ansible.NothingChanged(fmt.Errorf("%s: %w", what, err))
		}
		if req.Path == "" {
			return nil // an earlier change of this run already did it
		}
	}
	err := g.send(ctx, req, what, false, settle)
	if !pveapi.IsModified(err) {
		return err
	}
	refused := fmt.Errorf("%w: %s changed between this task's read and its write, and PVE wrote nothing", err, file)
	fresh, rerr := g.readHA(ctx)
	if rerr != nil {
		return ansible.NothingChanged(fmt.Errorf("%w; reading it again failed: %v", refused, rerr))
	}
	meanwhile := describeHAChange(file, g.seen, fresh)
	g.seen = fresh
	again, changes, perr := replan(fresh)
	if perr != nil {
		return ansible.NothingChanged(fmt.Errorf("%w (%s); read again: %v", refused, meanwhile, perr))
	}
	if again.Path == "" {
		g.r.Warn(fmt.Sprintf("%s: PVE refused the update because %s had changed since it was read (detected modified configuration; meanwhile %s) and wrote nothing; read again, it already is as asked, so nothing was sent again", what, file, meanwhile))
		return nil
	}
	g.r.Warn(fmt.Sprintf("%s: PVE refused the update because %s had changed since it was read (detected modified configuration; meanwhile %s) and wrote nothing; planned again from a fresh read (%s) and sent once with its digest, keeping the other change", what, file, meanwhile, changes))
	err = g.send(ctx, again, what, false, settle)
	if pveapi.IsModified(err) {
		third, rerr := g.readHA(ctx)
		again := "it could not be read again: " + fmt.Sprint(rerr)
		if rerr == nil {
			again = describeHAChange(file, fresh, third)
		}
		return ansible.NothingChanged(fmt.Errorf("%w: %s changed again between this task's second read and its write (first %s; then %s); this task wrote nothing to it; run it again once the other writer is done", err, file, meanwhile, again))
	}
	return err
}

// describeHAChange names what differs in file between two reads of the HA
// config: the objects added, removed or changed, each as it reads now.
func describeHAChange(file string, before, after haConfig) string {
	texts := func(c haConfig) (map[string]string, string) {
		out := map[string]string{}
		digest := ""
		switch file {
		case rulesCfg:
			for _, r := range c.rules {
				out["rule "+r.ID] = oneLine(ruleText(&r))
				digest = r.Digest
			}
		case groupsCfg:
			for _, gr := range c.groups {
				out["group "+gr.Name] = oneLine(groupText(&gr))
				digest = gr.Digest
			}
		case resourcesCfg:
			for _, r := range c.resources {
				out["resource "+r.SID.String()] = oneLine(resourceText(&r))
				digest = r.Digest
			}
		}
		return out, digest
	}
	b, bd := texts(before)
	a, ad := texts(after)
	var parts []string
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		was, had := b[k]
		now, has := a[k]
		switch {
		case !had:
			parts = append(parts, fmt.Sprintf("%s was added (%s)", k, now))
		case !has:
			parts = append(parts, fmt.Sprintf("%s was removed", k))
		case was != now:
			parts = append(parts, fmt.Sprintf("%s changed (was: %s; now: %s)", k, was, now))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%s was rewritten without a change this module reads (digest %s → %s)", file, short(bd), short(ad))
	}
	return strings.Join(parts, "; ")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func short(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	if d == "" {
		return "none"
	}
	return d
}
