package pvesim

import (
	"github.com/gopve/proxmox/modules-src/lab/pvesim/accesssim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/backupsim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/clustersim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/controlapi"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guests"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/hasim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/lxcsim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/poolsim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemusim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/replsim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storagesim"
)

// Sim is the simulator as its users (labctl, labtest, the modules' tests)
// drive it: core's Sim (nodes and their power, the request log, faults,
// /etc/pve files) and the parts of the Go API that the backends and
// models own, the stand-ins of pveum (accesssim.Pveum: users, tokens,
// ACLs) and pvecm (clustersim.Pvecm: create, add, expected, status), the
// guest fixture (guests.Fixture: AddGuest, bridges, devices a guest holds)
// and pvestatd (storagesim.Pvestatd: StatdCycle, a cycle run at once). A
// caller that needs the *core.Sim takes the embedded field, Sim.
type Sim struct {
	*core.Sim
	accesssim.Pveum
	clustersim.Pvecm
	guests.Fixture
	storagesim.Pvestatd
}

// The simulator's Go API types, as its users name them. Most live in core,
// which every backend imports; this package only wires the models and
// backends to it (New).
type (
	Config       = core.Config
	NodeConfig   = core.NodeConfig
	Fault        = core.Fault
	FaultKind    = core.FaultKind
	Faults       = core.Faults
	Request      = core.Request
	GuestSpec    = guests.GuestSpec
	TokenSpec    = accesssim.TokenSpec
	StorageInfo  = core.StorageInfo
	StorageUsage = core.StorageUsage
	Volume       = core.Volume
	NodeVersion  = core.NodeVersion
	RemoteStore  = core.RemoteStore
	NodeInfo     = core.NodeInfo
	APIError     = core.APIError
)

// Fault kinds (core.Fault's Kind).
const (
	FaultLatency         = core.FaultLatency
	FaultError           = core.FaultError
	FaultReset           = core.FaultReset
	FaultHang            = core.FaultHang
	FaultLock            = core.FaultLock
	FaultTaskFail        = core.FaultTaskFail
	FaultSlowConfig      = core.FaultSlowConfig
	FaultLostAnswer      = core.FaultLostAnswer
	FaultSlowLocked      = core.FaultSlowLocked
	FaultFinishJoin      = core.FaultFinishJoin
	FaultMigrateAbort    = core.FaultMigrateAbort
	FaultMigrateProblems = core.FaultMigrateProblems
)

// Defaults of Config, and the lab CLI's marker header.
const (
	DefaultAuthDelay     = core.DefaultAuthDelay
	DefaultTaskDuration  = core.DefaultTaskDuration
	DefaultRestartWindow = core.DefaultRestartWindow
	DefaultLockTimeout   = core.DefaultLockTimeout
	DefaultPort          = core.DefaultPort
	CLIHeader            = core.CLIHeader
)

// New loads the lab's simulator state from cfg.Dir, or creates it (fresh
// standalone nodes, new certificates, new root password and lab token),
// with every backend's endpoints. It holds an exclusive lock on the lab
// until Close.
func New(cfg Config) (*Sim, error) {
	s, err := core.New(cfg)
	if err != nil {
		return nil, err
	}
	guests.Register(s) // first: a node's onboot start precedes HA's reaction to its power-on
	accesssim.Register(s)
	backupsim.Register(s)
	clustersim.Register(s)
	lxcsim.Register(s)
	poolsim.Register(s)
	qemusim.Register(s)
	storagesim.Register(s)
	replsim.Register(s)
	hasim.Register(s)
	controlapi.Register(s)
	return &Sim{Sim: s, Pveum: accesssim.NewPveum(s), Pvecm: clustersim.NewPvecm(s), Fixture: guests.NewFixture(s),
		Pvestatd: storagesim.NewPvestatd(s)}, nil
}
