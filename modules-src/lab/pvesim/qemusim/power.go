package qemusim

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
)

// QEMU guests' power: status/start, stop, shutdown, through HA when the
// guest is HA-managed (qemu-server's API2/Qemu.pm vm_start, vm_stop,
// vm_shutdown).

// POST status/start: qmstart task; vm_start's checks run in the worker.
func (s *backend) postQemuStart(rc *core.Req) (any, error) {
	if upid, ok := s.haPowerLocked(rc, "hastart", "started"); ok {
		return upid, nil
	}
	return s.powerTask(rc, "qmstart", func(c *guestconf.Conf, running bool) (string, bool) {
		if c.IsTemplate() {
			return "you can't start a vm if it's a template", false
		}
		if err := c.CheckLock("VM"); err != nil && !rc.Bool("skiplock") {
			return err.Error(), false
		}
		if running {
			return fmt.Sprintf("VM %d already running", rc.VMID()), false
		}
		return "", true
	})
}

// POST status/stop and status/shutdown: stopping a stopped VM is no error.
func (s *backend) postQemuStop(rc *core.Req) (any, error)     { return s.qemuHalt(rc, "qmstop") }
func (s *backend) postQemuShutdown(rc *core.Req) (any, error) { return s.qemuHalt(rc, "qmshutdown") }

func (s *backend) qemuHalt(rc *core.Req, typ string) (any, error) {
	if upid, ok := s.haPowerLocked(rc, "hastop", "stopped"); ok {
		return upid, nil
	}
	return s.powerTask(rc, typ, func(c *guestconf.Conf, running bool) (string, bool) {
		if err := c.CheckLock("VM"); err != nil && !rc.Bool("skiplock") {
			return err.Error(), false
		}
		return "", false
	})
}

// haPowerLocked turns a start/stop of an HA-managed VM into a request to
// the HA stack (qemu-server Qemu.pm vm_start/vm_stop: hastart/hastop, H4).
func (s *backend) haPowerLocked(rc *core.Req, typ, state string) (string, bool) {
	db := rc.DB()
	vmid := rc.VMID()
	if s.AssertOnNodeLocked(db, rc.Node, vmid) != nil {
		return "", false
	}
	if _, managed := s.HAManagedLocked(db, vmid); !managed {
		return "", false
	}
	return s.HARequestTask(rc, typ, vmid, state), true
}

// powerTask runs a start/stop task under the config lock; decide returns an
// error text, or the new running state. A started VM applies its pending
// changes (they were waiting for the restart).
func (s *backend) powerTask(rc *core.Req, typ string, decide func(c *guestconf.Conf, running bool) (string, bool)) (any, error) {
	db := rc.DB()
	vmid := rc.VMID()
	if _, err := skiplockOf(rc); err != nil {
		return nil, err
	}
	if err := s.AssertOnNodeLocked(db, rc.Node, vmid); err != nil {
		return nil, err
	}
	if err := s.RequireQuorumLocked(db); err != nil {
		return nil, err
	}
	node := rc.Node
	return s.GuestLockTask(rc, node, typ, vmid, func(t *core.TaskRun) string {
		c, err := s.LoadQMConfLocked(db, node, vmid)
		if err != nil {
			return err.Error()
		}
		msg, on := decide(c, s.RunningLocked(node, vmid))
		if msg != "" {
			return msg
		}
		if on && (len(c.Pending) > 0 || len(c.PendingDelete) > 0) {
			// vm_start: vmconfig_apply_pending; its errors are warnings.
			errs := s.applyPendingLocked(node, vmid, c, t.LogfLocked)
			for _, k := range slices.Sorted(maps.Keys(errs)) {
				t.LogfLocked("%s", strings.TrimRight(errs[k], "\n")) // warn $err_msg
			}
			s.WriteQMConfLocked(db, node, vmid, c)
		}
		if on {
			// QEMU's launch plugs every NIC into its bridge.
			if msg := s.startNICsLocked(node, vmid, c, t.LogfLocked); msg != "" {
				s.SaveLocked()
				return msg
			}
			// The cloud-init ISO is generated at every start, its custom
			// snippets read then (S4).
			if err := s.checkCloudinitSnippetsLocked(node, c); err != nil {
				s.SaveLocked()
				return err.Error()
			}
		}
		s.SetRunningLocked(node, vmid, on)
		s.SaveLocked()
		return ""
	}), nil
}
