package qemuserver

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

var localResourceRe = regexp.MustCompile(`^(usb|hostpci|serial|parallel|virtiofs)\d+$`)

// LocalResources is check_local_resources (src/PVE/QemuMigrate/
// Helpers.pm) without resource mappings: the keys of devices that only exist on this node (a
// serial socket and a SPICE USB port are recreated on the target). A
// device given by a mapping (mapping=) is left to the mapping checks the
// lab does not simulate. Reconstruction: the keys in sorted order.
func LocalResources(conf map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		v := conf[k]
		switch {
		case k == "ivshmem" || k == "hostusb" || k == "hostpci":
			out = append(out, k)
		case !localResourceRe.MatchString(k):
		case strings.HasPrefix(k, "serial") && v == "socket":
		case strings.HasPrefix(k, "usb") && strings.EqualFold(pvecommon.ParseProps(v, "host").Get("host"), "spice"):
		case strings.Contains(v, "mapping="):
		default:
			out = append(out, k)
		}
	}
	return out
}
