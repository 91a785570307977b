package pvesim

import (
	"net/http/httptest"
	"testing"
)

// A task the CLI stand-ins start runs as root@pam, as PVE's own pvesh, qm,
// pvesm… do (RPCEnvironment::setup_default_cli_env sets root@pam), not as
// the lab token they authenticate with; an API client with the same token
// is its token (pve-manager HTTPServer: the token id is the user). Local
// mode's identity proof (issue 23 §1) depends on the difference.
func TestCLIStandInTasksRunAsRootPam(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{Nodes: 1})
	id, secret := s.LabToken()
	for _, cli := range []bool{false, true} {
		r := httptest.NewRequest("GET", "/api2/json/version", nil)
		r.Header.Set("Authorization", "PVEAPIToken="+id+"="+secret)
		if cli {
			r.Header.Set(CLIHeader, "1")
		}
		s.Mu.Lock()
		who, msg := s.Authenticate(s.DBOf("pve01"), r)
		s.Mu.Unlock()
		want := map[bool]string{false: "root@pam!lab", true: "root@pam"}[cli]
		if who == nil || who.TaskUser() != want {
			t.Errorf("cli=%v: %+v %s, want tasks run as %s", cli, who, msg, want)
		}
	}
}
