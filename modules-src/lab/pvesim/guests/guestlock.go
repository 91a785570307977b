package guests

import (
	"fmt"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/flocktable"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// A guest's configuration is its file in /etc/pve, nodes/<node>/qemu-server/
// <vmid>.conf (or lxc/), in PVE's format (package guestconf). The file is
// the truth: the API parses it on every read, so a config edited on a lab
// node (or being cloned) is what the API shows. Which node holds a guest is
// pmxcfs's .vmlist (core's VMListLocked).
//
// Guest work is serialised by the guest's config lock on the node that
// does it, /var/lock/qemu-server/lock-<vmid>.conf (pve-guest-common
// AbstractConfig.pm lock_config_full: 10 s for lock_config, 1 s when clone
// takes the source and the new VMID, shared on a stopped source —
// qemu-server API2/Qemu.pm clone_vm), a flock of the Sim's table
// (pvesim/flocktable).

// GuestConfPath is the /etc/pve-relative path of a guest's config.
func GuestConfPath(node, kind string, vmid int) string {
	return fmt.Sprintf("nodes/%s/%s/%d.conf", node, kind, vmid)
}

// FindVMLocked returns where vmid lives in db's cluster.
func (m Model) FindVMLocked(db *core.ConfigDB, vmid int) (core.VMEntry, bool) {
	for _, e := range m.VMListLocked(db) {
		if e.VMID == vmid {
			return e, true
		}
	}
	return core.VMEntry{}, false
}

// EtcPveWritableLocked is what writing rel into a read-only /etc/pve (no
// quorum, C10) fails with: file_set_contents cannot open its temp file
// (pve-common PVE/File.pm).
func (m Model) EtcPveWritableLocked(db *core.ConfigDB, rel string) error {
	if m.QuorateLocked(db) {
		return nil
	}
	return pvecommon.Die("unable to open file '/etc/pve/%s.tmp.%d' - Permission denied", rel, m.State.NextPID+1)
}

// GuestLockKey names the config flock of vmid on node; GuestLockFile is its
// path as PVE prints it.
func GuestLockKey(node string, vmid int) string { return fmt.Sprintf("%s:qemu:%d", node, vmid) }
func GuestLockFile(vmid int) string             { return fmt.Sprintf("/var/lock/qemu-server/lock-%d.conf", vmid) }

// WithGuestLockLocked runs f holding vmid's config lock on node for the
// length of a synchronous call (lock_config, 10 s): busy → core.LockWait,
// which the router waits out before it runs the handler again.
func (m Model) WithGuestLockLocked(node string, vmid int, f func() (any, error)) (any, error) {
	key := GuestLockKey(node, vmid)
	if !m.Flocks.TryLock(key, false) {
		return nil, &core.LockWait{Key: key, Timeout: m.Cfg.Dur(m.Cfg.LockTimeout, core.DefaultLockTimeout),
			Msg: flocktable.ErrTimeout(GuestLockFile(vmid)).Error()}
	}
	defer m.Flocks.Unlock(key, false)
	return f()
}
