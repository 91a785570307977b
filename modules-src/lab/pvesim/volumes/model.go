package volumes

import "github.com/gopve/proxmox/modules-src/lab/pvesim/core"

// Model is the volume model's view of a simulator: its methods are the
// volumes' operations, and it reaches the Sim's state, lock and /etc/pve
// through the embedded *core.Sim.
type Model struct{ *core.Sim }
