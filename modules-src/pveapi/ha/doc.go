// Package ha types the HA manager's objects for pve_ha, following
// pve-ha-manager: service ids (HA/Config.pm parse_sid), resources
// (HA/Resources.pm properties, HA/Config.pm read_and_check_resources_config
// for the defaults), groups (HA/Groups.pm, PVE 8 and unmigrated PVE 9),
// rules (HA/Rules.pm, HA/Rules/NodeAffinity.pm, ResourceAffinity.pm;
// PVE 9) and the API's own handling (API2/HA/Resources.pm, Groups.pm,
// Rules.pm).
//
//   - SID: "vm:201", "ct:200"; a bare "201" as PVE takes it, its type found
//     from the cluster's guest list.
//   - Defaults: PVE's list answers leave unset values out (state started,
//     max_restart 1, max_relocate 1, failback 1; a rule's strict and
//     disable 0), so WithDefaults fills them before comparing: a resource
//     created elsewhere compares equal.
//   - Node lists ("pve01:2,pve02"): normalised as NodeAffinity.pm's
//     encode_plugin_value writes them — sorted by node, a priority of 0
//     written as the bare node name (the node stays; only ":0" goes).
//   - Re-enabling a rule: PVE drops disable=0 from a PUT
//     (API2/HA/Rules.pm update_rule), so RuleUpdate sends delete=disable.
//   - Version gates (gates.go): groups on PVE 8, rules on 9, failback on 9
//     only, and on a PVE 9 cluster whose groups are not migrated yet (the
//     group config still has entries, Config.pm have_groups_been_migrated)
//     groups stay the writable mechanism and the listed `ha-group-*` rules
//     are virtual and read-only.
//
// Writes are apischema.Request values the caller dispatches.
package ha
