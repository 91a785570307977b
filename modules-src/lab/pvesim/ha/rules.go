package ha

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// HA rules, PVE 9 (rules.cfg; Rules.pm, Rules/NodeAffinity.pm,
// Rules/ResourceAffinity.pm, API2/HA/Rules.pm), and the groups' migration
// to them (Groups.pm migrate_groups_to_rules, Manager.pm).

// RuleOpts are the options create and update take for a rule.
var RuleOpts = []string{"resources", "nodes", "strict", "affinity", "comment", "disable"}

// RuleView is $get_api_ha_rule: the rule's options (set_rule_defaults adds
// only truthy defaults, so strict 0 and disable 0 are absent), rule, the
// file's digest, its order, and the feasibility errors of a rule the CRM
// would drop.
func RuleView(r *Section, digest string, order int, errs map[string][]string) map[string]any {
	out := SectionView(map[string]any{"rule": r.ID, "type": r.Type}, r, digest, "strict", "disable")
	out["order"] = order
	if len(errs) > 0 {
		e := map[string]any{}
		for k, msgs := range errs {
			e[k] = msgs
		}
		out["errors"] = e
	}
	return out
}

// OrderedRule is a rule with its SectionConfig order: its position in
// rules.cfg, or get_next_ordinal for a rule made in memory.
type OrderedRule struct {
	Sec   *Section
	Order int
}

// NextOrdinal is Rules.pm get_next_ordinal as written: the *lowest* order
// plus one (so every new rule of a non-empty file gets 2).
func NextOrdinal(list []OrderedRule) int {
	low := 0
	for i, r := range list {
		if i == 0 || r.Order < low {
			low = r.Order
		}
	}
	return low + 1
}

// MigrateGroupsToRules is Groups.pm migrate_groups_to_rules on the rules of
// rules.cfg: every group some resource uses becomes the node-affinity rule
// ha-group-<group> (nodes and comment from the group, strict = restricted,
// resources = its members); unused groups vanish. Perl walks the groups in
// hash order; the lab in name order (reconstruction).
func MigrateGroupsToRules(rules, groups, resources []*Section) []*Section {
	out := OrderRules(rules)
	members := map[string][]string{}
	for _, r := range resources {
		if g := r.Opts["group"]; g != "" {
			members[g] = append(members[g], SID(r))
		}
	}
	for _, g := range slices.Sorted(maps.Keys(members)) {
		gs := pvecommon.FindSection(groups, g)
		if gs == nil {
			continue
		}
		rule := &Section{Type: "node-affinity", ID: "ha-group-" + g, Opts: map[string]string{
			"resources": NormaliseList(strings.Join(members[g], ",")),
			"nodes":     NormaliseNodes(gs.Opts["nodes"]),
			"comment":   gs.Opts["comment"],
		}}
		if rule.Opts["comment"] == "" {
			rule.Opts["comment"] = fmt.Sprintf("Generated from HA group '%s'.", g)
		}
		if v, ok := gs.Opts["restricted"]; ok {
			rule.Opts["strict"] = v
		}
		out = InsertOrdered(out, OrderedRule{Sec: rule, Order: NextOrdinal(out)})
	}
	return Sections(out)
}

// Sections are the rules without their order.
func Sections(list []OrderedRule) []*Section {
	var out []*Section
	for _, r := range list {
		out = append(out, r.Sec)
	}
	return out
}

// OrderRules numbers rules.cfg's sections as parse_config does (1, 2, …).
func OrderRules(list []*Section) []OrderedRule {
	out := make([]OrderedRule, len(list))
	for i, r := range list {
		out[i] = OrderedRule{Sec: r, Order: i + 1}
	}
	return out
}

// InsertOrdered places r as write_config sorts sections by order; among
// equal orders Perl's hash order decides, the lab puts the newcomer last
// (reconstruction).
func InsertOrdered(list []OrderedRule, r OrderedRule) []OrderedRule {
	i := 0
	for i < len(list) && list[i].Order <= r.Order {
		i++
	}
	return slices.Insert(list, i, r)
}

// AddRule is create_rule's placing of r: order = get_next_ordinal, then
// written sorted by order.
func AddRule(rules []*Section, r *Section) []*Section {
	return Sections(InsertOrdered(OrderRules(rules), OrderedRule{Sec: r, Order: NextOrdinal(OrderRules(rules))}))
}

// FullRules is the API's $get_full_rules_config: rules.cfg plus, on a
// cluster whose groups are not migrated yet, the ha-group-* rules made in
// memory (they carry get_next_ordinal's order, not a file position).
func (c Config) FullRules() []OrderedRule {
	out := OrderRules(c.Rules)
	if len(c.Groups) == 0 {
		return out
	}
	for _, r := range MigrateGroupsToRules(nil, c.Groups, c.Resources) {
		out = InsertOrdered(out, OrderedRule{Sec: r, Order: NextOrdinal(out)})
	}
	return out
}

// RuleErrors is Rules.pm check_feasibility over enabled rules in a
// cluster of nodes nodes (a subset of its checks: NodeAffinity.pm
// check_single_resource_reference — blamed on every rule sharing the
// resource —, ResourceAffinity.pm's "less than two resources" and
// negative affinity's "more resources than available nodes"): rule →
// option → messages.
func RuleErrors(rules []*Section, nodes int) map[string]map[string][]string {
	errs := map[string]map[string][]string{}
	blame := func(id, opt, msg string) {
		if errs[id] == nil {
			errs[id] = map[string][]string{}
		}
		errs[id][opt] = append(errs[id][opt], msg)
	}
	users := map[string][]string{}
	for _, r := range rules {
		if r.Opts["disable"] != "" {
			continue
		}
		res := pvecommon.SplitComma(r.Opts["resources"])
		switch r.Type {
		case "node-affinity":
			for _, sid := range res {
				users[sid] = append(users[sid], r.ID)
			}
		case "resource-affinity":
			if len(res) < 2 {
				blame(r.ID, "resources", "rule is ineffective as there are less than two resources")
			} else if r.Opts["affinity"] == "negative" && len(res) > nodes {
				blame(r.ID, "resources", "rule defines more resources than available nodes")
			}
		}
	}
	for _, sid := range slices.Sorted(maps.Keys(users)) {
		if ids := users[sid]; len(ids) > 1 {
			for _, id := range slices.Sorted(slices.Values(ids)) {
				blame(id, "resources", fmt.Sprintf("resource '%s' is already used in another node affinity rule", sid))
			}
		}
	}
	return errs
}

// NormaliseList sorts a comma list as PVE prints its hash-backed lists.
func NormaliseList(v string) string {
	items := pvecommon.SplitComma(v)
	sort.Strings(items)
	return strings.Join(slices.Compact(items), ",")
}

// ParseNodePriorities is a "node[:prio],…" list (Tools.pm
// parse_node_priority: no priority is 0).
func ParseNodePriorities(list string) map[string]int {
	out := map[string]int{}
	for _, p := range pvecommon.SplitComma(list) {
		name, prio, _ := strings.Cut(p, ":")
		n, _ := strconv.Atoi(prio)
		out[name] = n
	}
	return out
}

// NormaliseNodes is NodeAffinity.pm encode_plugin_value: nodes sorted by
// name, a priority of 0 (or none) printed as the bare name.
func NormaliseNodes(v string) string {
	prios := ParseNodePriorities(v)
	var out []string
	for _, n := range slices.Sorted(maps.Keys(prios)) {
		if p := prios[n]; p != 0 {
			out = append(out, fmt.Sprintf("%s:%d", n, p))
		} else {
			out = append(out, n)
		}
	}
	return strings.Join(out, ",")
}

// NormaliseRuleLists stores a rule's resources and nodes as PVE does.
func NormaliseRuleLists(r *Section) {
	if v, ok := r.Opts["resources"]; ok {
		r.Opts["resources"] = NormaliseList(v)
	}
	if v, ok := r.Opts["nodes"]; ok {
		r.Opts["nodes"] = NormaliseNodes(v)
	}
}

// InvalidRule is a rule the feasibility checks refuse: the API answers it
// as 400 with the messages per option.
type InvalidRule struct {
	Rule   string
	Fields map[string]string
}

func (e *InvalidRule) Error() string { return fmt.Sprintf("Rule '%s' is invalid.", e.Rule) }

// CheckRule validates r, a new or updated rule, against rules.cfg as
// Rules.pm's API does: resources must be HA-managed, nodes must be
// members, then the feasibility checks (RuleErrors).
func (c Config) CheckRule(r *Section, members []string) error {
	res := pvecommon.SplitComma(r.Opts["resources"])
	if len(res) == 0 {
		return fmt.Errorf("no resources were specified")
	}
	var unmanaged []string
	for _, sid := range res {
		if c.Resource(sid) == nil {
			unmanaged = append(unmanaged, sid)
		}
	}
	if len(unmanaged) > 0 {
		return pvecommon.Die("cannot use unmanaged resource(s) %s.", strings.Join(unmanaged, ", "))
	}
	if r.Type == "node-affinity" {
		var missing []string
		for _, n := range pvecommon.SplitComma(r.Opts["nodes"]) {
			name, _, _ := strings.Cut(n, ":")
			if !slices.Contains(members, name) {
				missing = append(missing, name)
			}
		}
		if len(pvecommon.SplitComma(r.Opts["nodes"])) == 0 {
			return fmt.Errorf("no nodes were specified")
		}
		if len(missing) > 0 {
			return pvecommon.Die("cannot use non-existent node(s) %s.", strings.Join(missing, ", "))
		}
	}
	candidate := slices.DeleteFunc(slices.Clone(c.Rules), func(o *Section) bool { return o.ID == r.ID })
	errs := RuleErrors(append(candidate, r), len(members))[r.ID]
	if len(errs) > 0 {
		fields := map[string]string{}
		for k, msgs := range errs {
			fields[k] = strings.Join(msgs, ", ")
		}
		return &InvalidRule{Rule: r.ID, Fields: fields}
	}
	return nil
}
