package qemusim

import (
	"fmt"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// DefaultAgentTimeout is how long an agent call on a running VM waits for
// the guest agent's answer before "QEMU guest agent is not running":
// qemu-server's qga_check_running sends guest-ping over QMP with
// timeout => 3 (PVE/QemuServer/Agent.pm).
const DefaultAgentTimeout = 3 * time.Second

// The guest agent endpoints. No lab guest runs an agent (there is no guest
// OS), so they answer the way PVE answers when the agent is absent — which
// is what a client must survive without hanging (K20): qemu-server's
// PVE::QemuServer::Agent::assert_agent_available (agent_available in
// older releases), checked in this order:
//
//	die "No QEMU guest agent configured\n" if !defined($conf->{agent});
//	die "VM $vmid is not running\n" if !check_running($vmid);
//	die "QEMU guest agent is not running\n" if !qga_check_running($vmid, 1);
//
// all as 500. The first two answer at once; the last only after the
// guest-ping times out (Config.AgentTimeout).

// POST /nodes/{node}/qemu/{vmid}/agent/ping
func (s *backend) postQemuAgentPing(rc *core.Req) (any, error) { return s.agentAvailableLocked(rc) }

// GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces
func (s *backend) getQemuAgentNetworkGetInterfaces(rc *core.Req) (any, error) {
	return s.agentAvailableLocked(rc)
}

// agentAvailableLocked is assert_agent_available for a lab VM: it never returns
// success, since no agent ever answers in the lab.
func (s *backend) agentAvailableLocked(rc *core.Req) (any, error) {
	db := rc.DB()
	vmid := rc.VMID()
	if err := s.AssertOnNodeLocked(db, rc.Node, vmid); err != nil {
		return nil, err
	}
	c, err := s.LoadQMConfLocked(db, rc.Node, vmid)
	if err != nil {
		return nil, err
	}
	if c.Keys["agent"] == "" { // !defined($conf->{agent})
		return nil, core.ErrStatus(500, "No QEMU guest agent configured")
	}
	if _, running := s.State.Nodes[rc.Node].Running[vmid]; !running {
		return nil, core.ErrStatus(500, "VM %d is not running", vmid)
	}
	// "agent: 0" is defined, so PVE goes on to the guest-ping; with the
	// agent disabled the VM has no agent socket. Reconstruction: we take
	// that to fail at once rather than after the ping's timeout.
	if pvecommon.ParseProps(c.Keys["agent"], "enabled").Get("enabled") != "1" {
		return nil, core.ErrStatus(500, "QEMU guest agent is not running")
	}
	// The guest-ping waits, without holding the state lock (runHandlerLocked
	// re-runs this handler until the timeout, then answers msg as 500).
	return nil, &core.LockWait{Key: fmt.Sprintf("agent:%s:%d", rc.Node, vmid),
		Timeout: s.Cfg.Dur(s.Cfg.AgentTimeout, DefaultAgentTimeout),
		Msg:     "QEMU guest agent is not running"}
}
