package core

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
// asked. It fails like the create API when the VMID is taken. The guest
// model does it (pvesim/guests, OnAddGuest).
func (s *Sim) AddGuest(node string, g GuestSpec) error { return s.addGuest(node, g) }
