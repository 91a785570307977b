package ha

import (
	"context"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi"
)

// VersionGates is what the HA API of one PVE major accepts.
type VersionGates struct {
	Major    int
	Groups   bool // /cluster/ha/groups exists (PVE 8; PVE 9 until migrated)
	Rules    bool // /cluster/ha/rules exists (PVE 9)
	Failback bool // resources take failback (PVE 9; PVE 8 has the group's nofailback)
}

// Gates returns the gates of a PVE major version (from /version).
func Gates(major int) VersionGates {
	return VersionGates{Major: major, Groups: true, Rules: major >= 9, Failback: major >= 9}
}

// Mechanism is how node placement is written on a cluster.
type Mechanism string

const (
	// UseGroups: PVE 8 — an HA group per placement.
	UseGroups Mechanism = "groups"
	// UseRules: PVE 9 with the groups migrated (or none ever made) — a
	// node-affinity rule.
	UseRules Mechanism = "rules"
	// UseGroupsUnmigrated: PVE 9 whose group config still has groups: PVE
	// refuses to create or change rules until the CRM has migrated them
	// (every node on 9, every LRM active); groups stay writable, and the
	// ha-group-* rules the API lists are read-only views of them.
	UseGroupsUnmigrated Mechanism = "groups (not yet migrated to rules)"
)

// Detect chooses the mechanism from the version and how the cluster
// answers GET /cluster/ha/groups: on PVE 9 that read fails with "ha groups
// have been migrated to rules" once the group config is empty
// (have_groups_been_migrated), which is the only reliable sign — the
// rules list shows virtual rules either way.
func Detect(ctx context.Context, g pveapi.Getter, major int) (Mechanism, error) {
	if !Gates(major).Rules {
		return UseGroups, nil
	}
	if _, err := Groups(ctx, g); err != nil {
		if MigratedError(err) {
			return UseRules, nil
		}
		return "", err
	}
	return UseGroupsUnmigrated, nil
}

// MigratedError tells whether err is PVE 9's refusal of a group call
// because groups have been migrated to rules (H2).
func MigratedError(err error) bool {
	return err != nil && strings.Contains(err.Error(), "have been migrated to rules")
}
