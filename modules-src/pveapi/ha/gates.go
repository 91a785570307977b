package ha

import (
	"context"
	"errors"
	"regexp"
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
// rules list shows virtual rules either way (API2/HA/Rules.pm index adds
// an ha-group-<group> rule for every group a resource names, with no mark
// that tells it from a real one).
func Detect(ctx context.Context, g pveapi.Getter, major int) (Mechanism, error) {
	m, _, err := DetectGroups(ctx, g, major)
	return m, err
}

// DetectGroups is Detect that also returns the groups its read listed on
// an unmigrated PVE 9 cluster (nil otherwise: PVE 8's groups are not read
// to choose), so that a caller needing them does not read them twice.
func DetectGroups(ctx context.Context, g pveapi.Getter, major int) (Mechanism, []Group, error) {
	if !Gates(major).Rules {
		return UseGroups, nil, nil
	}
	groups, err := Groups(ctx, g)
	if err != nil {
		if MigratedError(err) {
			return UseRules, nil, nil
		}
		return "", nil, err
	}
	return UseGroupsUnmigrated, groups, nil
}

// migratedDie is PVE 9's die for a group call once the HA groups are
// migrated to rules, in its exact words: pve-ha-manager
// src/PVE/API2/HA/Groups.pm ("cannot index groups", "cannot read group",
// "cannot create group", "cannot update group", "cannot delete group") and
// API2/HA/Resources.pm (a resource create or update naming a group:
// "invalid parameter 'group'"), each followed by ": ha groups have been
// migrated to rules".
var migratedDie = regexp.MustCompile(`^(cannot (index groups|read group|create group|update group|delete group)|invalid parameter 'group'): ha groups have been migrated to rules$`)

// MigratedError tells whether err is PVE 9's refusal of a group call
// because groups have been migrated to rules (H2): an API error that is a
// handler's die — status 500 over HTTPS, or no status from pvesh in local
// mode (which prints the die without one) — whose message is one of
// migratedDie's. Any other failure (a proxy's 5xx, a lost answer, a
// comment or name that happens to hold the words) is not.
func MigratedError(err error) bool {
	var e *pveapi.Error
	if !errors.As(err, &e) || e.Unanswered {
		return false
	}
	if e.Status != 500 && (e.Status != 0 || e.Err != nil) {
		return false
	}
	return migratedDie.MatchString(strings.TrimSpace(e.Message))
}
