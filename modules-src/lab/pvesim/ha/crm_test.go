package ha

import (
	"strings"
	"testing"
	"time"
)

// cluster is n1..n3 with the given nodes online and guests 1..3 on n1,
// guest 4 on n2 (the basic scheduler counts them).
func cluster(online ...string) Cluster {
	where := map[int]string{1: "n1", 2: "n1", 3: "n1", 4: "n2"}
	return Cluster{Members: []string{"n1", "n2", "n3"},
		Online: func(n string) bool { return strings.Contains(strings.Join(online, ","), n) },
		GuestNode: func(vmid int) (string, bool) {
			n, ok := where[vmid]
			return n, ok
		}}
}

// H2/H3: select_service_node. A started service belongs on its rule's
// (9) or group's (8) top-priority online node; with failback off it stays
// on any allowed node; a strict rule with no online node leaves it
// nowhere; unconstrained, recovery ('best-score') picks the least loaded
// node.
func TestSelectNodeH2H3(t *testing.T) {
	res := sections("vm: 1\n\nvm: 2\n\nvm: 3\n\nvm: 4\n\tfailback 0\n")
	pve9 := Config{Version: 9, Resources: res,
		Rules: sections("node-affinity: pin\n\tresources vm:1,vm:4\n\tnodes n2:2,n3:1\n\tstrict 1\n")}
	all := cluster("n1", "n2", "n3")
	cases := []struct {
		name    string
		cfg     Config
		cl      Cluster
		sid     string
		current string
		best    bool
		want    string
	}{
		{"rule's top node", pve9, all, "vm:1", "n1", false, "n2"},
		{"top node down: the next priority", pve9, cluster("n1", "n3"), "vm:1", "n2", false, "n3"},
		{"strict, no allowed node online", pve9, cluster("n1"), "vm:1", "n1", false, ""},
		{"failback off stays on an allowed node", pve9, all, "vm:4", "n3", false, "n3"},
		{"failback off still leaves a node the rule forbids", pve9, all, "vm:4", "n1", false, "n2"},
		{"unconstrained stays", pve9, all, "vm:2", "n1", false, "n1"},
		{"recovery: least loaded, then name", pve9, cluster("n1", "n2", "n3"), "vm:2", "n1", true, "n3"},
		{"PVE 8 group, unrestricted: others at -1", Config{Version: 8, Resources: sections("vm: 2\n\tgroup g\n"),
			Groups: sections("group: g\n\tnodes n3\n")}, cluster("n1", "n2"), "vm:2", "n1", false, "n1"},
		{"PVE 8 group, unrestricted: its node first", Config{Version: 8, Resources: sections("vm: 2\n\tgroup g\n"),
			Groups: sections("group: g\n\tnodes n3\n")}, all, "vm:2", "n1", false, "n3"},
		{"PVE 8 nofailback group stays", Config{Version: 8, Resources: sections("vm: 2\n\tgroup g\n"),
			Groups: sections("group: g\n\tnodes n3:1,n1\n\tnofailback 1\n")}, all, "vm:2", "n1", false, "n1"},
		{"PVE 8 group prefers its node", Config{Version: 8, Resources: sections("vm: 2\n\tgroup g\n"),
			Groups: sections("group: g\n\tnodes n3:1,n1\n")}, all, "vm:2", "n1", false, "n3"},
	}
	for _, c := range cases {
		r := c.cfg.Resource(c.sid)
		if got := c.cfg.SelectNode(c.cl, r, c.current, c.best); got != c.want {
			t.Errorf("%s: SelectNode = %q, want %q", c.name, got, c.want)
		}
	}
}

// A round's step: start what should run, stop what should not, place the
// started; leave alone a guest on a node that is down, of the other kind,
// ignored, in error or moving.
func TestNextStep(t *testing.T) {
	vm := func(state string) *Section {
		r := &Section{Type: "vm", ID: "1", Opts: map[string]string{}}
		if state != "" {
			r.Opts["state"] = state
		}
		return r
	}
	up := Service{Node: "n1", NodeUp: true}
	running := Service{Node: "n1", NodeUp: true, Running: true}
	cases := []struct {
		name string
		r    *Section
		f    Service
		want Step
	}{
		{"default started, stopped guest", vm(""), up, Step{Start: true, Place: true}},
		{"started and running", vm("started"), running, Step{Place: true}},
		{"stopped, running", vm("stopped"), running, Step{Stop: true}},
		{"disabled, running", vm("disabled"), running, Step{Stop: true}},
		{"ignored", vm("ignored"), up, Step{}},
		{"node down", vm(""), Service{Node: "n1"}, Step{}},
		{"no such guest", vm(""), Service{}, Step{}},
		{"a CT under vm:", vm(""), Service{Node: "n1", NodeUp: true, CT: true}, Step{}},
		{"error", vm(""), Service{Node: "n1", NodeUp: true, Error: true}, Step{}},
		{"moving", vm(""), Service{Node: "n1", NodeUp: true, Motion: "migrate"}, Step{}},
	}
	for _, c := range cases {
		if got := NextStep(c.r, c.f); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	if Recoverable(vm("disabled")) || Recoverable(vm("ignored")) || !Recoverable(vm("stopped")) {
		t.Error("recovery takes every service but disabled and ignored ones")
	}
}

// H4: the manager status says "started" while the LRM starts the service;
// the verbose state (status/current) says "starting". A fenced node's
// service is "fence"; an unknown guest is queued on "---".
func TestServiceStateH4(t *testing.T) {
	r := &Section{Type: "vm", ID: "1", Opts: map[string]string{}}
	stopped := &Section{Type: "vm", ID: "1", Opts: map[string]string{"state": "disabled"}}
	cases := []struct {
		r                *Section
		f                Service
		node, state, raw string
	}{
		{r, Service{}, "---", "queued", "queued"},
		{r, Service{Node: "n1", NodeUp: true}, "n1", "starting", "started"},
		{r, Service{Node: "n1", NodeUp: true, Running: true}, "n1", "started", "started"},
		{r, Service{Node: "n1"}, "n1", "fence", "fence"},
		{r, Service{Node: "n1", NodeUp: true, Motion: "relocate"}, "n1", "relocate", "relocate"},
		{r, Service{Node: "n1", Error: true}, "n1", "error", "error"},
		{stopped, Service{Node: "n1", NodeUp: true, Running: true}, "n1", "stopping", "request_stop"},
		{stopped, Service{Node: "n1", NodeUp: true}, "n1", "disabled", "stopped"},
	}
	for _, c := range cases {
		node, state := ServiceState(c.r, c.f)
		if node != c.node || state != c.state || RawCRMState(state) != c.raw {
			t.Errorf("%v %+v: %s %s (%s), want %s %s (%s)", c.r.Opts, c.f, node, state, RawCRMState(state), c.node, c.state, c.raw)
		}
	}
	svc := func(*Section) Service { return Service{Node: "n1", NodeUp: true} }
	if got := (Config{Version: 8}).GuestStatus(r, svc); got["managed"] != 1 || got["state"] != "started" || got["group"] != nil {
		t.Errorf("PVE 8 guest status = %v", got)
	}
	if got := (Config{Version: 9}).GuestStatus(nil, svc); len(got) != 1 || got["managed"] != 0 {
		t.Errorf("unmanaged guest status = %v", got)
	}
	if HAState(nil, svc) != "" || HAState(&Section{Opts: map[string]string{"state": "ignored"}}, svc) != "ignored" {
		t.Error("hastate: empty without a resource, the config's word for an ignored one")
	}
}

// H2: the persistent migration is first tried on the 3rd CRM round with
// groups pending, then every 6th; a cluster with nothing pending starts
// over.
func TestGroupMigrationRoundsH2(t *testing.T) {
	var m GroupMigration
	var due []int
	for round := 1; round <= 15; round++ {
		if m.Due("c", true) {
			due = append(due, round)
		}
	}
	if len(due) != 3 || due[0] != 3 || due[1] != 9 || due[2] != 15 {
		t.Errorf("tries on rounds %v, want 3, 9, 15", due)
	}
	m.Due("c", false)
	for round := 1; round <= 3; round++ {
		if m.Due("c", true) != (round == 3) {
			t.Errorf("after nothing pending, round %d: the count starts over at 3 rounds", round)
		}
	}
	online := func(n string) bool { return n != "n3" }
	v9 := func(string) string { return "9.0.3" }
	if err := CanMigrateGroups(false, []string{"n1"}, online, v9); err == nil || err.Error() != "cluster is not quorate" {
		t.Errorf("no quorum: %v", err)
	}
	if err := CanMigrateGroups(true, []string{"n1", "n3"}, online, v9); err == nil || err.Error() != "node 'n3' is not online" {
		t.Errorf("node down: %v", err)
	}
	if err := CanMigrateGroups(true, []string{"n1"}, online, func(string) string { return "8.4.1" }); err == nil ||
		err.Error() != "node 'n1' needs at least pve-manager version '9.0.0~16'" {
		t.Errorf("PVE 8 node: %v", err)
	}
	if err := CanMigrateGroups(true, []string{"n1", "n2"}, online, v9); err != nil {
		t.Errorf("ready cluster: %v", err)
	}
}

// Status.pm's shape: quorum only until the CRM has a resource; then master
// (and, on PVE 9, fencing), one LRM line per member with PVE 9's watchdog
// words, and one entry per service (group on 8, failback on 9).
func TestStatusCurrentShape(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	q := StatusQuery{Node: "n1", Quorate: true, Now: now, Members: []string{"n1", "n2"},
		NodeUp:  func(n string) bool { return n == "n1" },
		Service: func(*Section) Service { return Service{Node: "n1", NodeUp: true, Running: true} }}
	if got := (Config{Version: 9}).StatusCurrent(q); len(got) != 1 || got[0]["id"] != "quorum" {
		t.Fatalf("no resources: %v", got)
	}
	res := sections("vm: 100\n\tgroup g\n\tfailback 0\n\tmax_restart 2\n")
	ids := func(out []map[string]any) string {
		var s []string
		for _, e := range out {
			s = append(s, e["id"].(string))
		}
		return strings.Join(s, " ")
	}
	v9 := Config{Version: 9, Resources: res}.StatusCurrent(q)
	if got := ids(v9); got != "quorum master fencing lrm:n1 lrm:n2 service:vm:100" {
		t.Errorf("PVE 9 entries: %s", got)
	}
	if got := v9[3]["status"]; got != "n1 (active, watchdog active, Fri Jan  2 03:04:05 2026)" {
		t.Errorf("PVE 9 LRM line: %v", got)
	}
	if got := v9[4]["status"]; !strings.HasPrefix(got.(string), "n2 (old timestamp - dead?, watchdog standby, ") {
		t.Errorf("dead node's LRM line: %v", got)
	}
	svc := v9[5]
	if svc["failback"] != 0 || svc["max_restart"] != 2 || svc["group"] != nil || svc["status"] != "vm:100 (n1, started)" {
		t.Errorf("PVE 9 service entry: %v", svc)
	}
	v8 := Config{Version: 8, Resources: res}.StatusCurrent(q)
	if got := ids(v8); got != "quorum master lrm:n1 lrm:n2 service:vm:100" {
		t.Errorf("PVE 8 entries: %s", got)
	}
	if svc := v8[4]; svc["group"] != "g" || svc["failback"] != nil {
		t.Errorf("PVE 8 service entry: %v", svc)
	}
	q.Quorate = false
	if got := (Config{Version: 9}).StatusCurrent(q)[0]; got["quorate"] != 0 || got["status"] != "No quorum on node 'n1'!" {
		t.Errorf("quorum entry without quorum: %v", got)
	}
}
