package core

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
)

// QEMU guests' power: status/start, stop, shutdown, through HA when the
// guest is HA-managed (qemu-server's API2/Qemu.pm vm_start, vm_stop,
// vm_shutdown).

// POST status/start: qmstart task; vm_start's checks run in the worker.
func (s *Sim) postQemuStart(rc *Req) (any, error) {
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
func (s *Sim) postQemuStop(rc *Req) (any, error)     { return s.qemuHalt(rc, "qmstop") }
func (s *Sim) postQemuShutdown(rc *Req) (any, error) { return s.qemuHalt(rc, "qmshutdown") }

func (s *Sim) qemuHalt(rc *Req, typ string) (any, error) {
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
func (s *Sim) haPowerLocked(rc *Req, typ, state string) (string, bool) {
	db := rc.DB()
	vmid := rc.VMID()
	if s.assertOnNodeLocked(db, rc.Node, vmid) != nil {
		return "", false
	}
	if _, managed := s.haManagedLocked(db, vmid); !managed {
		return "", false
	}
	return s.haRequestTask(rc, typ, vmid, state), true
}

// powerTask runs a start/stop task under the config lock; decide returns an
// error text, or the new running state. A started VM applies its pending
// changes (they were waiting for the restart).
func (s *Sim) powerTask(rc *Req, typ string, decide func(c *guestconf.Conf, running bool) (string, bool)) (any, error) {
	db := rc.DB()
	vmid := rc.VMID()
	if _, err := rc.skiplock(); err != nil {
		return nil, err
	}
	if err := s.assertOnNodeLocked(db, rc.Node, vmid); err != nil {
		return nil, err
	}
	if err := s.RequireQuorumLocked(db); err != nil {
		return nil, err
	}
	node := rc.Node
	return s.GuestLockTask(rc, node, typ, vmid, func(t *TaskRun) string {
		c, err := s.loadQmConfLocked(db, node, vmid)
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
			s.writeQmConfLocked(db, node, vmid, c)
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
