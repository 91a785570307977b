package core

import "github.com/gopve/proxmox/modules-src/lab/pvesim/faults"

// The fault table is pvesim/faults'; core fires its faults (httpapi.go,
// tasks.go; a join's, pvesim/clustersim). Its names stay core's too, as the Go API's users
// and the backends know them.
type (
	Fault     = faults.Fault
	FaultKind = faults.Kind
	Faults    = faults.Table
)

// Fault kinds (faults.Kind).
const (
	FaultLatency         = faults.Latency
	FaultError           = faults.Error
	FaultReset           = faults.Reset
	FaultHang            = faults.Hang
	FaultLock            = faults.Lock
	FaultTaskFail        = faults.TaskFail
	FaultSlowConfig      = faults.SlowConfig
	FaultLostAnswer      = faults.LostAnswer
	FaultSlowLocked      = faults.SlowLocked
	FaultFinishJoin      = faults.FinishJoin
	FaultMigrateAbort    = faults.MigrateAbort
	FaultMigrateProblems = faults.MigrateProblems
)
