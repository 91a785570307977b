package pvezfs

import (
	"context"

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

// reportProps are the dataset properties the result always shows, with
// the ones the task asks for.
var reportProps = []string{"compression", "atime", "xattr", "acltype", "mountpoint", "mounted"}

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
	// The reads are the plan's (the memo answers them) in a run that
	// changed nothing, and fresh from the node after any change.
	z := m.zfs()
	tree, exists, err := z.Tree(ctx, m.p.Name)
	if err == nil && exists {
		rep.Exists = true
		rep.Health, rep.Size, rep.Allocated, rep.Free = tree.Health, tree.Size, tree.Alloc, tree.Free
		rep.Ashift = tree.Ashift
		if st := tree.Status(); st.Vdevs != nil {
			rep.Layout, rep.Vdevs = st.Layout(), st.Vdevs
		}
		if props, err := z.Props(ctx, m.p.Name, m.propKeys()); err == nil {
			for k, v := range props {
				if _, wanted := m.props[k]; wanted || contains(reportProps, k) {
					rep.Properties[k] = v
				}
			}
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
