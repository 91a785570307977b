package guests

import (
	"fmt"
	"strconv"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/access"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guesthelpers"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecontainer"
)

func (s Model) LoadCTConfLocked(db *core.ConfigDB, node string, vmid int) (*guestconf.Conf, error) {
	return s.LoadGuestConfLocked(db, CTKind, node, vmid)
}

func (s Model) WriteCTConfLocked(db *core.ConfigDB, node string, vmid int, c *guestconf.Conf) {
	pvecontainer.DropUsedUnused(c.Keys) // write_pct_config
	s.writeGuestConfLocked(db, CTKind, node, vmid, c)
}

func (s Model) CTSummary(node string, vmid int, c *guestconf.Conf) map[string]any {
	conf := c.Keys
	mem := int64(512)
	if n, err := strconv.ParseInt(conf["memory"], 10, 64); err == nil {
		mem = n
	}
	swap := int64(512)
	if n, err := strconv.ParseInt(conf["swap"], 10, 64); err == nil {
		swap = n
	}
	cores := 1
	if n, err := strconv.Atoi(conf["cores"]); err == nil {
		cores = n
	}
	var disk int64
	if n, ok := pvecommon.ParseSize(pvecontainer.ParseMountPoint(conf["rootfs"]).Get("size")); ok {
		disk = n
	}
	e := map[string]any{"vmid": vmid, "status": "stopped", "cpus": cores, "maxmem": mem << 20, "maxswap": swap << 20,
		"maxdisk": disk, "mem": 0, "disk": 0, "cpu": 0, "uptime": 0, "netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0}
	if h := conf["hostname"]; pvecommon.PerlTrue(h) { // vmstatus: hostname || "CT$vmid"
		e["name"] = h
	} else {
		e["name"] = fmt.Sprintf("CT%d", vmid)
	}
	if started, ok := s.State.Nodes[node].Running[vmid]; ok {
		e["status"] = "running"
		e["uptime"] = core.NowUnix() - started
		e["mem"] = (mem << 20) / 4
	}
	return summaryFlags(e, c)
}

// ctResourcesLocked are the lxc entries of /cluster/resources?type=vm.
func (s Model) ctResourcesLocked(rc *core.Req, e core.VMEntry) (map[string]any, bool) {
	c, err := s.LoadCTConfLocked(rc.DB(), e.Node, e.VMID)
	if err != nil {
		return nil, false
	}
	r := s.asClusterResource(s.CTSummary(e.Node, e.VMID, c), CTKind, e)
	delete(r, "maxswap")
	return r, true
}

// CheckCreateAllocate is the VM.Allocate alternatives of create_vm, which
// pve-container (API2/LXC.pm) and qemu-server (API2/Qemu.pm) write alike:
// on /vms/<vmid>, else on /pool/<pool>; overwrite is restore+force over an
// existing guest, where VM.Backup on it is enough.
func CheckCreateAllocate(rc *core.Req, overwrite bool) error {
	if IsRootUser(rc.Who) {
		return nil
	}
	db, vmid, pool := rc.DB(), rc.VMID(), rc.Str("pool")
	vms := fmt.Sprintf("/vms/%d", vmid)
	switch {
	case core.HasPriv(db, rc.Who, vms, []string{"VM.Allocate"}, false):
	case pool != "" && core.HasPriv(db, rc.Who, "/pool/"+pool, []string{"VM.Allocate"}, false):
	case overwrite && core.HasPriv(db, rc.Who, vms, []string{"VM.Backup"}, false):
	default:
		return core.ErrPerm(access.PermNoDetail)
	}
	return nil
}

// CheckVnetAccess is PVE::GuestHelpers::check_vnet_access: SDN.Use on
// each of guesthelpers.VnetPaths (the bridge, or each VLAN of it that the
// NIC uses), for qemu's and lxc's NICs alike.
func CheckVnetAccess(db *core.ConfigDB, who *core.Principal, bridge, tag, trunks string) error {
	if IsRootUser(who) {
		return nil
	}
	for _, path := range guesthelpers.VnetPaths(bridge, tag, trunks) {
		if err := core.RPCCheck(db, who, path, "SDN.Use"); err != nil {
			return err
		}
	}
	return nil
}
