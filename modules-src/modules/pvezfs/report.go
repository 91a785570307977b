package pvezfs

import (
	"context"
	"slices"

	"github.com/gopve/proxmox/modules-src/host"
	"github.com/gopve/proxmox/modules-src/host/blockdev"
	"github.com/gopve/proxmox/modules-src/host/zfs"
)

// poolReport is the pool as read back from the node.
type poolReport struct {
	Name       string              `json:"name"`
	Exists     bool                `json:"exists"`
	Health     string              `json:"health,omitempty"`
	Size       uint64              `json:"size,omitempty"`
	Allocated  uint64              `json:"allocated,omitempty"`
	Free       uint64              `json:"free,omitempty"`
	Layout     string              `json:"layout,omitempty"`
	Vdevs      []zfs.Vdev          `json:"vdevs"`
	Ashift     string              `json:"ashift,omitempty"`
	Properties map[string]zfs.Prop `json:"properties"`
}

// report reads the pool back (a real run) or describes what check mode
// predicts, and sets the result keys. Read errors leave fields empty rather
// than fail a run whose changes were all verified.
func (m *pool) report(ctx context.Context) {
	devs := m.devices
	if devs == nil {
		devs = []blockdev.Device{}
	}
	m.r.Set("devices", devs)
	rep := poolReport{Name: m.p.Name, Vdevs: []zfs.Vdev{}, Properties: map[string]zfs.Prop{}}
	z := m.zfs()
	exists, err := z.Exists(ctx, m.p.Name)
	if err == nil && exists {
		rep.Exists = true
		if u, err := z.Usage(ctx, m.p.Name); err == nil {
			rep.Health, rep.Size, rep.Allocated, rep.Free = u.Health, u.Size, u.Alloc, u.Free
		}
		if st, err := z.Status(ctx, m.p.Name); err == nil {
			rep.Layout, rep.Vdevs = st.Layout(), st.Vdevs
		}
		if a, err := z.PoolProp(ctx, m.p.Name, "ashift"); err == nil {
			rep.Ashift = a
		}
		keys := []string{"compression", "atime", "xattr", "acltype", "mountpoint", "mounted"}
		for k := range m.props {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		if props, err := z.Props(ctx, m.p.Name, keys); err == nil {
			rep.Properties = props
		}
	}
	m.r.Set("pool", rep)
	timer := ""
	if m.p.Scrub != "disabled" && m.p.State != "absent" {
		timer = scrubUnit(m.p.Scrub, m.p.Name)
	}
	m.r.Set("scrub_timer", timer)
	if m.r.Verbosity() >= 2 {
		m.r.Set("commands", host.CommandLog(m.env.Runner))
	}
}
