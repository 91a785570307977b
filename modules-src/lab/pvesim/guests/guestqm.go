package guests

import (
	"fmt"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
)

// LoadQMConfLocked is load_config: the file on node or PVE's error.
func (s Model) LoadQMConfLocked(db *core.ConfigDB, node string, vmid int) (*guestconf.Conf, error) {
	return s.LoadGuestConfLocked(db, VMKind, node, vmid)
}

// AssertOnNodeLocked is assert_config_exists_on_node (qemu-server QemuConfig.pm),
// which check_running runs first in most VM calls.
func (s Model) AssertOnNodeLocked(db *core.ConfigDB, node string, vmid int) error {
	if _, ok := s.ReadEtcPve(db, GuestConfPath(node, "qemu-server", vmid)); !ok {
		return fmt.Errorf("unable to find configuration file for VM %d on node '%s'", vmid, node)
	}
	return nil
}

func (s Model) WriteQMConfLocked(db *core.ConfigDB, node string, vmid int, c *guestconf.Conf) {
	qemuserver.DropReusedUnused(c.Keys, c.Pending) // write_vm_config
	if d, ok := c.Keys["description"]; ok {
		c.SetDescription(d) // $generate_raw_config: the "#" lines
	}
	s.writeGuestConfLocked(db, VMKind, node, vmid, c)
}
