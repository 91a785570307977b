package access

import (
	"maps"
	"slices"
	"strings"
)

// The privileges and built-in ("special") roles of pve-access-control, per
// PVE version. Source: src/PVE/AccessControl.pm, $privgroups and
// create_roles(), of branch stable-bookworm (8.2.3, PVE 8) and master
// (9.1.x, PVE 9): PVE 9 added VM.Replicate and the VM.GuestAgent.*
// privileges and dropped VM.Monitor ("privileges: drop VM.Monitor",
// "add VM.GuestAgent privileges", "add VM.Replicate privilege").
//
// create_roles builds, per category: PVE<cat>Admin from admin+user+audit,
// PVE<cat>User from user+audit when user is not empty, PVEAuditor from
// every audit list, PVEAdmin from admin+user+audit of all categories minus
// Mapping.Modify, PVETemplateUser = VM.Clone+VM.Audit, Administrator every
// valid privilege (root lists included, and Permissions.Modify), NoAccess
// none.

type privGroup struct{ root, admin, user, audit []string }

func privGroups(version int) map[string]privGroup {
	vm := privGroup{
		admin: []string{"VM.Config.Disk", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network",
			"VM.Config.HWType", "VM.Config.Options", "VM.Allocate", "VM.Clone", "VM.GuestAgent.Unrestricted",
			"VM.Migrate", "VM.Replicate", "VM.Snapshot", "VM.Snapshot.Rollback"},
		user: []string{"VM.Config.CDROM", "VM.Config.Cloudinit", "VM.Console", "VM.Backup",
			"VM.GuestAgent.FileRead", "VM.GuestAgent.FileSystemMgmt", "VM.GuestAgent.FileWrite", "VM.PowerMgmt"},
		audit: []string{"VM.Audit", "VM.GuestAgent.Audit"},
	}
	if version == 8 {
		vm = privGroup{
			admin: []string{"VM.Config.Disk", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network",
				"VM.Config.HWType", "VM.Config.Options", "VM.Allocate", "VM.Clone", "VM.Migrate", "VM.Monitor",
				"VM.Snapshot", "VM.Snapshot.Rollback"},
			user:  []string{"VM.Config.CDROM", "VM.Config.Cloudinit", "VM.Console", "VM.Backup", "VM.PowerMgmt"},
			audit: []string{"VM.Audit"},
		}
	}
	return map[string]privGroup{
		"VM": vm,
		"Sys": {
			root:  []string{"Sys.PowerMgmt", "Sys.Modify", "Sys.Incoming", "Sys.AccessNetwork"},
			admin: []string{"Sys.Console", "Sys.Syslog"},
			audit: []string{"Sys.Audit"},
		},
		"Datastore": {
			admin: []string{"Datastore.Allocate", "Datastore.AllocateTemplate"},
			user:  []string{"Datastore.AllocateSpace"},
			audit: []string{"Datastore.Audit"},
		},
		"SDN": {
			admin: []string{"SDN.Allocate", "SDN.Audit"},
			user:  []string{"SDN.Use"},
			audit: []string{"SDN.Audit"},
		},
		"User": {
			root:  []string{"Realm.Allocate"},
			admin: []string{"User.Modify", "Group.Allocate", "Realm.AllocateUser"},
		},
		"Pool": {
			admin: []string{"Pool.Allocate"},
			user:  []string{"Pool.Audit"},
			audit: []string{"Pool.Audit"},
		},
		"Mapping": {
			admin: []string{"Mapping.Modify"},
			user:  []string{"Mapping.Use"},
			audit: []string{"Mapping.Audit"},
		},
	}
}

// privTable is one version's valid privileges and special roles.
type privTable struct {
	valid   map[string]bool
	special map[string]map[string]bool
}

var privTables = map[int]*privTable{8: buildPrivTable(8), 9: buildPrivTable(9)}

func buildPrivTable(version int) *privTable {
	t := &privTable{valid: map[string]bool{"Permissions.Modify": true}, special: map[string]map[string]bool{
		"NoAccess": {}, "PVEAdmin": {}, "PVEAuditor": {},
	}}
	add := func(role string, privs ...string) {
		if t.special[role] == nil {
			t.special[role] = map[string]bool{}
		}
		for _, p := range privs {
			t.special[role][p] = true
		}
	}
	for cat, g := range privGroups(version) {
		for _, p := range slices.Concat(g.root, g.admin, g.user, g.audit) {
			t.valid[p] = true
		}
		adminSet := slices.Concat(g.admin, g.user, g.audit)
		add("PVE"+cat+"Admin", adminSet...)
		add("PVEAdmin", adminSet...)
		if len(g.user) > 0 {
			add("PVE"+cat+"User", slices.Concat(g.user, g.audit)...)
		}
		add("PVEAuditor", g.audit...)
	}
	delete(t.special["PVEAdmin"], "Mapping.Modify")
	add("PVETemplateUser", "VM.Clone", "VM.Audit")
	admin := map[string]bool{}
	for p := range t.valid {
		admin[p] = true
	}
	t.special["Administrator"] = admin
	return t
}

// privsOf is the table of a version (9 for anything but 8).
func privsOf(version int) *privTable {
	if version == 8 {
		return privTables[8]
	}
	return privTables[9]
}

// ValidPrivilege tells whether PVE version knows priv.
func ValidPrivilege(version int, priv string) bool {
	return privsOf(version).valid[priv]
}

// ValidPrivileges lists the privileges PVE version knows, sorted.
func ValidPrivileges(version int) []string {
	return slices.Sorted(maps.Keys(privsOf(version).valid))
}

// IsSpecialRole tells whether role is one of PVE version's built-in roles.
func IsSpecialRole(version int, role string) bool {
	_, ok := privsOf(version).special[role]
	return ok
}

// SpecialRoles lists PVE version's built-in roles and their privileges.
func SpecialRoles(version int) map[string][]string {
	out := map[string][]string{}
	for r, ps := range privsOf(version).special {
		out[r] = slices.Sorted(maps.Keys(ps))
	}
	return out
}

// RolePrivs is a role's privileges: a special role of the version or a
// custom role of user.cfg; nil when neither.
func (a *Config) RolePrivs(version int, role string) map[string]bool {
	if ps, ok := privsOf(version).special[role]; ok {
		return ps
	}
	return a.Roles[role]
}

// LabRoleName is the custom role a lab helper's "priv:A,B" grant creates:
// user.cfg can only name roles, so the ad-hoc set becomes one (roleid
// characters [A-Za-z0-9.-_], not in the PVE namespace).
func LabRoleName(privs []string) string {
	return "Lab-" + strings.Join(privs, "_")
}
