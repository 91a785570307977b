package ha

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// sections parses a SectionConfig text, as pvesim reads the HA files.
func sections(text string) []*Section { return pvecommon.ParseSections(text) }

// guests is a cluster with VM 100 and CT 200.
func guests(vmid int) (ct, exists bool) {
	switch vmid {
	case 100:
		return false, true
	case 200:
		return true, true
	}
	return false, false
}

// parse_sid: a bare VMID takes its type from the guest; a malformed id or
// a missing guest fails with Config.pm's words.
func TestParseSID(t *testing.T) {
	for in, want := range map[string]string{"100": "vm:100", "200": "ct:200", "vm:300": "vm:300", "ct:7": "ct:7"} {
		if got, _, err := ParseSID(in, guests); err != nil || got != want {
			t.Errorf("ParseSID(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"300":    "unable to detect SID from VMID - VM/CT 300 does not exist",
		"vm:0":   "unable to parse service id 'vm:0'",
		"foo:10": "unable to parse service id 'foo:10'",
	} {
		if _, _, err := ParseSID(in, guests); err == nil || err.Error() != want {
			t.Errorf("ParseSID(%q) error = %v, want %q", in, err, want)
		}
	}
}

// H2: a resource's group is refused once groups are rules (PVE 9 with an
// empty groups.cfg), never on PVE 8; the guest's kind must match the id.
func TestNewResourceChecksH2(t *testing.T) {
	pve9 := Config{Version: 9, Resources: sections("vm: 100\n")}
	pve8 := Config{Version: 8}
	cases := []struct {
		cfg       Config
		sid, typ  string
		vmid      int
		withGroup bool
		want      string
	}{
		{pve9, "vm:100", "", 100, false, "create resource failed: resource ID 'vm:100' already defined"},
		{pve9, "ct:200", "vm", 200, false, "types does not match"},
		{pve9, "ct:200", "", 200, true, "invalid parameter 'group': ha groups have been migrated to rules"},
		{pve9, "vm:200", "", 200, false, "resource 'vm:200' - guest with ID 200 is not a VM"},
		{pve9, "ct:100", "", 100, false, "resource 'ct:100' - guest with ID 100 is not a CT"},
		{pve9, "vm:300", "", 300, false, "resource 'vm:300' does not exist in cluster"},
		{pve8, "ct:200", "", 200, true, ""},
	}
	for _, c := range cases {
		r, err := c.cfg.NewResource(c.sid, c.vmid, c.typ, c.withGroup, guests)
		switch {
		case c.want == "" && (err != nil || SID(r) != c.sid):
			t.Errorf("%s on PVE %d: %v, %v; want a new resource", c.sid, c.cfg.Version, r, err)
		case c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("%s on PVE %d: error %v, want %q", c.sid, c.cfg.Version, err, c.want)
		}
	}
}

// Deleting a resource with purge takes it out of every rule; a rule left
// without resources goes (PVE 9 delete_service_from_config).
func TestPurgeFromRules(t *testing.T) {
	rules := sections("node-affinity: a\n\tresources vm:100,vm:101\n\tnodes n1\n\nresource-affinity: b\n\tresources vm:100\n\taffinity positive\n")
	got := PurgeFromRules(rules, "vm:100")
	if len(got) != 1 || got[0].ID != "a" || got[0].Opts["resources"] != "vm:101" {
		t.Fatalf("purged rules = %s", pvecommon.RenderSections(got))
	}
}

// Rules.pm get_next_ordinal is the lowest order plus one: a new rule of a
// non-empty file gets order 2 and is written after every rule of order 2
// or less.
func TestAddRuleOrder(t *testing.T) {
	list := sections("node-affinity: r1\n\tresources vm:1\n\tnodes n1\n\nnode-affinity: r2\n\tresources vm:2\n\tnodes n1\n\nnode-affinity: r3\n\tresources vm:3\n\tnodes n1\n")
	if n := NextOrdinal(OrderRules(list)); n != 2 {
		t.Fatalf("NextOrdinal = %d, want 2 (lowest order 1, plus one)", n)
	}
	got := AddRule(list, &Section{Type: "node-affinity", ID: "new", Opts: map[string]string{}})
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	if want := []string{"r1", "r2", "new", "r3"}; !slices.Equal(ids, want) {
		t.Errorf("rules after create = %v, want %v", ids, want)
	}
	if got := AddRule(nil, &Section{ID: "only"}); len(got) != 1 || got[0].ID != "only" {
		t.Errorf("first rule of an empty file: %v", got)
	}
}

// H2: migrate_groups_to_rules turns each used group into ha-group-<name>
// (nodes sorted, priority 0 bare, strict = restricted, its members);
// unused groups vanish. The persistent migration also drops the
// resources' group and keeps a nofailback group's meaning as failback 0.
func TestMigrateGroupsToRulesH2(t *testing.T) {
	cfg := Config{Version: 9,
		Groups:    sections("group: g1\n\tnodes n2:2,n1\n\trestricted 1\n\tnofailback 1\n\ngroup: unused\n\tnodes n1\n"),
		Resources: sections("vm: 101\n\tgroup g1\n\nvm: 100\n\tgroup g1\n\nct: 200\n"),
		Rules:     sections("node-affinity: mine\n\tresources ct:200\n\tnodes n3\n"),
	}
	full := cfg.FullRules()
	if len(full) != 2 || full[1].Sec.ID != "ha-group-g1" || full[1].Order != 2 {
		t.Fatalf("full rules = %+v", full)
	}
	want := map[string]string{"resources": "vm:100,vm:101", "nodes": "n1,n2:2", "strict": "1",
		"comment": "Generated from HA group 'g1'."}
	if got := full[1].Sec.Opts; !maps.Equal(got, want) {
		t.Errorf("ha-group-g1 = %v, want %v", got, want)
	}
	if cfg.GroupsMigrated() {
		t.Error("groups.cfg has groups: not migrated")
	}
	rules, res := cfg.MigrateGroups()
	if len(rules) != 2 || rules[0].ID != "mine" || rules[1].ID != "ha-group-g1" {
		t.Errorf("migrated rules.cfg = %s", pvecommon.RenderSections(rules))
	}
	for _, r := range res {
		if _, ok := r.Opts["group"]; ok {
			t.Errorf("%s kept its group", SID(r))
		}
		if want := map[bool]string{true: "0", false: ""}[r.Type == "vm"]; r.Opts["failback"] != want {
			t.Errorf("%s failback = %q, want %q", SID(r), r.Opts["failback"], want)
		}
	}
	if !(Config{Version: 9}).GroupsMigrated() || (Config{Version: 8}).GroupsMigrated() {
		t.Error("an empty groups.cfg is migrated on PVE 9 only")
	}
}

// check_feasibility: a resource in two node-affinity rules is blamed on
// both; a resource-affinity rule needs two resources, a negative one no
// more than the nodes; disabled rules are not checked.
func TestRuleErrors(t *testing.T) {
	rules := sections(strings.Join([]string{
		"node-affinity: a\n\tresources vm:1\n\tnodes n1\n",
		"node-affinity: b\n\tresources vm:1,vm:2\n\tnodes n2\n",
		"node-affinity: off\n\tresources vm:2\n\tnodes n2\n\tdisable 1\n",
		"resource-affinity: lone\n\tresources vm:3\n\taffinity positive\n",
		"resource-affinity: apart\n\tresources vm:4,vm:5,vm:6\n\taffinity negative\n",
	}, "\n"))
	got := RuleErrors(rules, 2)
	shared := []string{"resource 'vm:1' is already used in another node affinity rule"}
	want := map[string]map[string][]string{
		"a":     {"resources": shared},
		"b":     {"resources": shared},
		"lone":  {"resources": {"rule is ineffective as there are less than two resources"}},
		"apart": {"resources": {"rule defines more resources than available nodes"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RuleErrors = %v\nwant %v", got, want)
	}
	if _, ok := RuleErrors(rules, 3)["apart"]; ok {
		t.Error("three resources apart fit three nodes")
	}
}

// The API's checks of a rule: managed resources, member nodes, then the
// feasibility errors as a 400 per option.
func TestCheckRule(t *testing.T) {
	cfg := Config{Version: 9, Resources: sections("vm: 1\n\nvm: 2\n"),
		Rules: sections("node-affinity: a\n\tresources vm:1\n\tnodes n1\n")}
	members := []string{"n1", "n2"}
	rule := func(id, res, nodes string) *Section {
		return &Section{Type: "node-affinity", ID: id, Opts: map[string]string{"resources": res, "nodes": nodes}}
	}
	for r, want := range map[*Section]string{
		rule("x", "", "n1"):          "no resources were specified",
		rule("x", "vm:9,vm:1", "n1"): "cannot use unmanaged resource(s) vm:9.",
		rule("x", "vm:2", ""):        "no nodes were specified",
		rule("x", "vm:2", "n9:1,n1"): "cannot use non-existent node(s) n9.",
		rule("x", "vm:1", "n2"):      "Rule 'x' is invalid.",
	} {
		if err := cfg.CheckRule(r, members); err == nil || err.Error() != want {
			t.Errorf("CheckRule(%v) = %v, want %q", r.Opts, err, want)
		}
	}
	var invalid *InvalidRule
	err := cfg.CheckRule(rule("x", "vm:1", "n2"), members)
	if !errors.As(err, &invalid) || invalid.Fields["resources"] != "resource 'vm:1' is already used in another node affinity rule" {
		t.Errorf("infeasible rule: %#v", err)
	}
	if err := cfg.CheckRule(rule("a", "vm:1", "n2"), members); err != nil {
		t.Errorf("updating rule a itself: %v", err)
	}
}

// encode_plugin_value: nodes sorted, priority 0 bare; resources sorted
// and deduplicated.
func TestNormaliseRuleLists(t *testing.T) {
	r := &Section{Opts: map[string]string{"resources": "vm:2, vm:1,vm:2", "nodes": "n2:0,n1:3"}}
	NormaliseRuleLists(r)
	if r.Opts["resources"] != "vm:1,vm:2" || r.Opts["nodes"] != "n1:3,n2" {
		t.Errorf("normalised = %v", r.Opts)
	}
}
