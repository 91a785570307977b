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
