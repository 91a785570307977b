package pvecontainer

import "fmt"

// CreateDefaults are what create_vm sets once the archive is unpacked,
// for a create and a restore alike (src/PVE/API2/LXC.pm: hostname ||=
// "CT$vmid", memory ||= 512, swap //= 512). Reconstruction: a hostname
// "0" (Perl-false) is kept.
func CreateDefaults(keys map[string]string, vmid int) {
	if keys["hostname"] == "" {
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
