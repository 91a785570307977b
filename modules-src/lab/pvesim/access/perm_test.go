package access

import "testing"

// $compile_acl_path: a pool's roles reach its members (never propagated,
// so the flag is 0), a member's own NoAccess beats them, and a pool's
// NoAccess beats the member's own roles; a privilege-separated token keeps
// only what its user has too (K19).
func TestPermissionsPoolRolesAndPrivsep(t *testing.T) {
	a := &Config{
		Users:  map[string]*User{"u@pve": {ID: "u@pve"}},
		Tokens: map[string]*Token{"u@pve!sep": {ID: "u@pve!sep", Privsep: true}},
		ACL: []ACLEntry{
			{Path: "/pool/tenant", UGID: "u@pve", Role: "PVEVMUser", Propagate: true},
			{Path: "/pool/locked", UGID: "u@pve", Role: "NoAccess", Propagate: true},
			{Path: "/vms/101", UGID: "u@pve", Role: "NoAccess"},
			{Path: "/vms", UGID: "u@pve", Role: "PVEAuditor", Propagate: true},
			{Path: "/vms", UGID: "u@pve!sep", Role: "PVEVMAdmin", Propagate: true},
		},
	}
	pools := map[string][]string{"/vms/100": {"tenant"}, "/vms/101": {"tenant"}, "/vms/102": {"locked"}}
	env := Env{Access: a, Version: 9, PoolsOf: func(path string) []string { return pools[path] }}
	p := env.Privileges("u@pve", "/vms/100")
	if prop, ok := p["VM.PowerMgmt"]; !ok || prop {
		t.Errorf("/vms/100 in pool tenant: VM.PowerMgmt %v/%v, want set, not propagated (%v)", ok, prop, p)
	}
	if !p["VM.Audit"] {
		t.Errorf("/vms/100: the propagated PVEAuditor from /vms is lost: %v", p)
	}
	if p := env.Privileges("u@pve", "/vms/101"); len(p) != 0 {
		t.Errorf("/vms/101 with its own NoAccess: %v", p)
	}
	if p := env.Privileges("u@pve", "/vms/102"); len(p) != 0 {
		t.Errorf("/vms/102 in a NoAccess pool: %v", p)
	}
	tok := env.Privileges("u@pve!sep", "/vms/103")
	if _, admin := tok["VM.Allocate"]; !tok["VM.Audit"] || admin {
		t.Errorf("privsep token with PVEVMAdmin, user with PVEAuditor: %v, want VM.Audit, not VM.Allocate", tok)
	}
	if ok, d := env.CheckFull("u@pve!sep", "/vms/103", []string{"VM.Audit", "VM.Allocate"}, false); ok || d != "/vms/103, VM.Allocate" {
		t.Errorf("CheckFull: %v %q", ok, d)
	}
}

// RPCEnvironment's check and check_any ask whether a privilege is defined
// (pve-access-control: "to determine whether a privilege is set, check for
// definedness in the returned hash"): an entry on the path itself with
// propagate=0 grants there, and a role a pool hands its members grants on
// them, both with the flag 0; the entry does not reach the path's children.
func TestCheckCountsUnpropagatedPrivileges(t *testing.T) {
	a := &Config{
		Users: map[string]*User{"u@pve": {ID: "u@pve"}},
		ACL: []ACLEntry{
			{Path: "/vms/100", UGID: "u@pve", Role: "PVEVMAdmin"},
			{Path: "/pool/tenant", UGID: "u@pve", Role: "PVEVMUser", Propagate: true},
			{Path: "/storage", UGID: "u@pve", Role: "PVEDatastoreUser"},
		},
	}
	pools := map[string][]string{"/vms/200": {"tenant"}}
	env := Env{Access: a, Version: 9, PoolsOf: func(path string) []string { return pools[path] }}
	for _, c := range []struct {
		path, priv string
		any, want  bool
	}{
		{"/vms/100", "VM.Allocate", false, true},  // on the path, propagate=0
		{"/vms/100", "VM.Allocate", true, true},   // check_any alike
		{"/vms/200", "VM.PowerMgmt", false, true}, // from the pool, never propagated
		{"/storage", "Datastore.AllocateSpace", false, true},
		{"/storage/local", "Datastore.AllocateSpace", false, false}, // not propagated below
		{"/vms/200", "VM.Allocate", false, false},                   // not in PVEVMUser
	} {
		ok, detail := env.CheckFull("u@pve", c.path, []string{c.priv}, c.any)
		if ok != c.want {
			t.Errorf("CheckFull(%s, %s, any=%v) = %v (%q), want %v", c.path, c.priv, c.any, ok, detail, c.want)
		}
		if got := env.HasPriv("u@pve", c.path, []string{c.priv}, c.any); got != c.want {
			t.Errorf("HasPriv(%s, %s, any=%v) = %v, want %v", c.path, c.priv, c.any, got, c.want)
		}
	}
}
