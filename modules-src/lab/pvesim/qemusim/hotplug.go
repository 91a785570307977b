package qemusim

import (
	"maps"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
)

// What a running VM's hotplug meets on the node (qemu-server
// QemuServer.pm vmconfig_hotplug_pending → vmconfig_update_net,
// vm_deviceplug/vm_deviceunplug, qemu_devicedelverify; pve-common
// Network.pm tap_create/read_bridge_mtu/tap_plug): the node's bridges and
// a guest that does not let a device go. A failure there is raised after
// the config was written: the key stays pending and the update answers
// `400 Parameter verification failed.` with `hotplug problem - <die>` for
// it (qemu.go applyUpdateLocked), every other key applied.

// DefaultBridges are the bridges of a lab node that no test changed
// (reconstruction: PVE's installer makes vmbr0; the lab adds the ones its
// tests and examples use).
var DefaultBridges = []string{"vmbr0", "vmbr1", "vmbr2"}

func (s *backend) bridgeLocked(node, bridge string) bool {
	n := s.State.Nodes[node]
	if n == nil {
		return false
	}
	if n.Bridges == nil {
		return slices.Contains(DefaultBridges, bridge)
	}
	return slices.Contains(n.Bridges, bridge)
}

// unplugLocked is vm_deviceunplug of a NIC or disk: device_del, then
// qemu_devicedelverify polls the device list (5 s) and dies when the guest
// kept it. Not modelled: the 5 s the poll takes.
func (s *backend) unplugLocked(node string, vmid int, device string) error {
	if n := s.State.Nodes[node]; n != nil && slices.Contains(n.HeldDevices[vmid], device) {
		return pvecommon.Die("error on hot-unplugging device '%s' - still busy in guest?", device)
	}
	return nil
}

// netdevAddLocked is qemu_netdevadd: QEMU runs pve-bridge-hotplug, whose
// tap_create reads /sys/class/net/<bridge>/mtu and dies `bridge '<b>' does
// not exist`; QEMU answers netdev_add with the script's wait status (Perl's
// die exits with errno ENOENT, 2: status 512) and QMPClient.pm dies with
// `VM <vmid> qmp command 'netdev_add' failed - <QEMU's error>`.
// Reconstruction: the status figure from Perl's exit code; Perl's own
// ` at …/QMPClient.pm line N.` suffix (the die has no newline) is left
// out, its line number differs per release. The script's path is
// /usr/libexec/qemu-server since qemu-server 8.3.11 (/var/lib/qemu-server
// before).
func (s *backend) netdevAddLocked(node string, vmid int, bridge string) error {
	if bridge == "" || s.bridgeLocked(node, bridge) {
		return nil // no bridge: user-mode networking, nothing to plug into
	}
	return pvecommon.Die("VM %d qmp command 'netdev_add' failed - network script /usr/libexec/qemu-server/pve-bridge-hotplug failed with status 512", vmid)
}

// updateNetLocked is vmconfig_update_net for a running VM with network
// hotplug on: a NIC whose model, MAC, queues or MTU change (or that gains
// or loses its bridge) is unplugged and plugged anew (K10); a bridge, tag,
// trunks or firewall change re-plugs only the tap (tap_plug: a missing
// bridge is `bridge '<b>' is neither a linux nor an OVS bridge!`,
// reconstruction of pve-network Zones.pm tap_plug falling back to
// PVE::Network::tap_plug for a plain bridge); a new NIC is plugged.
func (s *backend) updateNetLocked(node string, vmid int, key, old, value string, logf func(string, ...any)) error {
	nn := qemuserver.ParseNet(value)
	if old != "" {
		on := qemuserver.ParseNet(old)
		if on.Model != nn.Model || on.MAC != nn.MAC || on.Props.Get("queues") != nn.Props.Get("queues") ||
			on.Props.Get("mtu") != nn.Props.Get("mtu") || on.Props.Get("bridge") == "" || nn.Props.Get("bridge") == "" {
			if err := s.unplugLocked(node, vmid, key); err != nil {
				return err
			}
			logf("%s: hotplug: unplug and plug the NIC again (the guest loses its link)", key) // the effect, K10
			return s.netdevAddLocked(node, vmid, nn.Props.Get("bridge"))
		}
		if b := nn.Props.Get("bridge"); b != on.Props.Get("bridge") && !s.bridgeLocked(node, b) {
			return pvecommon.Die("bridge '%s' is neither a linux nor an OVS bridge!", b)
		}
		return nil
	}
	return s.netdevAddLocked(node, vmid, nn.Props.Get("bridge"))
}

// startNICsLocked is what a VM's start meets on the node: QEMU runs
// pve-bridge for each NIC's tap at launch, which dies `bridge '<b>' does
// not exist` on a missing bridge; QEMU then exits (`kvm: -netdev …:
// network script … failed with status 512`) and vm_start dies `start
// failed: QEMU exited with code 1`. It returns that task error, or "".
// Reconstruction: vhost=on is assumed for virtio (kernel_has_vhost_net).
func (s *backend) startNICsLocked(node string, vmid int, c *guestconf.Conf, logf func(string, ...any)) string {
	for _, k := range slices.Sorted(maps.Keys(c.Keys)) {
		if !qemuserver.IsNetKey(k) {
			continue
		}
		n := qemuserver.ParseNet(c.Keys[k])
		b := n.Props.Get("bridge")
		if b == "" || s.bridgeLocked(node, b) {
			continue
		}
		vhost := ""
		if n.Model == "virtio" {
			vhost = ",vhost=on"
		}
		logf("bridge '%s' does not exist", b)
		logf("kvm: -netdev type=tap,id=%s,ifname=tap%di%s,script=/usr/libexec/qemu-server/pve-bridge,downscript=/usr/libexec/qemu-server/pve-bridgedown%s: network script /usr/libexec/qemu-server/pve-bridge failed with status 512",
			k, vmid, strings.TrimPrefix(k, "net"), vhost)
		return "start failed: QEMU exited with code 1"
	}
	return ""
}
