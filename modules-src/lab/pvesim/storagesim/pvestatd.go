package storagesim

import (
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/volumes"
)

// pvestatd, the storage half: every node's status daemon calls
// PVE::Storage::storage_info every $updatetime (10 s) in
// update_storage_status (pve-manager PVE/Service/pvestatd.pm), and
// storage_info runs activate_storage on every storage that is enabled on
// that node (storage_check_enabled with the local node: not `disable`d,
// `nodes` unset or naming it), warning (to syslog) when one fails. A dir
// storage's activate_storage creates its path and the content
// subdirectories (DirPlugin/Plugin.pm activate_storage: mkpath of each
// content type's dir), a zfspool storage imports its pool. So on PVE
// /var/lib/vz/snippets exists within about 10 s after `pvesm set local
// --content …,snippets`, with no API call (S4).
//
// pvestatd skips its first cycle after start ($cycle 0) and then sleeps
// $updatetime between cycles; the lab runs a cycle every StatdInterval
// from the simulator's start, on each node that is up (a powered-off node
// runs no daemon). The rrd/metrics side of the cycle is not simulated.
//
// Pvestatd is that daemon on every node: Register starts its loop, and
// pvesim.Sim embeds it for StatdCycle, a cycle run at once.
type Pvestatd struct{ m volumes.Model }

// NewPvestatd is s's pvestatd.
func NewPvestatd(s *core.Sim) Pvestatd { return Pvestatd{volumes.Model{Sim: s}} }

func (d Pvestatd) statdInterval() time.Duration {
	s := d.m
	return s.Cfg.Dur(s.Cfg.StatdInterval, 10*time.Second)
}

// loop is the daemon, Start's loop (core.Sim.OnStart).
func (d Pvestatd) loop() {
	for d.m.Sleep(max(d.statdInterval(), 10*time.Millisecond)) {
		d.StatdCycle()
	}
}

// statdCycle is one update_storage_status on node: activate every storage
// enabled there, one at a time, the lock released between storages so API
// calls are not held up by a whole cycle. Errors are pvestatd's warnings:
// nothing to report.
func (d Pvestatd) statdCycle(node string) {
	s := d.m
	s.Mu.Lock()
	if !s.NodeUpLocked(node) {
		s.Mu.Unlock()
		return
	}
	db := s.DBOf(node)
	s.ReadFilesLocked(db) // cfs_update: storage.cfg as the node sees it now
	ids := db.SortedStorageIDs()
	s.Mu.Unlock()
	for _, id := range ids {
		if !s.Sleep(0) { // the simulator closed
			return
		}
		s.Mu.Lock()
		db := s.DBOf(node)
		if st := db.Storage[id]; st != nil && s.NodeUpLocked(node) && !st.Disabled() && st.OnNode(node) {
			_ = s.ActivateOn(node, st)
		}
		s.Mu.Unlock()
	}
}

// StatdCycle runs one pvestatd storage cycle on every node that is up,
// now, and returns when it is done: the loop's cycle, and what a test that
// compares a node's files before and after a run (labtest.UpperDigest)
// settles first, so that a directory pvestatd was about to create for an
// earlier storage change is not counted as the run's write.
func (d Pvestatd) StatdCycle() {
	s := d.m
	s.Mu.Lock()
	nodes := []string{}
	for _, n := range s.SortedNodeNamesLocked() {
		if s.NodeUpLocked(n) {
			nodes = append(nodes, n)
		}
	}
	s.Mu.Unlock()
	for _, n := range nodes {
		d.statdCycle(n)
	}
}
