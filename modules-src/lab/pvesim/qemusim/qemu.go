// Package qemusim simulates PVE's VM endpoints: create (create.go), config
// read, synchronous PUT, asynchronous POST and pending values (config.go)
// with hot-plug (hotplug.go), status and power (power.go), template,
// resize, unlink and destroy (lifecycle.go), disks (disks.go), clone
// (clone.go), migrate (migrate.go, migratestorage.go), the cloud-init
// drive's snippets at start (cloudinit.go), the guest agent (agent.go),
// /cluster/nextid, and the permission checks the handlers make (perm.go).
// Messages are qemu-server's (src/PVE/API2/Qemu.pm, QemuServer.pm,
// QemuConfig.pm, QemuMigrate.pm) and pve-guest-common's
// (AbstractConfig.pm) unless marked as a reconstruction; qemu-server's
// rules on config values are pvesim/qemuserver's. A VM's model (its
// running state, summary, resource entry, a drive allocated at creation, a
// move between nodes) is the guest model's (pvesim/guests, guestvm.go),
// since HA, the pools, the fixtures and /cluster/resources use it.
package qemusim

import (
	"fmt"
	"maps"
	"strconv"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guesthelpers"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guests"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// backend serves the VM endpoints on the core's state.
type backend struct{ guests.Model }

// Register adds the VM endpoints to s.
func Register(s *core.Sim) { s.Handle((&backend{guests.New(s)}).routes()) }

// skiplockOf is the skiplock parameter, which is root@pam's alone (a
// token of root is not root@pam).
func skiplockOf(rc *core.Req) (bool, error) {
	if !rc.Bool("skiplock") {
		return false, nil
	}
	if rc.Who == nil || rc.Who.Full() != "root@pam" {
		return false, core.ErrParams(map[string]string{"skiplock": "Only root may use this option."})
	}
	return true, nil
}

// typedConf renders VM config values with the schema's JSON types.
func (s *backend) typedConf(keys map[string]string) map[string]any {
	return s.TypedGuestConf(guests.VMKind, keys)
}

// GET /cluster/nextid: the lowest free VMID ≥ 100 (pve-manager
// API2/Cluster.pm). A hint only: nothing is reserved (K18).
func (s *backend) getNextID(rc *core.Req) (any, error) {
	db := rc.DB()
	used := map[int]bool{}
	for _, e := range s.VMListLocked(db) {
		used[e.VMID] = true
	}
	if rc.Has("vmid") {
		if used[rc.VMID()] {
			return nil, core.ErrParams(map[string]string{"vmid": fmt.Sprintf("VM %d already exists", rc.VMID())})
		}
		return strconv.Itoa(rc.VMID()), nil
	}
	for i := 100; i < 1000000; i++ {
		if !used[i] {
			return strconv.Itoa(i), nil // PVE answers the number as a string here
		}
	}
	return nil, fmt.Errorf("unable to get any free VMID in range [100, 1000000]")
}

// GET /nodes/{node}/qemu
func (s *backend) getQemuList(rc *core.Req) (any, error) {
	return s.GuestListLocked(rc, guests.VMKind, s.VMSummary), nil
}

// GET /nodes/{node}/qemu/{vmid}/config
func (s *backend) getQemuConfig(rc *core.Req) (any, error) {
	c, err := s.LoadQMConfLocked(rc.DB(), rc.Node, rc.VMID())
	if err != nil {
		return nil, err
	}
	keys := c.WithPending()
	if rc.Bool("current") {
		keys = maps.Clone(c.Keys)
	}
	out := s.typedConf(keys)
	if _, ok := out["cipassword"]; ok {
		out["cipassword"] = "**********" // vm_config never shows it
	}
	return guests.WithDescriptionAndDigest(out, c), nil
}

// GET /nodes/{node}/qemu/{vmid}/pending
func (s *backend) getQemuPending(rc *core.Req) (any, error) {
	c, err := s.LoadQMConfLocked(rc.DB(), rc.Node, rc.VMID())
	if err != nil {
		return nil, err
	}
	typed := func(k, v string) any { return s.typedConf(map[string]string{k: v})[k] }
	out := guesthelpers.ConfigWithPendingArray(c, typed, guestconf.VMDescription)
	for _, e := range out {
		if e["key"] != "cipassword" {
			continue
		}
		// vm_pending masks both, the pending one with a trailing blank.
		if _, ok := e["value"]; ok {
			e["value"] = "**********"
		}
		if _, ok := e["pending"]; ok {
			e["pending"] = "********** "
		}
	}
	return out, nil
}

// GET /nodes/{node}/qemu/{vmid}/status/current
func (s *backend) getQemuStatus(rc *core.Req) (any, error) {
	db := rc.DB()
	vmid := rc.VMID()
	if err := s.AssertOnNodeLocked(db, rc.Node, vmid); err != nil {
		return nil, err
	}
	c, err := s.LoadQMConfLocked(db, rc.Node, vmid)
	if err != nil {
		return nil, err
	}
	e := s.VMSummary(rc.Node, vmid, c)
	e["qmpstatus"] = e["status"]
	e["ha"] = s.HAStatusOfGuestLocked(db, fmt.Sprintf("vm:%d", vmid))
	if c.Keys["agent"] != "" && pvecommon.ParseProps(c.Keys["agent"], "enabled").Get("enabled") == "1" {
		e["agent"] = 1
	}
	return e, nil
}

// routes are the VM endpoints and /cluster/nextid.
func (s *backend) routes() map[string]core.Handler {
	return map[string]core.Handler{
		"GET /cluster/nextid":                                        s.getNextID,
		"GET /nodes/{node}/qemu":                                     s.getQemuList,
		"POST /nodes/{node}/qemu":                                    s.postQemuCreate,
		"DELETE /nodes/{node}/qemu/{vmid}":                           s.deleteQemu,
		"GET /nodes/{node}/qemu/{vmid}/config":                       s.getQemuConfig,
		"PUT /nodes/{node}/qemu/{vmid}/config":                       s.putQemuConfig,
		"POST /nodes/{node}/qemu/{vmid}/config":                      s.postQemuConfig,
		"GET /nodes/{node}/qemu/{vmid}/pending":                      s.getQemuPending,
		"GET /nodes/{node}/qemu/{vmid}/status/current":               s.getQemuStatus,
		"POST /nodes/{node}/qemu/{vmid}/status/start":                s.postQemuStart,
		"POST /nodes/{node}/qemu/{vmid}/status/stop":                 s.postQemuStop,
		"POST /nodes/{node}/qemu/{vmid}/status/shutdown":             s.postQemuShutdown,
		"POST /nodes/{node}/qemu/{vmid}/template":                    s.postQemuTemplate,
		"PUT /nodes/{node}/qemu/{vmid}/resize":                       s.putQemuResize,
		"PUT /nodes/{node}/qemu/{vmid}/unlink":                       s.putQemuUnlink,
		"POST /nodes/{node}/qemu/{vmid}/clone":                       s.postQemuClone,
		"POST /nodes/{node}/qemu/{vmid}/migrate":                     s.postQemuMigrate,
		"POST /nodes/{node}/qemu/{vmid}/agent/ping":                  s.postQemuAgentPing,
		"GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces": s.getQemuAgentNetworkGetInterfaces,
	}
}
