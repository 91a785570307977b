package guests

import (
	"fmt"
	"maps"
	"slices"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
)

// AddGuest creates a VM on node at once, without a task: its volumes, its
// config file in /etc/pve, base volumes for a template, a running QEMU if
// asked. It fails like the create API when the VMID is taken.
// addFixture is AddGuest (core.Sim.OnAddGuest): a VM at once, without a task.
func (s Model) addFixture(node string, g core.GuestSpec) error {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	db := s.DBOf(node)
	if db == nil {
		return &core.NotFoundError{Msg: fmt.Sprintf("no node %q in this lab", node)}
	}
	if g.VMID < 100 {
		return &core.BadRequestError{Msg: fmt.Sprintf("vmid %d: guest IDs start at 100", g.VMID)}
	}
	if e, ok := s.FindVMLocked(db, g.VMID); ok {
		return &core.ConflictError{Msg: fmt.Sprintf("unable to create VM %d - VM %d already exists on node '%s'", g.VMID, g.VMID, e.Node)}
	}
	if g.Template && g.Running {
		return &core.BadRequestError{Msg: "you can't start a vm if it's a template"}
	}
	keys := maps.Clone(g.Config)
	if keys == nil {
		keys = map[string]string{}
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		switch {
		case qemuserver.IsNetKey(k):
			keys[k] = NormaliseNet(keys[k])
		case qemuserver.IsDriveKey(k):
			if err := QMErr(qemuserver.CheckNewDrive(k, keys[k], node, s.DBOf(node).Storage)); err != nil {
				return &core.BadRequestError{Msg: err.Error()}
			}
			v, err := s.CreateDrive(node, g.VMID, k, keys[k])
			if err != nil {
				return &core.BadRequestError{Msg: err.Error()}
			}
			if g.Template {
				d := qemuserver.ParseDrive(v)
				if _, _, err := s.VolumeLocked(node, d.File()); err == nil && !d.Cloudinit() {
					nb, err := s.MakeBaseLocked(node, d.File())
					if err != nil {
						return &core.BadRequestError{Msg: err.Error()}
					}
					d.Props.Set("file", nb)
					v = d.Print()
				}
			}
			keys[k] = v
		}
	}
	if keys["boot"] == "" {
		keys["boot"] = qemuserver.DefaultBoot(keys)
	}
	if keys["smbios1"] == "" {
		keys["smbios1"] = "uuid=" + core.NewUUID()
	}
	if g.Template {
		keys["template"] = "1"
	}
	s.WriteQMConfLocked(db, node, g.VMID, &guestconf.Conf{Keys: keys})
	if g.Running {
		s.SetRunningLocked(node, g.VMID, true)
	}
	s.SaveLocked()
	return nil
}
