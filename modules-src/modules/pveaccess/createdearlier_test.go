package pveaccess

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// K15 in a play: the role's check run meets a token whose user, and ACL
// entries whose role, an earlier task of the same play creates. Named in
// created_earlier they are assumed (changed, a warning, not_yet, no write);
// not named, the check run fails as the real run does (a typo stays an
// error), and the real run assumes nothing.
func TestCreatedEarlierUserAndRole(t *testing.T) {
	for _, v := range []int{9, 8} {
		t.Run(fmt.Sprintf("PVE%d", v), func(t *testing.T) {
			w := newWorld(t, v)
			token := map[string]any{"type": "token", "userid": "automation@pve", "tokenid": "gopve"}
			acl := map[string]any{"type": "acl", "path": "/", "roles": []any{"Automation"}, "users": []any{"root@pam"}}
			cfg := w.userCfg()
			for _, tc := range []struct {
				args  map[string]any
				early map[string]any
				want  string // the warning (assumed) or the error (not named)
				fails bool
			}{
				{token, map[string]any{"users": []any{"automation@pve"}}, "userid: user automation@pve does not exist yet", false},
				{token, map[string]any{"users": []any{"automaton@pve"}}, "userid: user automation@pve does not exist (create it first", true},
				{acl, map[string]any{"roles": []any{"Automation"}}, "roles: role Automation does not exist yet", false},
				{acl, map[string]any{}, `roles: role "Automation" does not exist on this cluster`, true},
			} {
				args := map[string]any{"created_earlier": tc.early}
				for k, v := range tc.args {
					args[k] = v
				}
				before := len(pveapitest.Mutating(w.sim))
				res := w.run(args, true)
				if n := len(pveapitest.Mutating(w.sim)); n != before || w.userCfg() != cfg {
					t.Fatalf("%v: check mode wrote", args)
				}
				got := fmt.Sprint(res["warnings"], res["msg"])
				if tc.fails != (res["failed"] == true) || !strings.Contains(got, tc.want) {
					t.Errorf("%v: want failed=%v with %q, got %v", args, tc.fails, tc.want, res)
				}
				if !tc.fails && (res["changed"] != true || len(res["not_yet"].([]any)) != 1) {
					t.Errorf("%v: want the creation predicted and one not_yet, got %v", args, res)
				}
				// A real run assumes nothing: the same error, nothing written.
				if res := w.run(args, false); res["failed"] != true || res["changed"] != false {
					t.Errorf("%v: the real run must fail unchanged, got %v", args, res)
				}
				if n := len(pveapitest.Mutating(w.sim)); n != before || w.userCfg() != cfg {
					t.Fatalf("%v: the refused real run wrote", args)
				}
			}
		})
	}
}
