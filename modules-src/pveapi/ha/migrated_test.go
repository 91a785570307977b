package ha

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gopve/proxmox/modules-src/pveapi"
)

// H2: PVE 9's refusals of group calls after the migration to rules, in the
// exact words of pve-ha-manager's API2/HA/Groups.pm and Resources.pm (a
// die: 500 over HTTPS, no status from pvesh), are recognised, also
// wrapped; the same words with another status, in a lost answer, in
// another message, or a plain error are not.
func TestMigratedErrorExactDie(t *testing.T) {
	die := func(status int, msg string) error {
		return &pveapi.Error{Method: "GET", Path: "/cluster/ha/groups", Status: status, Message: msg}
	}
	for _, msg := range []string{
		"cannot index groups: ha groups have been migrated to rules",
		"cannot read group: ha groups have been migrated to rules",
		"cannot create group: ha groups have been migrated to rules",
		"cannot update group: ha groups have been migrated to rules",
		"cannot delete group: ha groups have been migrated to rules",
		"invalid parameter 'group': ha groups have been migrated to rules",
		"cannot index groups: ha groups have been migrated to rules\n", // the die's newline, if a transport keeps it
	} {
		if !MigratedError(die(500, msg)) || !MigratedError(die(0, msg)) || !MigratedError(fmt.Errorf("reading groups: %w", die(500, msg))) {
			t.Errorf("not recognised: %q", msg)
		}
	}
	lost := die(500, "cannot index groups: ha groups have been migrated to rules").(*pveapi.Error)
	lost.Unanswered = true
	for name, err := range map[string]error{
		"proxy 503":       die(503, "cannot index groups: ha groups have been migrated to rules"),
		"400":             die(400, "cannot index groups: ha groups have been migrated to rules"),
		"transport error": &pveapi.Error{Status: 0, Message: "cannot index groups: ha groups have been migrated to rules", Err: errors.New("reset")},
		"unanswered":      lost,
		"not yet":         die(500, "cannot create ha rule: ha groups have not been migrated yet"),
		"inside a text":   die(500, "HA group 'x' does not exist (comment: ha groups have been migrated to rules)"),
		"plain error":     errors.New("cannot index groups: ha groups have been migrated to rules"),
		"nil":             nil,
	} {
		if MigratedError(err) {
			t.Errorf("%s taken for the migration refusal: %v", name, err)
		}
	}
}
