package pvesim

import (
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
)

// The tests of the whole simulator (every backend wired, as New does)
// talk to it through simtest; these are their local names.
type (
	simOpts   = simtest.Opts
	apiClient = simtest.Client
	resp      = simtest.Resp
)

var (
	newClient    = simtest.NewClient
	waitTask     = simtest.WaitTask
	eventually   = simtest.Eventually
	quorate      = simtest.Quorate
	controlAPI   = simtest.ControlAPI
	testConfig   = simtest.Config
	createVM     = simtest.CreateVM
	mustTask     = simtest.MustTask
	vmConfig     = simtest.VMConfig
	makeTemplate = simtest.MakeTemplate
	volids       = simtest.Volids
	putConfig    = simtest.PutConfig
	newFakeFiles = simtest.NewFakeFiles

	createCluster = simtest.CreateCluster
	joinParams    = simtest.JoinParams
	mustNode      = simtest.MustNode
)

const (
	ctBackup     = simtest.CTBackup
	ctBackupConf = simtest.CTBackupConf
)

// startSim creates and starts a simulator that the test's cleanup closes.
func startSim(t *testing.T, o simOpts) *Sim { t.Helper(); return simtest.Start(t, New, o) }

// startSimWith lets a test adjust the Config (hooks) before New.
func startSimWith(t *testing.T, o simOpts, adjust func(*Config)) *Sim {
	t.Helper()
	return simtest.StartWith(t, New, o, adjust)
}

// twoNodes is simtest.TwoNodes of the whole simulator.
func twoNodes(t *testing.T, o simOpts, adjust ...func(*Config)) (*Sim, *apiClient, *apiClient) {
	t.Helper()
	return simtest.TwoNodes(t, New, o, adjust...)
}
