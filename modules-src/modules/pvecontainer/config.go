package pvecontainer

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
	"github.com/gopve/proxmox/modules-src/pveapi/guest"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// planConfig converges an existing CT (a CT this run creates got every
// setting in its create call: nothing is left to plan, the prediction
// says so) in one PUT …/config (synchronous, with the digest of the read),
// then one resize task per volume to grow.
func (v *ct) planConfig(ctx context.Context, w *ansible.World) ([]ansible.Change, error) {
	// Read once by stage container; one made by this run is stopped, not
	// under HA.
	st, err := pveansible.GuestState(ctx, w, ctKey(v.p.VMID), v.read, func(ctx context.Context) (qemu.State, error) {
		return v.observe(ctx, v.node, false, false)
	})
	if err != nil {
		return nil, err
	}
	v.node = st.Node
	v.setFinal(st)
	name, err := v.volumeNamer(ctx, st.Next)
	if err != nil {
		return nil, err
	}
	plan, err := planSettings(st.Next, v.w, name)
	if err != nil || plan.empty() {
		return nil, err
	}
	put, resizes, err := v.requests(st, plan)
	if err != nil {
		return nil, err
	}
	what := slices.Sorted(maps.Keys(plan.set))
	for _, r := range plan.resizes {
		what = append(what, fmt.Sprintf("%s %s → %s", r.key, pveformat.FormatSize(r.from), pveformat.FormatSize(r.to)))
	}
	return []ansible.Change{{
		ID:      "ct:config",
		Summary: fmt.Sprintf("configure CT %d: %s", v.p.VMID, strings.Join(what, ", ")),
		Diff:    ansible.TextDiff(confHeader(st.Node, v.p.VMID), renderConf(st.Next.Values), renderConf(plan.after)),
		Apply: func(ctx context.Context) error {
			if len(plan.set) > 0 {
				if err := v.send(ctx, put, pveapi.Write{What: fmt.Sprintf("update the config of CT %d", v.p.VMID),
					Settle: func(ctx context.Context) (bool, error) { return v.applied(ctx, st, "") }}, ""); err != nil {
					return err
				}
			}
			for i, r := range resizes {
				key := plan.resizes[i].key
				if err := v.send(ctx, r, pveapi.Write{What: fmt.Sprintf("grow %s of CT %d to %s", key, v.p.VMID, pveformat.FormatSize(plan.resizes[i].to)),
					Settle: func(ctx context.Context) (bool, error) { return v.applied(ctx, st, key) }}, ""); err != nil {
					return err
				}
			}
			return nil
		},
		Verify: func(ctx context.Context) error { return v.verifySettings(ctx, st) },
		// What a running CT keeps for its next start: written, read back,
		// never called applied.
		Pending: func() ([]string, string) { return v.waiting(plan), "the container's next start" },
		Predict: func(w *ansible.World) {
			next := qemu.Config{Values: plan.after}
			live, pending := next, st.Pending
			if st.Running {
				live, pending = predictHotplug(st, plan)
			}
			n := qemu.State{Node: st.Node, Next: next, Live: live, Pending: pending, Running: st.Running, HA: st.HA}
			ctKey(v.p.VMID).Predict(w, n)
			v.setFinal(n)
		},
	}}, nil
}

// volumeNamer reads the storages only when a new mount point needs a
// volume name (a no-op run stays at three reads).
func (v *ct) volumeNamer(ctx context.Context, cur qemu.Config) (newVolume, error) {
	for k := range v.w.mounts {
		if _, ok := cur.Values[k]; !ok && v.storages == nil {
			s, err := readStorages(ctx, v.c)
			if err != nil {
				return nil, err
			}
			v.storages = s
		}
	}
	return v.nameVolume(usedDisks(cur.Values)), nil
}

// requests are the PUT and the resizes, checked against the schema.
func (v *ct) requests(st qemu.State, plan settingsPlan) (apischema.Request, []apischema.Request, error) {
	id := strconv.Itoa(v.p.VMID)
	q := url.Values{}
	for k, val := range plan.set {
		q.Set(k, val)
	}
	if st.Next.Digest != "" {
		q.Set("digest", st.Next.Digest)
	}
	put := apischema.New(http.MethodPut, "/nodes/{node}/lxc/{vmid}/config", q, st.Node, id)
	var resizes []apischema.Request
	for _, r := range plan.resizes {
		req := apischema.New(http.MethodPut, "/nodes/{node}/lxc/{vmid}/resize",
			url.Values{"disk": {r.key}, "size": {strconv.FormatInt(r.to, 10)}}, st.Node, id)
		req.Task = &apischema.TaskHint{Node: st.Node, Types: []string{"resize"}, ID: id}
		resizes = append(resizes, req)
	}
	for _, r := range append([]apischema.Request{put}, resizes...) {
		if len(plan.set) == 0 && r.Path == put.Path && r.Method == put.Method {
			continue
		}
		if err := r.Validate(v.version); err != nil {
			return put, nil, v.schemaError(err)
		}
	}
	return put, resizes, nil
}

// applied settles a lost write by a read: for the config update, none of
// its keys is left to set; for a resize, key is no longer to grow.
func (v *ct) applied(ctx context.Context, st qemu.State, key string) (bool, error) {
	now, err := v.observe(ctx, st.Node, st.Running, st.HA)
	if err != nil {
		return false, err
	}
	p, err := planSettings(now.Next, v.w, v.nameVolume(usedDisks(now.Next.Values)))
	if err != nil {
		return false, err
	}
	if key != "" {
		return !slices.ContainsFunc(p.resizes, func(r resize) bool { return r.key == key }), nil
	}
	return len(p.set) == 0, nil
}

// verifySettings reads the CT back and plans again: nothing may be left.
// On a running CT what PVE keeps pending is reported, not claimed live.
func (v *ct) verifySettings(ctx context.Context, st qemu.State) error {
	now, err := v.observe(ctx, st.Node, st.Running, st.HA)
	if err != nil {
		return err
	}
	v.setFinal(now)
	p, err := planSettings(now.Next, v.w, v.nameVolume(usedDisks(now.Next.Values)))
	if err != nil {
		return err
	}
	var grown []string
	for _, r := range p.resizes {
		grown = append(grown, fmt.Sprintf("%s size %s", r.key, pveformat.FormatSize(r.from)))
	}
	if err := qemu.StillDiffers(guest.CT, v.p.VMID, p.set, now.Next.Values, grown); err != nil {
		return err
	}
	if v.read != nil {
		v.read.Next, v.read.Live, v.read.Pending = now.Next, now.Live, now.Pending
	}
	return nil
}

// waiting are the keys of this change the CT's pending section holds.
func (v *ct) waiting(plan settingsPlan) []string {
	var out []string
	for _, it := range v.pending {
		if _, ours := plan.set[it.Key]; ours && (it.HasPending || it.Delete > 0) {
			out = append(out, it.Key)
		}
	}
	slices.Sort(out)
	return out
}

// ctHotplugged is what pve-container applies to a running CT at once
// (LXC/Config.pm $LXC_FASTPLUG_OPTIONS and vmconfig_hotplug_pending:
// memory/swap through the cgroup, NICs, a mount point whose key is new);
// the rest waits for the next start.
func ctHotplugged(cur map[string]string, key string) bool {
	switch key {
	case "description", "onboot", "startup", "protection", "hostname", "hookscript", "cores", "tags", "memory", "swap", "cpulimit", "cpuunits":
		return true
	}
	if netKeyRe.MatchString(key) {
		return true
	}
	if mountKeyRe.MatchString(key) {
		_, exists := cur[key]
		return !exists
	}
	return false
}

// predictHotplug is the running CT after the update: hot-plugged keys
// live, the others pending. A resize is live at once.
func predictHotplug(st qemu.State, plan settingsPlan) (qemu.Config, []qemu.PendingItem) {
	live := maps.Clone(st.Live.Values)
	pending := slices.Clone(st.Pending)
	for _, k := range slices.Sorted(maps.Keys(plan.set)) {
		if ctHotplugged(st.Live.Values, k) {
			live[k] = plan.after[k]
			continue
		}
		old, had := st.Live.Values[k]
		pending = slices.DeleteFunc(pending, func(it qemu.PendingItem) bool { return it.Key == k })
		pending = append(pending, qemu.PendingItem{Key: k, Value: old, HasValue: had, Pending: plan.set[k], HasPending: true})
	}
	for _, r := range plan.resizes {
		live[r.key] = plan.after[r.key]
	}
	slices.SortFunc(pending, func(a, b qemu.PendingItem) int { return strings.Compare(a.Key, b.Key) })
	return qemu.Config{Values: live}, pending
}
