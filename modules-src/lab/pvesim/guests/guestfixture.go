package guests

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
)

// GuestSpec declares a VM the lab should hold from the start (a template on
// a node, a running guest), so tests and demos need no hand setup. Config
// takes the create API's syntax: "scsi0": "local-lvm:8" allocates an 8 GiB
// volume, "net0": "virtio,bridge=vmbr0" gets a MAC.
type GuestSpec struct {
	VMID     int               `json:"vmid"`
	Config   map[string]string `json:"config"`
	Template bool              `json:"template,omitempty"`
	Running  bool              `json:"running,omitempty"`
}

// addFixture is Fixture's AddGuest: a VM at once, without a task.
func (s Model) addFixture(node string, g GuestSpec) error {
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

// Fixture is the guest model's part of the lab's Go API (pvesim.Sim):
// guests the lab holds from the start, and what no API request sets, a
// node's bridges and what a running guest's OS refuses to let go. Its
// control API route (the guest fixture) is registered by Register.
type Fixture struct{ m Model }

// NewFixture is s's guest fixture API.
func NewFixture(s *core.Sim) Fixture { return Fixture{New(s)} }

// AddGuest creates a VM on node at once, without a task: its volumes, its
// config file in /etc/pve, base volumes for a template, a running QEMU if
// asked. It fails like the create API when the VMID is taken.
func (f Fixture) AddGuest(node string, g GuestSpec) error { return f.m.addFixture(node, g) }

// SetBridges gives a node exactly these bridges (none: no bridge at all).
func (f Fixture) SetBridges(node string, bridges ...string) error {
	return f.editNode(node, func(n *core.Node) error {
		n.Bridges = append([]string{}, bridges...)
		return nil
	})
}

// HoldDevices makes the guest of running VM vmid on node refuse to let
// these devices (net1, scsi1, virtio2…) go: QEMU's device_del is sent but
// the guest never acknowledges it (a guest without ACPI hotplug support, a
// disk still mounted by Windows). Reconstruction: on PVE this is the
// guest OS's doing; the lab makes it a property of the running guest,
// gone when the VM stops.
func (f Fixture) HoldDevices(node string, vmid int, devices ...string) error {
	return f.editNode(node, func(n *core.Node) error {
		if _, ok := n.Running[vmid]; !ok {
			return fmt.Errorf("VM %d does not run on %s: only a running guest holds devices", vmid, node)
		}
		if n.HeldDevices == nil {
			n.HeldDevices = map[int][]string{}
		}
		n.HeldDevices[vmid] = append([]string{}, devices...)
		return nil
	})
}

// editNode is what SetBridges and HoldDevices share: node's state changed
// by edit under the lock and saved, unless the node is unknown or edit
// refuses.
func (f Fixture) editNode(node string, edit func(n *core.Node) error) error {
	f.m.Mu.Lock()
	defer f.m.Mu.Unlock()
	n, err := f.m.NodeLocked(node)
	if err != nil {
		return err
	}
	if err := edit(n); err != nil {
		return err
	}
	f.m.SaveLocked()
	return nil
}

// ctlAddGuest serves POST /v1/nodes/{node}/guests.
func (f Fixture) ctlAddGuest(w http.ResponseWriter, r *http.Request) {
	var g GuestSpec
	if !core.ControlDecode(w, r, &g) {
		return
	}
	err := f.AddGuest(r.PathValue("node"), g)
	core.ControlResult(w, map[string]any{"vmid": strconv.Itoa(g.VMID)}, err)
}
