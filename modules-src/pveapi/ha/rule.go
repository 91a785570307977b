package ha

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
)

// Rule types (PVE 9).
const (
	NodeAffinity     = "node-affinity"
	ResourceAffinity = "resource-affinity"
)

// GroupRulePrefix names the rules PVE derives from groups
// (HA/Groups.pm migrate_groups_to_rules): "ha-group-<group>".
const GroupRulePrefix = "ha-group-"

// Rule is an HA rule.
type Rule struct {
	ID        string
	Type      string // NodeAffinity or ResourceAffinity
	Resources []SID  // sorted, as encode_value writes them
	Nodes     NodeList
	Strict    bool   // node-affinity; default 0
	Affinity  string // resource-affinity: "positive" or "negative"
	Disable   bool
	Comment   string
	Order     int               // read only: PVE's ordinal of the rule
	Errors    map[string]string // read only: why PVE finds the rule infeasible
	Digest    string
}

// FromGroup tells whether the rule is one PVE derived from a group; before
// the groups are migrated it exists only in the API's answer and cannot
// be changed (API2/HA/Rules.pm: "ha groups have not been migrated yet").
func (r Rule) FromGroup() (group string, ok bool) { return strings.CutPrefix(r.ID, GroupRulePrefix) }

type ruleRow struct {
	Rule      string         `json:"rule"`
	Type      string         `json:"type"`
	Resources string         `json:"resources"`
	Nodes     string         `json:"nodes"`
	Strict    bool           `json:"strict"`
	Affinity  string         `json:"affinity"`
	Disable   bool           `json:"disable"`
	Comment   string         `json:"comment"`
	Order     int            `json:"order"`
	Errors    map[string]any `json:"errors"`
	Digest    string         `json:"digest"`
}

func (r ruleRow) rule() (Rule, error) {
	out := Rule{ID: r.Rule, Type: r.Type, Strict: r.Strict, Affinity: r.Affinity, Disable: r.Disable, Comment: r.Comment,
		Order: r.Order, Digest: r.Digest}
	sids, err := ParseSIDList(r.Resources)
	if err != nil {
		return Rule{}, fmt.Errorf("rule %s: %w", r.Rule, err)
	}
	out.Resources = sids
	if r.Nodes != "" {
		if out.Nodes, err = ParseNodeList(r.Nodes); err != nil {
			return Rule{}, fmt.Errorf("rule %s: %w", r.Rule, err)
		}
	}
	if len(r.Errors) > 0 {
		out.Errors = map[string]string{}
		for k, v := range r.Errors {
			out.Errors[k] = pveapi.String(v)
		}
	}
	return out, nil
}

// ParseSIDList reads a resources list ("vm:201,ct:200"), sorted.
func ParseSIDList(s string) ([]SID, error) {
	var out []SID
	for _, part := range pveformat.SplitList(s) {
		sid, err := ParseSID(part)
		if err != nil {
			return nil, err
		}
		out = append(out, sid)
	}
	sortSIDs(out)
	return out, nil
}

func sortSIDs(s []SID) {
	slices.SortFunc(s, func(a, b SID) int { return strings.Compare(a.String(), b.String()) })
}

func sidList(s []SID) string {
	c := slices.Clone(s)
	sortSIDs(c)
	parts := make([]string, len(c))
	for i, x := range c {
		parts[i] = x.String()
	}
	return strings.Join(parts, ",")
}

// Rules reads GET /cluster/ha/rules (PVE 9), sorted by order then id. On
// an unmigrated cluster the list includes the virtual ha-group-* rules.
func Rules(ctx context.Context, g pveapi.Getter) ([]Rule, error) {
	return readList(ctx, g, "/cluster/ha/rules", ruleRow.rule, func(a, b Rule) int {
		if a.Order != b.Order {
			return a.Order - b.Order
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// Same tells whether two rules mean the same (ignoring order, errors and
// digest; resources and nodes by meaning).
func (r Rule) Same(o Rule) bool {
	return r.ID == o.ID && r.Type == o.Type && sidList(r.Resources) == sidList(o.Resources) && r.Nodes.Equal(o.Nodes) &&
		r.Strict == o.Strict && r.Affinity == o.Affinity && r.Disable == o.Disable && r.Comment == o.Comment
}

// NodeAffinityRulesOf returns the enabled node-affinity rules naming sid:
// PVE allows one (HA/Rules.pm check "resource … is already used in another
// node affinity rule").
func NodeAffinityRulesOf(rules []Rule, sid SID) []Rule {
	var out []Rule
	for _, r := range rules {
		if r.Type == NodeAffinity && !r.Disable && slices.Contains(r.Resources, sid) {
			out = append(out, r)
		}
	}
	return out
}

func (r Rule) params() url.Values {
	q := url.Values{"type": {r.Type}, "resources": {sidList(r.Resources)}}
	if r.Type == NodeAffinity {
		q.Set("nodes", r.Nodes.String())
		if r.Strict {
			q.Set("strict", "1")
		}
	}
	if r.Type == ResourceAffinity && r.Affinity != "" {
		q.Set("affinity", r.Affinity)
	}
	if r.Comment != "" {
		q.Set("comment", r.Comment)
	}
	if r.Disable {
		q.Set("disable", "1")
	}
	return q
}

// CreateRule is POST /cluster/ha/rules (PVE 9, groups migrated).
func CreateRule(r Rule, major int) (apischema.Request, error) {
	if !Gates(major).Rules {
		return apischema.Request{}, fmt.Errorf("PVE %d has no HA rules (PVE 9 and newer): use a group", major)
	}
	q := r.params()
	q.Set("rule", r.ID)
	return apischema.New(http.MethodPost, "/cluster/ha/rules", q), nil
}

// UpdateRule is PUT /cluster/ha/rules/{rule} making the stored rule equal
// r. Values turned off are deleted rather than sent as 0: PVE drops
// disable=0 (update_rule), so re-enabling is delete=disable; strict and
// comment go the same way to return to PVE's defaults. The type cannot
// change (PVE keeps the stored one): delete and create for that.
func UpdateRule(r Rule, major int) (apischema.Request, error) {
	if !Gates(major).Rules {
		return apischema.Request{}, fmt.Errorf("PVE %d has no HA rules (PVE 9 and newer): use a group", major)
	}
	q := r.params()
	var del []string
	if !r.Disable {
		del = append(del, "disable")
	}
	if r.Type == NodeAffinity && !r.Strict {
		del = append(del, "strict")
	}
	if r.Comment == "" {
		del = append(del, "comment")
	}
	if len(del) > 0 {
		q.Set("delete", strings.Join(del, ","))
	}
	if r.Digest != "" {
		q.Set("digest", r.Digest)
	}
	return apischema.New(http.MethodPut, "/cluster/ha/rules/{rule}", q, r.ID), nil
}

// DeleteRule is DELETE /cluster/ha/rules/{rule} (PVE answers success for a
// rule that does not exist).
func DeleteRule(id string) apischema.Request {
	return apischema.New(http.MethodDelete, "/cluster/ha/rules/{rule}", nil, id)
}

// RuleIDFor is a stable rule id derived from a guest: "gopve-vm-201".
func RuleIDFor(prefix string, sid SID) string {
	return prefix + "-" + sid.Type + "-" + strconv.Itoa(sid.VMID)
}
