package guests

// Guest operations a backend acts on guests with without a task (HA's LRM
// and CRM, pvesim/hasim), and pve-guests' onboot starts at a node's boot.

import (
	"maps"
	"slices"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

// StartGuestLocked starts guest e on its node at once, without a task, as
// HA's LRM does for a service the CRM wants started (pvesim/hasim); it
// reports whether the guest runs now (a template or a locked config stays
// stopped). A VM's cloud-init drive on local storage is created there if missing
// (qemu-server regenerates the ISO at every start, Cloudinit.pm
// commit_cloudinit_disk allocates a missing volume).
func (s Model) StartGuestLocked(db *core.ConfigDB, e core.VMEntry) bool {
	if e.Kind == "lxc" {
		c, err := s.LoadCTConfLocked(db, e.Node, e.VMID)
		if err != nil || c.IsTemplate() || c.Lock() != "" {
			return false
		}
		s.SetRunningLocked(e.Node, e.VMID, true)
		return true
	}
	c, err := s.LoadQMConfLocked(db, e.Node, e.VMID)
	if err != nil || c.IsTemplate() || c.Lock() != "" {
		return false
	}
	c.ApplyPending()
	for _, k := range slices.Sorted(maps.Keys(c.Keys)) {
		d := qemuserver.ParseDrive(c.Keys[k])
		if !qemuserver.IsDriveKey(k) || !d.Cloudinit() {
			continue
		}
		store, _, ok := storage.ParseVolumeID(d.File())
		st := db.Storage[store]
		if ok && st != nil && !st.Shared() && s.State.Nodes[e.Node].Volumes[d.File()] == nil {
			if _, err := s.AllocCloudinitLocked(e.Node, st, e.VMID, ""); err != nil {
				return false
			}
		}
	}
	s.WriteQMConfLocked(db, e.Node, e.VMID, c)
	s.SetRunningLocked(e.Node, e.VMID, true)
	return true
}

// startOnbootLocked is pve-guests at a node's boot: the guests with onboot
// set that HA does not manage start (HA's are the CRM's, pvesim/hasim).
func (s Model) startOnbootLocked(node string) {
	db := s.State.DBs[s.State.Nodes[node].DB]
	if db == nil {
		return
	}
	for _, e := range s.VMListLocked(db) {
		if e.Node != node || s.haConfiguredSIDLocked(db, e) {
			continue
		}
		raw, _ := s.ReadEtcPve(db, GuestConfPath(node, e.Kind, e.VMID))
		if c := guestconf.Parse(raw); c.Keys["onboot"] == "1" && !c.IsTemplate() {
			s.SetRunningLocked(node, e.VMID, true)
		}
	}
}

// StealGuestLocked moves guest e's config from its (dead) node to target
// and forgets that it ran there: nothing else, neither volumes nor
// replication jobs, as pve-ha-manager's PVE/HA/Env/PVE2.pm steal_service
// renames the config of a fenced node's service.
func (s Model) StealGuestLocked(db *core.ConfigDB, e core.VMEntry, target string) {
	raw, _ := s.ReadEtcPve(db, GuestConfPath(e.Node, e.Kind, e.VMID))
	s.RemoveEtcPve(db, GuestConfPath(e.Node, e.Kind, e.VMID))
	s.WriteEtcPve(db, GuestConfPath(target, e.Kind, e.VMID), raw)
	delete(s.State.Nodes[e.Node].Running, e.VMID)
}
