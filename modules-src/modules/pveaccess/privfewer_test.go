package pveaccess

import (
	"regexp"
	"testing"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// The privileges each kind needs, as the module's notes list them (PVE's
// checks in pve-access-control), proven from both sides against the lab: a
// privilege-separated token holding exactly a kind's privileges creates its
// object and reruns without a change; with one fewer a step fails naming the
// privilege PVE refused (or, for a list PVE filters, K19, the privilege that
// shows it), and changed says what the lab accepted. What a kind
// needs to exist first (the user of a token or an ACL) is made by root.
func TestDocumentedPrivilegesOneFewer(t *testing.T) {
	t.Parallel()
	kinds := []struct {
		name  string
		privs []string
		args  map[string]any
	}{
		{"group", []string{"Group.Allocate"}, map[string]any{"type": "group", "groupid": "ops", "comment": "operators"}},
		{"user", []string{"Realm.AllocateUser", "User.Modify"}, map[string]any{"type": "user", "userid": "robot@pve", "comment": "robot"}},
		{"role", []string{"Sys.Modify"}, map[string]any{"type": "role", "roleid": "Automation", "privileges": []any{"VM.Audit", "Sys.Audit"}}},
		{"token", []string{"User.Modify"}, map[string]any{"type": "token", "userid": "automation@pve", "tokenid": "ci"}},
		{"acl", []string{"Permissions.Modify"}, map[string]any{"type": "acl", "path": "/vms", "roles": []any{"PVEAuditor"}, "users": []any{"automation@pve"}}},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			pveapitest.OneFewer(t, func(int) []string { return k.privs }, func(t *testing.T, v int, drop string, kept []string) {
				w := newWorld(t, v)
				mustOK(t, "root's user", w.run(map[string]any{"type": "user", "userid": "automation@pve"}, false), true)
				id, secret := pveapitest.PrivsepToken(t, w.sim, "pve01", kept)
				conn := w.conn(id, secret)
				run := func() map[string]any {
					return w.exec(New(pveapi.Options{Retry: &pveapitest.FastRetry}), conn, k.args, false, false)
				}
				// PVE's refusal (path, privilege), or for a list PVE
				// filters (K19: what one may not see is left out) the
				// module's own words naming the privilege and path
				// that would show the object.
				named := regexp.MustCompile(`/[\w./@!-]*, ([\w.]+\|)*` + regexp.QuoteMeta(drop) + `\b` +
					`|PVE filters: without ([\w.]+ or )*` + regexp.QuoteMeta(drop) + `\b[^:]* on /`)
				pveapitest.StepsOneFewer(t, w.sim, drop, named, []pveapitest.Step{
					{Name: "create", Changed: true, Run: run},
					{Name: "rerun", Changed: false, Run: run},
				})
			})
		})
	}
}
