package ha

import (
	"net/url"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
)

func TestParseSID(t *testing.T) {
	for _, tc := range []struct {
		in, out, err string
		resolved     bool
	}{
		{in: "vm:201", out: "vm:201", resolved: true},
		{in: "ct:200", out: "ct:200", resolved: true},
		{in: "201", out: "201"},
		{in: "fence:201", err: "resource type 'fence' is not vm or ct"},
		{in: "vm:abc", err: "is not a VMID"},
		{in: "vm 201", err: "unable to parse service id 'vm 201'"},
	} {
		s, err := ParseSID(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseSID(%q) = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || s.String() != tc.out || s.Resolved() != tc.resolved {
			t.Errorf("ParseSID(%q) = %v %v", tc.in, s, err)
		}
	}
	bare, _ := ParseSID("200")
	if s, err := bare.Resolve("lxc"); err != nil || s.String() != "ct:200" {
		t.Errorf("a bare VMID of a container is ct: %v %v", s, err)
	}
	typed, _ := ParseSID("vm:200")
	if _, err := typed.Resolve("lxc"); err == nil {
		t.Error("vm:200 for a container must be refused")
	}
}

// TestNodeListNormalised: PVE sorts the nodes and writes priority 0 as the
// bare name, so "b:1,a:0" and "a,b:1" are one list (issue 18).
func TestNodeListNormalised(t *testing.T) {
	for in, want := range map[string]string{
		"pve02:1,pve01:2": "pve01:2,pve02:1", "b:1,a:0": "a,b:1", "a, b:1": "a,b:1", "pve03": "pve03",
	} {
		l, err := ParseNodeList(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := l.String(); got != want {
			t.Errorf("%q → %q, want %q", in, got, want)
		}
	}
	a, _ := ParseNodeList("b:1,a:0")
	b, _ := ParseNodeList("a,b:1")
	if !a.Equal(b) {
		t.Error("lists with one meaning differ")
	}
	for _, bad := range []string{"a:x", "a,a:2", "-a"} {
		if _, err := ParseNodeList(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestResourceDefaults: a resource PVE lists without its defaults equals
// one asked with them, on both versions.
func TestResourceDefaults(t *testing.T) {
	listed := Resource{SID: SID{"vm", 201}} // what GET /cluster/ha/resources shows for `ha-manager add vm:201`
	one, yes := 1, true
	asked := Resource{SID: SID{"vm", 201}, State: StateStarted, MaxRestart: &one, MaxRelocate: &one}
	for _, v := range []int{8, 9} {
		a, b := listed.WithDefaults(v), asked.WithDefaults(v)
		if *a.MaxRestart != *b.MaxRestart || *a.MaxRelocate != *b.MaxRelocate || a.State != b.State {
			t.Errorf("PVE %d: %+v != %+v", v, a, b)
		}
		if (a.Failback != nil) != (v >= 9) || (v >= 9 && *a.Failback != yes) {
			t.Errorf("PVE %d failback default %v", v, a.Failback)
		}
	}
	if r := (Resource{State: "enabled"}).WithDefaults(9); r.State != StateStarted {
		t.Errorf("enabled is started: %s", r.State)
	}
}

func TestRequestsAgainstSchema(t *testing.T) {
	two, no := 2, false
	sid := SID{"vm", 201}
	nodes, _ := ParseNodeList("pve01:2,pve02:1")
	type build func(major int) (apischema.Request, error)
	for _, tc := range []struct {
		name   string
		major  int
		build  build
		params url.Values // expected subset
		err    string
	}{
		{"resource on 8", 8, func(m int) (apischema.Request, error) {
			return CreateResource(Resource{SID: sid, State: StateStarted, MaxRestart: &two, Group: "prefer-pve01"}, m)
		}, url.Values{"sid": {"vm:201"}, "max_restart": {"2"}, "group": {"prefer-pve01"}}, ""},
		{"failback refused on 8 (gate)", 8, func(m int) (apischema.Request, error) {
			return CreateResource(Resource{SID: sid, Failback: &no}, m)
		}, nil, "failback: PVE 8 has no failback"},
		{"failback on 9", 9, func(m int) (apischema.Request, error) {
			return CreateResource(Resource{SID: sid, Failback: &no}, m)
		}, url.Values{"failback": {"0"}}, ""},
		{"bare sid refused until resolved", 9, func(m int) (apischema.Request, error) {
			return CreateResource(Resource{SID: SID{VMID: 201}}, m)
		}, nil, "has no type yet"},
		{"update resource", 9, func(m int) (apischema.Request, error) {
			return UpdateResource(Resource{SID: sid, State: StateStopped, Digest: "d"}, []string{"comment"}, m)
		}, url.Values{"state": {"stopped"}, "delete": {"comment"}, "digest": {"d"}}, ""},
		{"rule on 8 refused (gate)", 8, func(m int) (apischema.Request, error) {
			return CreateRule(Rule{ID: "gopve-vm-201", Type: NodeAffinity, Resources: []SID{sid}, Nodes: nodes}, m)
		}, nil, "PVE 8 has no HA rules"},
		{"node-affinity rule", 9, func(m int) (apischema.Request, error) {
			return CreateRule(Rule{ID: "gopve-vm-201", Type: NodeAffinity, Resources: []SID{sid}, Nodes: nodes, Strict: true}, m)
		}, url.Values{"rule": {"gopve-vm-201"}, "nodes": {"pve01:2,pve02:1"}, "strict": {"1"}, "resources": {"vm:201"}}, ""},
		{"re-enable: delete=disable, never disable=0", 9, func(m int) (apischema.Request, error) {
			return UpdateRule(Rule{ID: "gopve-vm-201", Type: NodeAffinity, Resources: []SID{sid}, Nodes: nodes}, m)
		}, url.Values{"delete": {"disable,strict,comment"}}, ""},
		{"resource-affinity rule", 9, func(m int) (apischema.Request, error) {
			return CreateRule(Rule{ID: "apart", Type: ResourceAffinity, Resources: []SID{{"vm", 202}, sid}, Affinity: "negative"}, m)
		}, url.Values{"resources": {"vm:201,vm:202"}, "affinity": {"negative"}}, ""},
		{"group", 8, func(int) (apischema.Request, error) {
			return CreateGroup(Group{Name: "prefer-pve01", Nodes: nodes, NoFailback: true}), nil
		}, url.Values{"group": {"prefer-pve01"}, "nodes": {"pve01:2,pve02:1"}, "nofailback": {"1"}}, ""},
		{"group update resets flags", 8, func(int) (apischema.Request, error) {
			return UpdateGroup(Group{Name: "prefer-pve01", Nodes: nodes}), nil
		}, url.Values{"delete": {"restricted,nofailback,comment"}}, ""},
		{"migrate through HA (H4)", 9, func(int) (apischema.Request, error) { return MigrateResource(sid, "pve02", false), nil },
			url.Values{"node": {"pve02"}}, ""},
		{"delete", 9, func(int) (apischema.Request, error) { return DeleteRule("gopve-vm-201"), nil }, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tc.build(tc.major)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, has := r.Params["disable"]; has && r.Params.Get("disable") == "0" {
				t.Error("disable=0 is dropped by PVE: never sent")
			}
			for k, v := range tc.params {
				if r.Params.Get(k) != v[0] {
					t.Errorf("%s = %q, want %q", k, r.Params.Get(k), v[0])
				}
			}
			if err := r.Validate(tc.major); err != nil {
				t.Errorf("the PVE %d schema refuses it: %v", tc.major, err)
			}
		})
	}
}

func TestRuleSame(t *testing.T) {
	n1, _ := ParseNodeList("pve02:1,pve01:2")
	n2, _ := ParseNodeList("pve01:2,pve02:1")
	a := Rule{ID: "r", Type: NodeAffinity, Resources: []SID{{"vm", 202}, {"vm", 201}}, Nodes: n1, Order: 1}
	b := Rule{ID: "r", Type: NodeAffinity, Resources: []SID{{"vm", 201}, {"vm", 202}}, Nodes: n2, Order: 3, Digest: "x"}
	if !a.Same(b) {
		t.Error("same meaning, different spelling and order")
	}
	b.Strict = true
	if a.Same(b) {
		t.Error("strict differs")
	}
	if g, ok := (Rule{ID: "ha-group-prefer"}).FromGroup(); !ok || g != "prefer" {
		t.Error("virtual rule of a group")
	}
	if got := NodeAffinityRulesOf([]Rule{a, {ID: "x", Type: NodeAffinity, Resources: []SID{{"vm", 201}}, Disable: true}}, SID{"vm", 201}); len(got) != 1 {
		t.Errorf("a disabled rule does not count: %v", got)
	}
}
