package guests

import (
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/volumes"
)

// Model is the guest model's view of a simulator: its methods are the
// guests' operations; it embeds the volume model (a guest's disks are
// volumes) and, through it, the *core.Sim.
type Model struct{ volumes.Model }

// New is the guest model of s.
func New(s *core.Sim) Model { return Model{volumes.Model{Sim: s}} }

// Register gives core what it needs of the guest model and cannot import:
// pve-guests' onboot start when a node powers on (OnNodePower), and adds
// the control API's guest fixture route (Fixture). pvesim.New calls it
// before any backend's Register, so that onboot runs before HA's reaction
// to the same power-on.
func Register(s *core.Sim) {
	m := New(s)
	s.HandleControl("POST /v1/nodes/{node}/guests", NewFixture(s).ctlAddGuest)
	s.OnNodePower(func(node string, online bool) {
		if online {
			m.startOnbootLocked(node)
		}
	})
}
