package pvecontainer

import (
	"fmt"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// CreateDefaults are what create_vm sets once the archive is unpacked,
// for a create and a restore alike (src/PVE/API2/LXC.pm: hostname ||=
// "CT$vmid", memory ||= 512, swap //= 512): `||=` replaces a Perl-false
// value, so a hostname "0" becomes CT<vmid> as an empty one does.
func CreateDefaults(keys map[string]string, vmid int) {
	if !pvecommon.PerlTrue(keys["hostname"]) {
		keys["hostname"] = fmt.Sprintf("CT%d", vmid)
	}
	if keys["memory"] == "" || keys["memory"] == "0" {
		keys["memory"] = "512"
	}
	if _, ok := keys["swap"]; !ok {
		keys["swap"] = "512"
	}
}

// RootOwner is the "uid:gid" that owns a CT volume's root directory: the
// root IDs of parse_id_maps (src/PVE/LXC.pm), 0 for a privileged CT and
// 100000 for an unprivileged one (its default map "u 0 100000 65536",
// which mountpoint_mount chowns the root to). Custom lxc.idmap entries
// are not simulated.
func RootOwner(unprivileged bool) string {
	if unprivileged {
		return "100000:100000"
	}
	return "0:0"
}
