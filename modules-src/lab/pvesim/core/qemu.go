package core

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
)

// QEMU guests: create, config (read, sync PUT, async POST, pending), status,
// start/stop/shutdown, template, resize, destroy; clone is in clone.go.
// This file holds the shared helpers and the reads; creation is in
// qemucreate.go, config updates in qemuconfig.go, power in qemupower.go,
// template/resize/destroy in qemulifecycle.go.
// Messages are qemu-server's (src/PVE/API2/Qemu.pm, QemuServer.pm,
// QemuConfig.pm) and pve-guest-common's (AbstractConfig.pm) unless marked
// as a reconstruction.

func (rc *Req) VMID() int { n, _ := strconv.Atoi(rc.Str("vmid")); return n }

// skiplock is root@pam's alone (a token of root is not root@pam).
func (rc *Req) skiplock() (bool, error) {
	if !rc.Bool("skiplock") {
		return false, nil
	}
	if rc.Who == nil || rc.Who.Full() != "root@pam" {
		return false, ErrParams(map[string]string{"skiplock": "Only root may use this option."})
	}
	return true, nil
}

// qmErr answers qemuserver's refusal of a parameter as PVE does
// (raise_param_exc: 400); other errors pass as they are.
func qmErr(err error) error {
	if pe := (*qemuserver.ParamError)(nil); errors.As(err, &pe) {
		return ErrParams(map[string]string{pe.Param: pe.Msg})
	}
	return err
}

// normaliseNet is qemuserver.NormaliseNet with a random MAC for a NIC sent
// without one (K16).
func normaliseNet(v string) string { return qemuserver.NormaliseNet(v, RandomMAC) }

// RandomMAC is a new MAC with PVE's default prefix (VMs' NICs and
// containers' hwaddr alike).
func RandomMAC() string { return pvecommon.RandomMAC(randomHex(3)) }

func (s *Sim) RunningLocked(node string, vmid int) bool {
	_, ok := s.State.Nodes[node].Running[vmid]
	return ok
}

func (s *Sim) SetRunningLocked(node string, vmid int, on bool) {
	n := s.State.Nodes[node]
	if on {
		if n.Running == nil {
			n.Running = map[int]int64{}
		}
		n.Running[vmid] = NowUnix()
		return
	}
	delete(n.Running, vmid)
	delete(n.HeldDevices, vmid) // the guest is gone with its QEMU process
}

// typedConf renders VM config values with the schema's JSON types.
func (s *Sim) typedConf(keys map[string]string) map[string]any { return s.TypedGuestConf(VMKind, keys) }

// VMSummary is the shared part of /nodes/{node}/qemu, status/current and
// /cluster/resources entries.
func (s *Sim) VMSummary(node string, vmid int, c *guestconf.Conf) map[string]any {
	conf := c.Keys
	e := map[string]any{"vmid": vmid, "status": "stopped", "cpus": qemuserver.CPUs(conf), "maxmem": qemuserver.MemBytes(conf),
		"maxdisk": qemuserver.BootdiskSize(conf), "mem": 0, "disk": 0, "cpu": 0, "uptime": 0,
		"netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0}
	if name := conf["name"]; name != "" {
		e["name"] = name
	}
	if started, ok := s.State.Nodes[node].Running[vmid]; ok {
		e["status"] = "running"
		e["uptime"] = time.Now().Unix() - started
		e["mem"] = qemuserver.MemBytes(conf) / 2
		e["cpu"] = 0.01
		e["pid"] = 10000 + vmid
	}
	return summaryFlags(e, c)
}

// vmResourcesLocked are the type=vm entries of /cluster/resources.
func (s *Sim) vmResourcesLocked(rc *Req) []map[string]any {
	db := rc.DB()
	out := []map[string]any{}
	for _, e := range s.vmListLocked(db) {
		// Filtered, not refused, without VM.Audit (K19).
		if !HasPriv(db, rc.Who, fmt.Sprintf("/vms/%d", e.VMID), []string{"VM.Audit"}, false) {
			continue
		}
		var r map[string]any
		if e.Kind == "lxc" {
			var ok bool
			if r, ok = s.ctResourcesLocked(rc, e); !ok {
				continue
			}
		} else {
			c, err := s.loadQmConfLocked(db, e.Node, e.VMID)
			if err != nil {
				continue
			}
			r = s.asClusterResource(s.VMSummary(e.Node, e.VMID, c), VMKind, e)
			delete(r, "pid")
		}
		if p := PoolOfGuestLocked(db, e.VMID); p != "" {
			r["pool"] = p // $usercfg->{vms}->{$vmid}
		}
		out = append(out, r)
	}
	return out
}

// GET /cluster/nextid: the lowest free VMID ≥ 100 (pve-manager
// API2/Cluster.pm). A hint only: nothing is reserved (K18).
func (s *Sim) getNextID(rc *Req) (any, error) {
	db := rc.DB()
	used := map[int]bool{}
	for _, e := range s.vmListLocked(db) {
		used[e.VMID] = true
	}
	if rc.Has("vmid") {
		if used[rc.VMID()] {
			return nil, ErrParams(map[string]string{"vmid": fmt.Sprintf("VM %d already exists", rc.VMID())})
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
func (s *Sim) getQemuList(rc *Req) (any, error) {
	return s.GuestListLocked(rc, VMKind, s.VMSummary), nil
}

// GET /nodes/{node}/qemu/{vmid}/config
func (s *Sim) getQemuConfig(rc *Req) (any, error) {
	c, err := s.loadQmConfLocked(rc.DB(), rc.Node, rc.VMID())
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
	return WithDescriptionAndDigest(out, c), nil
}

// GET /nodes/{node}/qemu/{vmid}/pending
func (s *Sim) getQemuPending(rc *Req) (any, error) {
	c, err := s.loadQmConfLocked(rc.DB(), rc.Node, rc.VMID())
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for k := range c.Keys {
		keys[k] = true
	}
	for k := range c.Pending {
		keys[k] = true
	}
	out := []map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		e := map[string]any{"key": k}
		if v, ok := c.Keys[k]; ok {
			e["value"] = s.typedConf(map[string]string{k: v})[k]
		}
		if v, ok := c.Pending[k]; ok {
			e["pending"] = s.typedConf(map[string]string{k: v})[k]
		}
		if k == "cipassword" {
			// vm_pending masks both, the pending one with a trailing blank.
			if _, ok := e["value"]; ok {
				e["value"] = "**********"
			}
			if _, ok := e["pending"]; ok {
				e["pending"] = "********** "
			}
		}
		if c.PendingDeleted(k) {
			e["delete"] = 1
			if slices.Contains(c.PendingDelete, "!"+k) {
				e["delete"] = 2
			}
		}
		out = append(out, e)
	}
	// config_with_pending_array walks every scalar of load_config's hash:
	// the file's digest and the description are entries too.
	out = append(out, map[string]any{"key": "digest", "value": c.Digest})
	if c.Description != "" {
		out = append(out, map[string]any{"key": "description", "value": guestconf.VMDescription(c.Description)})
	}
	return out, nil
}

// GET /nodes/{node}/qemu/{vmid}/status/current
func (s *Sim) getQemuStatus(rc *Req) (any, error) {
	db := rc.DB()
	vmid := rc.VMID()
	if err := s.assertOnNodeLocked(db, rc.Node, vmid); err != nil {
		return nil, err
	}
	c, err := s.loadQmConfLocked(db, rc.Node, vmid)
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

// qemuRoutes are the VM endpoints and /cluster/nextid.
func (s *Sim) qemuRoutes() map[string]Handler {
	return map[string]Handler{
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
