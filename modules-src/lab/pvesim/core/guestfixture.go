package core

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"

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

// AddGuest creates a VM on node at once, without a task: its volumes, its
// config file in /etc/pve, base volumes for a template, a running QEMU if
// asked. It fails like the create API when the VMID is taken.
func (s *Sim) AddGuest(node string, g GuestSpec) error {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	db := s.DBOf(node)
	if db == nil {
		return &NotFoundError{Msg: fmt.Sprintf("no node %q in this lab", node)}
	}
	if g.VMID < 100 {
		return &BadRequestError{Msg: fmt.Sprintf("vmid %d: guest IDs start at 100", g.VMID)}
	}
	if e, ok := s.FindVMLocked(db, g.VMID); ok {
		return &ConflictError{Msg: fmt.Sprintf("unable to create VM %d - VM %d already exists on node '%s'", g.VMID, g.VMID, e.Node)}
	}
	if g.Template && g.Running {
		return &BadRequestError{Msg: "you can't start a vm if it's a template"}
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
				return &BadRequestError{Msg: err.Error()}
			}
			v, err := s.CreateDrive(node, g.VMID, k, keys[k])
			if err != nil {
				return &BadRequestError{Msg: err.Error()}
			}
			if g.Template {
				d := qemuserver.ParseDrive(v)
				if _, _, err := s.VolumeLocked(node, d.File()); err == nil && !d.Cloudinit() {
					nb, err := s.MakeBaseLocked(node, d.File())
					if err != nil {
						return &BadRequestError{Msg: err.Error()}
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
		keys["smbios1"] = "uuid=" + NewUUID()
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

// ctlAddGuest serves POST /v1/nodes/{node}/guests.
func (s *Sim) ctlAddGuest(w http.ResponseWriter, r *http.Request) {
	var g GuestSpec
	if !ControlDecode(w, r, &g) {
		return
	}
	err := s.AddGuest(r.PathValue("node"), g)
	ControlResult(w, map[string]any{"vmid": strconv.Itoa(g.VMID)}, err)
}
