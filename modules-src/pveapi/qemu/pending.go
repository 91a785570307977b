package qemu

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/guest"
)

// PendingItem is one row of GET …/pending (config_with_pending_array).
type PendingItem struct {
	Key        string
	Value      string // the value in force now
	HasValue   bool
	Pending    string // the value that waits (for a restart, or a hotplug that failed)
	HasPending bool
	Delete     int // 1: the key will be removed; 2: removed by force
}

// Pending is a VM's configuration as live values and pending changes.
type Pending struct {
	Items  []PendingItem
	Digest string // config_with_pending_array lists the digest as a key
}

type pendingRow struct {
	Key     string `json:"key"`
	Value   any    `json:"value"`
	Pending any    `json:"pending"`
	Delete  int    `json:"delete"`
}

// GetPending reads GET /nodes/{node}/qemu/{vmid}/pending.
func GetPending(ctx context.Context, g pveapi.Getter, node string, vmid int) (Pending, error) {
	return GetPendingOf(ctx, g, "qemu", node, vmid)
}

// GetPendingOf reads a guest's pending view, api being qemu or lxc:
// pve-container's vm_pending answers as qemu-server's does (both are
// PVE::GuestHelpers::config_with_pending_array).
func GetPendingOf(ctx context.Context, g pveapi.Getter, api, node string, vmid int) (Pending, error) {
	var rows []pendingRow
	if err := g.Get(ctx, pveapi.Path("/nodes/%s/%s/%s/pending", node, api, fmt.Sprint(vmid)), nil, &rows); err != nil {
		return Pending{}, err
	}
	var p Pending
	for _, r := range rows {
		if r.Key == "digest" {
			p.Digest = pveapi.String(r.Value)
			continue
		}
		p.Items = append(p.Items, PendingItem{Key: r.Key, Value: pveapi.String(r.Value), HasValue: r.Value != nil,
			Pending: pveapi.String(r.Pending), HasPending: r.Pending != nil, Delete: r.Delete})
	}
	slices.SortFunc(p.Items, func(a, b PendingItem) int { return strings.Compare(a.Key, b.Key) })
	return p, nil
}

// Live is the configuration in force now (the `current=1` view).
func (p Pending) Live() Config {
	c := Config{Values: map[string]string{}, Digest: p.Digest}
	for _, it := range p.Items {
		if it.HasValue {
			c.Values[it.Key] = it.Value
		}
	}
	return c
}

// Next is the configuration after the pending changes apply (PVE's
// default config view).
func (p Pending) Next() Config {
	c := Config{Values: map[string]string{}, Digest: p.Digest}
	for _, it := range p.Items {
		switch {
		case it.Delete > 0:
		case it.HasPending:
			c.Values[it.Key] = it.Pending
		case it.HasValue:
			c.Values[it.Key] = it.Value
		}
	}
	return c
}

// Changes are the keys whose change is not in force yet: a pending value
// or a pending removal. A module reports them as pending with
// restart_required, never as done (K10).
func (p Pending) Changes() []PendingItem {
	var out []PendingItem
	for _, it := range p.Items {
		if it.HasPending || it.Delete > 0 {
			out = append(out, it)
		}
	}
	return out
}

// Row is the item as a module returns it in `pending`: the key, the value
// in force and the one that waits where there is one, delete where the key
// goes. pve_clone and pve_container return the same rows because both
// read PVE::GuestHelpers::config_with_pending_array.
func (it PendingItem) Row() map[string]any {
	row := map[string]any{"key": it.Key}
	if it.HasValue {
		row["value"] = it.Value
	}
	if it.HasPending {
		row["pending"] = it.Pending
	}
	if it.Delete > 0 {
		row["delete"] = true
	}
	return row
}

// State is a guest (VM or CT) as a module's config and power stages plan
// against it: observed, or predicted in check mode. Both kinds have the
// same pending view (config_with_pending_array), so one type serves both.
type State struct {
	Node    string
	Next    Config // PVE's default view: pending values applied
	Live    Config // current=1: what runs now
	Pending []PendingItem
	Running bool
	HA      bool
}

// ReadState reads the guest once: GET …/pending gives the live values,
// the pending ones and the digest (one read for both views). running and
// ha come from the caller (the guest list, or what it knows of them).
func ReadState(ctx context.Context, g pveapi.Getter, k guest.Kind, node string, vmid int, running, ha bool) (State, error) {
	p, err := GetPendingOf(ctx, g, k.API, node, vmid)
	if err != nil {
		return State{}, fmt.Errorf("cannot read %s %d on %s: %w", k.Word, vmid, node, err)
	}
	return State{Node: node, Next: p.Next(), Live: p.Live(), Pending: p.Changes(), Running: running, HA: ha}, nil
}

// Final is the config a module returns for st: what runs now on a running
// guest, with the waiting changes apart.
func (st State) Final() (map[string]string, []PendingItem) {
	if st.Running {
		return st.Live.Values, st.Pending
	}
	return st.Next.Values, st.Pending
}

// WaitUnlocked waits, bounded by the run's deadline, until the new
// guest's config (read) is present on node and unlocked: a create or
// clone task can end before its config shows or while it is still locked
// (K4, K5). after paces the reads.
func WaitUnlocked(ctx context.Context, k guest.Kind, vmid int, node string, read func(context.Context) (Config, error), after func() <-chan time.Time) error {
	var last string
	for {
		cfg, err := read(ctx)
		switch {
		case err == nil && cfg.Lock() == "":
			return nil
		case err == nil:
			last = fmt.Sprintf("the config is locked (%s)", cfg.Lock())
		default:
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s %d: its config never became present and unlocked on %s before the deadline (last: %s)", k.Word, vmid, node, last)
		case <-after():
		}
	}
}

// VerifyCreated proves a guest this run made, once read finds its config
// on node: readable, unlocked, not a template, and its name key (a VM's
// name, a CT's hostname) holding name ("" asks nothing: a VM created
// without one).
func VerifyCreated(ctx context.Context, k guest.Kind, vmid int, node string, read func(context.Context) (Config, error), nameKey, name string) error {
	cfg, err := read(ctx)
	if err != nil {
		return fmt.Errorf("%s %d is not readable on %s after its creation: %w", k.Word, vmid, node, err)
	}
	if cfg.Lock() != "" || cfg.Template() {
		return fmt.Errorf("%s %d on %s: lock %q, template %v after its creation", k.Word, vmid, node, cfg.Lock(), cfg.Template())
	}
	if name != "" && cfg.Values[nameKey] != name {
		return fmt.Errorf("%s %d on %s has %s %q, not %q", k.Word, vmid, node, nameKey, cfg.Values[nameKey], name)
	}
	return nil
}

// StillDiffers is a settings change's read-back that differs still: each
// key set with what was sent and what reads back (values), then each
// volume not grown (grown: "key size N"), sorted; nil when nothing does.
func StillDiffers(k guest.Kind, vmid int, set, values map[string]string, grown []string) error {
	if len(set) == 0 && len(grown) == 0 {
		return nil
	}
	keys := slices.Clone(grown)
	for key, sent := range set {
		keys = append(keys, fmt.Sprintf("%s=%q (read back %q)", key, sent, values[key]))
	}
	slices.Sort(keys)
	return fmt.Errorf("%s %d read back after the update still differs: %s", k.Word, vmid, strings.Join(keys, "; "))
}
