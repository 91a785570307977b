package access

import (
	"maps"
	"slices"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// CheckHandOut is update_acl's subset rule (src/PVE/API2/ACL.pm) for a
// caller whose privileges on the path are mine (privilege → propagate,
// Env.Permissions): without Permissions.Modify it may only add or remove
// a role whose privileges it has, propagated ones when the entry
// propagates (adding only), and never NoAccess. Reconstruction: PVE
// raises these as parameter exceptions on role inside
// lock_user_config, which prefixes them like a die; the lab answers them
// as that die, "role: " and the message.
func CheckHandOut(mine map[string]bool, role string, privs map[string]bool, propagate, del bool) error {
	if _, ok := mine["Permissions.Modify"]; ok {
		return nil
	}
	verb := "add"
	if del {
		verb = "remove"
	}
	for _, p := range slices.Sorted(maps.Keys(privs)) {
		have, ok := mine[p]
		if !ok {
			return pvecommon.Die("role: Cannot %s role '%s' - requires 'Permissions.Modify' or superset of privileges.", verb, role)
		}
		if propagate && !have && !del {
			return pvecommon.Die("role: Cannot %s role '%s' with propagation - requires 'Permissions.Modify' or propagated superset of privileges.", verb, role)
		}
	}
	if role == "NoAccess" {
		return pvecommon.Die("role: Cannot %s role '%s' - requires 'Permissions.Modify'", verb, role)
	}
	return nil
}
