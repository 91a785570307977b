package qemu

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi"
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
