package access

import "testing"

// update_acl without Permissions.Modify: only a subset of the caller's
// privileges, propagated ones to add a propagating entry, never NoAccess.
func TestCheckHandOut(t *testing.T) {
	mine := map[string]bool{"VM.Audit": true, "VM.Console": false}
	role := map[string]bool{"VM.Audit": true, "VM.Console": true}
	for _, c := range []struct {
		mine           map[string]bool
		role           string
		privs          map[string]bool
		propagate, del bool
		want           string
	}{
		{map[string]bool{"Permissions.Modify": false}, "NoAccess", nil, true, false, ""},
		{mine, "R", map[string]bool{"VM.Audit": true}, true, false, ""},
		{mine, "R", role, false, false, ""},
		{mine, "R", role, true, false, "role: Cannot add role 'R' with propagation - requires 'Permissions.Modify' or propagated superset of privileges."},
		{mine, "R", role, true, true, ""},
		{mine, "R", map[string]bool{"VM.Allocate": true}, false, true, "role: Cannot remove role 'R' - requires 'Permissions.Modify' or superset of privileges."},
		{mine, "NoAccess", nil, false, false, "role: Cannot add role 'NoAccess' - requires 'Permissions.Modify'"},
	} {
		err := CheckHandOut(c.mine, c.role, c.privs, c.propagate, c.del)
		if got := ""; err != nil {
			got = err.Error()
			if got != c.want {
				t.Errorf("CheckHandOut(%v, %s, %v, %v, %v) = %q, want %q", c.mine, c.role, c.privs, c.propagate, c.del, got, c.want)
			}
		} else if c.want != "" {
			t.Errorf("CheckHandOut(%v, %s, %v, %v, %v) = nil, want %q", c.mine, c.role, c.privs, c.propagate, c.del, c.want)
		}
	}
}
