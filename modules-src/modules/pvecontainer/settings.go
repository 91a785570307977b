package pvecontainer

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// resize is one volume to grow (PUT …/resize, a task each).
type resize struct {
	key      string // rootfs, mpN
	from, to int64
}

// settingsPlan is what differs between a config and the task: the keys to
// send in one PUT, the volumes to grow, and the config once both are done.
type settingsPlan struct {
	set     map[string]string
	resizes []resize
	after   map[string]string
}

func (p settingsPlan) empty() bool { return len(p.set) == 0 && len(p.resizes) == 0 }

// newVolume names the volume PVE allocates for key on storage (predict.go).
type newVolume func(key, storage string) string

// planSettings compares cur (PVE's default view: pending values applied)
// with the task. Refusals (a shrink, a volume on another storage) come
// here, before any write; a change of unprivileged is checkUnprivileged's.
func planSettings(cur qemu.Config, w *want, name newVolume) (settingsPlan, error) {
	p := settingsPlan{set: map[string]string{}, after: maps.Clone(cur.Values)}
	for _, k := range slices.Sorted(maps.Keys(w.scalars)) {
		v := w.scalars[k]
		if k == "description" {
			if strings.TrimRight(cur.Values[k], "\n") != strings.TrimRight(v, "\n") {
				p.set[k] = v
				p.after[k] = ctDescription(v)
			}
			continue
		}
		if cur.Values[k] != v {
			p.set[k], p.after[k] = v, v
		}
	}
	if w.tags != nil {
		have := slices.Sorted(slices.Values(pveformat.SplitList(strings.ReplaceAll(cur.Values["tags"], ";", ","))))
		if !slices.Equal(have, w.tags) {
			t := strings.Join(w.tags, ";")
			p.set["tags"], p.after["tags"] = t, t
		}
	}
	for _, k := range slices.Sorted(maps.Keys(w.nets)) {
		if err := p.planNet(cur, k, w.nets[k]); err != nil {
			return p, err
		}
	}
	if w.features != nil {
		have, err := pveformat.Parse(cur.Values["features"], featureShape)
		if err != nil {
			return p, fmt.Errorf("features: the container's %q: %w", cur.Values["features"], err)
		}
		if merged, changed := merge(have, w.features); changed {
			s, _ := pveformat.Print(merged, featureShape)
			p.set["features"], p.after["features"] = s, s
		}
	}
	if w.rootfs != nil {
		if err := p.planVolume(cur, "rootfs", "rootfs", *w.rootfs, name); err != nil {
			return p, err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(w.mounts)) {
		if err := p.planVolume(cur, k, "mounts."+k, w.mounts[k], name); err != nil {
			return p, err
		}
	}
	return p, nil
}

// checkUnprivileged: PVE keeps unprivileged read-only after creation
// (update_pct_config: "unable to modify read-only option").
func checkUnprivileged(cur qemu.Config, w *want) error {
	if w.unpriv == nil {
		return nil
	}
	have := cur.Values["unprivileged"] == "1"
	if have != *w.unpriv {
		return fmt.Errorf("unprivileged: the container is %s and PVE keeps that read-only after creation (unable to modify read-only option: 'unprivileged'); only a new container takes it: nothing was changed",
			map[bool]string{true: "unprivileged", false: "privileged"}[have])
	}
	return nil
}

// planNet merges the given keys into the NIC that is there; its MAC is
// kept as PVE has it (K16). A new NIC gets its MAC from PVE.
func (p *settingsPlan) planNet(cur qemu.Config, key string, given pveformat.Props) error {
	old, ok := cur.Values[key]
	if !ok {
		for _, need := range []string{"name", "bridge"} {
			if _, has := given.Get(need); !has {
				return fmt.Errorf("nets.%s: a new NIC needs %s", key, need)
			}
		}
		n := slices.Clone(given)
		if _, has := n.Get("type"); !has {
			n.Set("type", "veth")
		}
		p.set[key] = printNet(given)
		if _, has := n.Get("hwaddr"); !has {
			n.Set("hwaddr", AssignedAtCreation)
		}
		p.after[key] = printNet(n)
		return nil
	}
	have, err := pveformat.Parse(old, netShape)
	if err != nil {
		return fmt.Errorf("nets.%s: the container's %q: %w", key, old, err)
	}
	if merged, changed := merge(have, given); changed {
		p.set[key] = printNet(merged)
		p.after[key] = p.set[key]
	}
	return nil
}

// planVolume grows a volume (never shrinks, never moves it) and merges its
// options; a new mount point is allocated on its storage by the PUT.
func (p *settingsPlan) planVolume(cur qemu.Config, key, option string, v volWant, name newVolume) error {
	old, ok := cur.Values[key]
	if !ok {
		if v.storage == "" || v.size == 0 {
			return fmt.Errorf("%s: a new mount point needs storage and size", option)
		}
		alloc := append(pveformat.Props{{Key: "volume", Value: v.storage + ":" + gib(v.size)}}, v.opts...)
		s, _ := pveformat.Print(alloc, volumeShape)
		p.set[key] = s
		done := append(pveformat.Props{{Key: "volume", Value: name(key, v.storage)}}, v.opts...)
		done.Set("size", pveformat.FormatSize(v.size))
		p.after[key], _ = pveformat.Print(done, volumeShape)
		return nil
	}
	have, err := pveformat.Parse(old, volumeShape)
	if err != nil {
		return fmt.Errorf("%s: the container's %q: %w", option, old, err)
	}
	vol, _ := have.Get("volume")
	store, _, _ := strings.Cut(vol, ":")
	if v.storage != "" && v.storage != store {
		return fmt.Errorf("%s.storage: the volume is %s, on storage '%s'; this module never moves a volume (pct move-volume does): nothing was changed", option, vol, store)
	}
	merged, changed := merge(have, v.opts)
	if changed {
		p.set[key], _ = pveformat.Print(merged, volumeShape)
		p.after[key] = p.set[key]
	}
	if v.size == 0 {
		return nil
	}
	sz, _ := merged.Get("size")
	now, err := pveformat.ParseSize(sz)
	if err != nil {
		now = 0
	}
	switch {
	case v.size < now:
		return fmt.Errorf("%s.size: %s is smaller than the volume's %s (%s); PVE cannot shrink it (unable to shrink disk size): nothing was changed", option, pveformat.FormatSize(v.size), pveformat.FormatSize(now), vol)
	case v.size > now:
		p.resizes = append(p.resizes, resize{key: key, from: now, to: v.size})
		merged.Set("size", pveformat.FormatSize(v.size))
		p.after[key], _ = pveformat.Print(merged, volumeShape)
	}
	return nil
}

// merge sets the given keys into have; changed when any differs.
func merge(have, given pveformat.Props) (pveformat.Props, bool) {
	out := slices.Clone(have)
	changed := false
	for _, kv := range given {
		if v, ok := out.Get(kv.Key); !ok || v != kv.Value {
			out.Set(kv.Key, kv.Value)
			changed = true
		}
	}
	return out, changed
}

// ctDescription is a description as pve-container reads it back: each
// line of the comment it is stored as, with a newline (LXC/Config.pm
// parse_pct_config), so "web" comes back "web\n".
func ctDescription(v string) string {
	if v == "" {
		return ""
	}
	return strings.TrimRight(v, "\n") + "\n"
}
