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

func (rc *reqCtx) vmid() int { n, _ := strconv.Atoi(rc.str("vmid")); return n }

// skiplock is root@pam's alone (a token of root is not root@pam).
func (rc *reqCtx) skiplock() (bool, error) {
	if !rc.boolean("skiplock") {
		return false, nil
	}
	if rc.who == nil || rc.who.full() != "root@pam" {
		return false, errParams(map[string]string{"skiplock": "Only root may use this option."})
	}
	return true, nil
}

// qmErr answers qemuserver's refusal of a parameter as PVE does
// (raise_param_exc: 400); other errors pass as they are.
func qmErr(err error) error {
	if pe := (*qemuserver.ParamError)(nil); errors.As(err, &pe) {
		return errParams(map[string]string{pe.Param: pe.Msg})
	}
	return err
}

// normaliseNet is qemuserver.NormaliseNet with a random MAC for a NIC sent
// without one (K16).
func normaliseNet(v string) string { return qemuserver.NormaliseNet(v, randomMAC) }

// randomMAC is a new MAC with PVE's default prefix (VMs' NICs and
// containers' hwaddr alike).
func randomMAC() string { return pvecommon.RandomMAC(randomHex(3)) }

func (s *Sim) runningLocked(node string, vmid int) bool {
	_, ok := s.st.Nodes[node].Running[vmid]
	return ok
}

func (s *Sim) setRunningLocked(node string, vmid int, on bool) {
	n := s.st.Nodes[node]
	if on {
		if n.Running == nil {
			n.Running = map[int]int64{}
		}
		n.Running[vmid] = nowUnix()
		return
	}
	delete(n.Running, vmid)
	delete(n.HeldDevices, vmid) // the guest is gone with its QEMU process
}

// typedConf renders VM config values with the schema's JSON types.
func (s *Sim) typedConf(keys map[string]string) map[string]any { return s.typedGuestConf(vmKind, keys) }

// vmSummary is the shared part of /nodes/{node}/qemu, status/current and
// /cluster/resources entries.
func (s *Sim) vmSummary(node string, vmid int, c *guestconf.Conf) map[string]any {
	conf := c.Keys
	e := map[string]any{"vmid": vmid, "status": "stopped", "cpus": qemuserver.CPUs(conf), "maxmem": qemuserver.MemBytes(conf),
		"maxdisk": qemuserver.BootdiskSize(conf), "mem": 0, "disk": 0, "cpu": 0, "uptime": 0,
		"netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0}
	if name := conf["name"]; name != "" {
		e["name"] = name
	}
	if started, ok := s.st.Nodes[node].Running[vmid]; ok {
		e["status"] = "running"
		e["uptime"] = time.Now().Unix() - started
		e["mem"] = qemuserver.MemBytes(conf) / 2
		e["cpu"] = 0.01
		e["pid"] = 10000 + vmid
	}
	return summaryFlags(e, c)
}

// vmResourcesLocked are the type=vm entries of /cluster/resources.
func (s *Sim) vmResourcesLocked(rc *reqCtx) []map[string]any {
	db := rc.db()
	out := []map[string]any{}
	for _, e := range s.vmListLocked(db) {
		// Filtered, not refused, without VM.Audit (K19).
		if !hasPriv(db, rc.who, fmt.Sprintf("/vms/%d", e.VMID), []string{"VM.Audit"}, false) {
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
			r = s.asClusterResource(s.vmSummary(e.Node, e.VMID, c), vmKind, e)
			delete(r, "pid")
		}
		if p := poolOfGuestLocked(db, e.VMID); p != "" {
			r["pool"] = p // $usercfg->{vms}->{$vmid}
		}
		out = append(out, r)
	}
	return out
}

// GET /cluster/nextid: the lowest free VMID ≥ 100 (pve-manager
// API2/Cluster.pm). A hint only: nothing is reserved (K18).
func (s *Sim) getNextID(rc *reqCtx) (any, error) {
	db := rc.db()
	used := map[int]bool{}
	for _, e := range s.vmListLocked(db) {
		used[e.VMID] = true
	}
	if rc.has("vmid") {
		if used[rc.vmid()] {
			return nil, errParams(map[string]string{"vmid": fmt.Sprintf("VM %d already exists", rc.vmid())})
		}
		return strconv.Itoa(rc.vmid()), nil
	}
	for i := 100; i < 1000000; i++ {
		if !used[i] {
			return strconv.Itoa(i), nil // PVE answers the number as a string here
		}
	}
	return nil, fmt.Errorf("unable to get any free VMID in range [100, 1000000]")
}

// GET /nodes/{node}/qemu
func (s *Sim) getQemuList(rc *reqCtx) (any, error) {
	return s.guestListLocked(rc, vmKind, s.vmSummary), nil
}

// GET /nodes/{node}/qemu/{vmid}/config
func (s *Sim) getQemuConfig(rc *reqCtx) (any, error) {
	c, err := s.loadQmConfLocked(rc.db(), rc.node, rc.vmid())
	if err != nil {
		return nil, err
	}
	keys := c.WithPending()
	if rc.boolean("current") {
		keys = maps.Clone(c.Keys)
	}
	out := s.typedConf(keys)
	if _, ok := out["cipassword"]; ok {
		out["cipassword"] = "**********" // vm_config never shows it
	}
	return withDescriptionAndDigest(out, c), nil
}

// GET /nodes/{node}/qemu/{vmid}/pending
func (s *Sim) getQemuPending(rc *reqCtx) (any, error) {
	c, err := s.loadQmConfLocked(rc.db(), rc.node, rc.vmid())
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
func (s *Sim) getQemuStatus(rc *reqCtx) (any, error) {
	db := rc.db()
	vmid := rc.vmid()
	if err := s.assertOnNodeLocked(db, rc.node, vmid); err != nil {
		return nil, err
	}
	c, err := s.loadQmConfLocked(db, rc.node, vmid)
	if err != nil {
		return nil, err
	}
	e := s.vmSummary(rc.node, vmid, c)
	e["qmpstatus"] = e["status"]
	e["ha"] = s.haStatusOfGuestLocked(db, fmt.Sprintf("vm:%d", vmid))
	if c.Keys["agent"] != "" && pvecommon.ParseProps(c.Keys["agent"], "enabled").Get("enabled") == "1" {
		e["agent"] = 1
	}
	return e, nil
}
