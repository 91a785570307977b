package access

import (
	"slices"
	"testing"
)

// PVE 9's built-in roles from create_roles: PVEVMAdmin has VM.Replicate
// and the GuestAgent privileges, VM.Monitor is gone; PVE 8's the reverse.
func TestAccessBuiltinRolesPerVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		version   int
		has, lack []string
	}{
		{9, []string{"VM.Replicate", "VM.GuestAgent.Audit", "VM.GuestAgent.Unrestricted"}, []string{"VM.Monitor"}},
		{8, []string{"VM.Monitor"}, []string{"VM.Replicate", "VM.GuestAgent.Audit"}},
	} {
		roles := SpecialRoles(tc.version)
		for _, p := range tc.has {
			if !slices.Contains(roles["PVEVMAdmin"], p) || !slices.Contains(roles["Administrator"], p) {
				t.Errorf("PVE %d: PVEVMAdmin/Administrator lack %s", tc.version, p)
			}
		}
		for _, p := range tc.lack {
			if slices.Contains(roles["Administrator"], p) {
				t.Errorf("PVE %d: Administrator has %s", tc.version, p)
			}
		}
		if slices.Contains(roles["PVEAdmin"], "Sys.Modify") || slices.Contains(roles["PVEAdmin"], "Mapping.Modify") || !slices.Contains(roles["PVEAdmin"], "Sys.Console") {
			t.Errorf("PVE %d: PVEAdmin %v", tc.version, roles["PVEAdmin"])
		}
		if !slices.Equal(roles["PVETemplateUser"], []string{"VM.Audit", "VM.Clone"}) || len(roles) != 17 {
			t.Errorf("PVE %d: %d roles, PVETemplateUser %v", tc.version, len(roles), roles["PVETemplateUser"])
		}
	}
}
