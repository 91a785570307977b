package cluster

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/corosync"
)

// three is a three-node cluster, pve02 with 2 votes, pve03 added by
// hand with only its ring0 and ring1 addresses.
func three() *corosync.Conf {
	return &corosync.Conf{ClusterName: "lab", ConfigVersion: 4, Nodes: []*corosync.Node{
		{Name: "pve01", NodeID: 1, Votes: 1, Links: map[string]string{"ring0_addr": "10.0.0.1"}},
		{Name: "pve02", NodeID: 2, Votes: 2, Links: map[string]string{"ring0_addr": "10.0.0.2"}},
		{Name: "pve03", NodeID: 5, Votes: 1, Links: map[string]string{"ring0_addr": "10.0.0.3", "ring1_addr": "10.1.0.3"}},
	}}
}

func upSet(names ...string) Up { return func(n string) bool { return slices.Contains(names, n) } }

// TestQuorate: a strict majority of the expected votes (C10), which
// `pvecm expected` overrides; standalone is always quorate.
func TestQuorate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		up       []string
		expected int
		want     bool
	}{
		{"all up", []string{"pve01", "pve02", "pve03"}, 0, true},
		{"3 of 4 votes", []string{"pve02", "pve03"}, 0, true},
		{"2 of 4 votes is no majority", []string{"pve01", "pve03"}, 0, false},
		{"1 of 4", []string{"pve01"}, 0, false},
		{"pvecm expected 1", []string{"pve01"}, 1, true},
		{"pvecm expected 2 with 1 vote up", []string{"pve01"}, 2, false},
	} {
		c := three()
		c.ExpectedVotes = tc.expected
		if got := Quorate(c, upSet(tc.up...)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if !Quorate(nil, upSet()) {
		t.Errorf("a standalone /etc/pve is not quorate")
	}
}

// TestJoinableReasons pins assert_joinable's refusals: a node already in
// a cluster, a standalone node with guests, a link address that is not
// the joiner's.
func TestJoinableReasons(t *testing.T) {
	own := map[string]string{"ring0_addr": "10.0.0.9"}
	if r := JoinableReasons(Joiner{Name: "pve09", Addr: "10.0.0.9"}, own); len(r) != 0 {
		t.Errorf("a fresh node: %q", r)
	}
	if r := JoinableReasons(Joiner{Name: "pve09", Addr: "10.0.0.9"}, map[string]string{"ring0_addr": "pve09"}); len(r) != 0 {
		t.Errorf("a link by the joiner's name: %q", r)
	}
	if r := JoinableReasons(Joiner{Name: "pve09", Addr: "10.0.0.9", HasGuests: true}, own); !reflect.DeepEqual(r, []string{"this host already contains virtual guests"}) {
		t.Errorf("a node with guests: %q", r)
	}
	r := JoinableReasons(Joiner{Name: "pve09", Addr: "10.0.0.9", InCluster: true}, own)
	if len(r) != 3 || r[1] != "cluster config '/etc/pve/corosync.conf' already exists" {
		t.Errorf("a clustered node: %q", r)
	}
	// Setup.pm's order: the vmlist between corosync.conf and the running
	// corosync, whether or not the node is in a cluster.
	r = JoinableReasons(Joiner{Name: "pve09", Addr: "10.0.0.9", InCluster: true, HasGuests: true}, own)
	if len(r) != 4 || r[2] != "this host already contains virtual guests" || r[3] != "corosync is already running, is this node already in a cluster?!" {
		t.Errorf("a clustered node with guests: %q", r)
	}
	r = JoinableReasons(Joiner{Name: "pve09", Addr: "10.0.0.9"}, map[string]string{"ring1_addr": "10.0.0.1", "ring0_addr": "10.0.0.9", "ring2_addr": "10.0.0.2"})
	want := []string{"link1: cannot use IP '10.0.0.1', not found on local node!", "link2: cannot use IP '10.0.0.2', not found on local node!"}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("foreign link addresses: %q, want %q", r, want)
	}
}

// TestLinks: link properties become ringN_addr; none is the node's own
// address.
func TestLinks(t *testing.T) {
	params := map[int]string{0: "address=10.0.0.9,priority=10", 3: "10.3.0.9"}
	got := Links(func(i int) string { return params[i] }, "192.0.2.1")
	if want := map[string]string{"ring0_addr": "10.0.0.9", "ring3_addr": "10.3.0.9"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Links = %v, want %v", got, want)
	}
	got = Links(func(int) string { return "" }, "192.0.2.1")
	if want := map[string]string{"ring0_addr": "192.0.2.1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("no links: %v, want %v", got, want)
	}
	if got := LinkAddr("priority=1"); got != "" {
		t.Errorf("LinkAddr without address: %q", got)
	}
}

// TestAddNodeID pins addnode's nodelist checks: an existing node only
// with force and its own node id and votes (kept when not given), the
// lowest free id, a used id refused; Append keeps node id order and bumps
// config_version.
func TestAddNodeID(t *testing.T) {
	c := three()
	if _, _, msg := AddNodeID(c, "pve02", 0, -1, false); msg != "can't add existing node 'pve02'" {
		t.Errorf("existing node: %q", msg)
	}
	for _, x := range []struct{ nodeid, votes int }{{3, -1}, {0, 1}} {
		if _, _, msg := AddNodeID(c, "pve02", x.nodeid, x.votes, true); msg != "can't add existing node 'pve02'" {
			t.Errorf("forced, node id %d votes %d against the entry's: %q", x.nodeid, x.votes, msg)
		}
	}
	if id, votes, msg := AddNodeID(c, "pve09", 0, -1, false); id != 3 || votes != 1 || msg != "" {
		t.Errorf("free id: %d %d %q, want 3 and 1 vote", id, votes, msg)
	}
	if _, _, msg := AddNodeID(c, "pve09", 5, -1, false); msg != "Node ID 5 already used by node pve03" {
		t.Errorf("used id: %q", msg)
	}
	if id, votes, msg := AddNodeID(c, "pve02", 0, -1, true); id != 2 || votes != 2 || msg != "" || c.Member("pve02") != nil {
		t.Errorf("forced existing node: %d %d %q, still listed: %v", id, votes, msg, c.Member("pve02") != nil)
	}
	Append(c, &corosync.Node{Name: "pve09", NodeID: 2, Votes: 1})
	var order []string
	for _, m := range c.Nodes {
		order = append(order, m.Name)
	}
	if !reflect.DeepEqual(order, []string{"pve01", "pve09", "pve03"}) || c.ConfigVersion != 5 {
		t.Errorf("after Append: %v, config_version %d", order, c.ConfigVersion)
	}
}

// TestDelnodeTarget: delnode names a node, or its ring0/ring1 address.
func TestDelnodeTarget(t *testing.T) {
	c := three()
	for victim, want := range map[string]string{"pve02": "pve02", "10.0.0.3": "pve03", "10.1.0.3": "pve03", "10.0.0.7": "", "pve07": ""} {
		got := ""
		if m := DelnodeTarget(c, victim); m != nil {
			got = m.Name
		}
		if got != want {
			t.Errorf("DelnodeTarget(%q) = %q, want %q", victim, got, want)
		}
	}
	if DelnodeTarget(nil, "pve01") != nil {
		t.Errorf("a standalone node has a delnode target")
	}
	if got := RemoveMember(c.Nodes, "pve02"); len(got) != 2 || got[1].Name != "pve03" {
		t.Errorf("RemoveMember: %v", got)
	}
}

// TestViews: /cluster/status, /cluster/config/nodes, the node entries and
// `pvecm status` as functions of membership and who is up.
func TestViews(t *testing.T) {
	c := three()
	addr := func(m *corosync.Node) string { return m.Links["ring0_addr"] }
	st := Status(c, "pve02", false, upSet("pve01", "pve02"), addr)
	if len(st) != 4 || st[0]["quorate"] != 0 || st[0]["nodes"] != 3 || st[0]["version"] != 4 {
		t.Errorf("cluster entry: %v", st[0])
	}
	if st[2]["local"] != 1 || st[1]["local"] != 0 || st[1]["online"] != 1 || st[3]["online"] != 0 || st[3]["ip"] != "10.0.0.3" || st[3]["nodeid"] != 5 {
		t.Errorf("node entries: %v", st[1:])
	}
	if s := StandaloneStatus("pve01", "10.0.0.1"); len(s) != 1 || s[0]["ip"] != "10.0.0.1" || s[0]["nodeid"] != 0 {
		t.Errorf("standalone: %v", s)
	}
	nl := Nodelist(c)
	if len(nl) != 3 || nl[2]["nodeid"] != "5" || nl[1]["quorum_votes"] != "2" || nl[2]["ring1_addr"] != "10.1.0.3" {
		t.Errorf("nodelist: %v", nl)
	}
	if nl := Nodelist(nil); nl == nil || len(nl) != 0 {
		t.Errorf("standalone nodelist: %#v, want an empty list", nl)
	}
	if m := Members(nil, "pve01"); !reflect.DeepEqual(m, []string{"pve01"}) {
		t.Errorf("standalone members: %v", m)
	}

	asked := false
	stats := func() (Stats, bool) { asked = true; return Stats{Uptime: 42}, true }
	if e, shown := NodeEntry("pve03", false, stats); e["status"] != "offline" || shown || asked {
		t.Errorf("offline node: %v %v (figures asked: %v)", e, shown, asked)
	}
	if e, shown := NodeEntry("pve01", true, func() (Stats, bool) { return Stats{Uptime: 42}, false }); e["status"] != "online" || shown || e["uptime"] != nil {
		t.Errorf("node without Sys.Audit: %v", e)
	}
	if e, shown := NodeEntry("pve01", true, stats); !shown || e["uptime"] != int64(42) {
		t.Errorf("node with Sys.Audit: %v", e)
	}

	info := PvecmStatus(c, false, upSet("pve02", "pve03"))
	if info.TotalVotes != 3 || info.ExpectedVotes != 4 || info.Quorum != 3 || info.RingID != "2.4" || info.Nodes[0].Online {
		t.Errorf("pvecm status: %+v", info)
	}
	// a nodelist out of node id order (corosync.conf edited by hand):
	// the ring id is still the lowest id up, the members sorted by id
	slices.Reverse(c.Nodes)
	info = PvecmStatus(c, true, upSet("pve02", "pve03"))
	if info.RingID != "2.4" || info.Nodes[0].Name != "pve01" {
		t.Errorf("pvecm status of a reversed nodelist: %+v", info)
	}
}

// TestJoinInfo: the nodelist with addresses and fingerprints, a preferred
// node that must be a member, and a member without a certificate failing
// the whole view (get_node_fingerprint's error).
func TestJoinInfo(t *testing.T) {
	c := three()
	addr := func(m *corosync.Node) string { return "addr-" + m.Name }
	fp := func(n string) (string, error) { return "fp-" + n, nil }
	ji, err := JoinInfo(c, "pve01", nil, addr, fp)
	if err != nil {
		t.Fatal(err)
	}
	list := ji["nodelist"].([]map[string]any)
	if ji["preferred_node"] != "pve01" || len(list) != 3 || list[1]["pve_fp"] != "fp-pve02" || list[1]["pve_addr"] != "addr-pve02" || list[1]["quorum_votes"] != "2" {
		t.Errorf("join info: %v", ji)
	}
	if d, _ := ji["config_digest"].(string); len(d) != 40 {
		t.Errorf("config_digest %q is not a SHA-1", d)
	}
	other := "pve03"
	if ji, err := JoinInfo(c, "pve01", &other, addr, fp); err != nil || ji["preferred_node"] != "pve03" {
		t.Errorf("preferred pve03: %v %v", ji, err)
	}
	unknown := "pve07"
	if _, err := JoinInfo(c, "pve01", &unknown, addr, fp); err == nil || err.Error() != "unknown node 'pve07'" {
		t.Errorf("unknown preferred node: %v", err)
	}
	noCert := errors.New("can't open '/etc/pve/nodes/pve03/pve-ssl.pem' - No such file or directory")
	_, err = JoinInfo(c, "pve01", nil, addr, func(n string) (string, error) {
		if n == "pve03" {
			return "", noCert
		}
		return "fp", nil
	})
	if !errors.Is(err, noCert) {
		t.Errorf("a member without certificate: %v", err)
	}
}

// TestJoinLinks pins addnode's link checks (ClusterConfig.pm): an address
// another node uses is refused, links given must match the cluster's,
// none given falls back to the joiner's address on a one-link cluster
// only.
func TestJoinLinks(t *testing.T) {
	c := three() // pve03 has ring1: the nodelist's first node (pve01) only ring0
	if got, msg := JoinLinks(c, "pve09", map[string]string{"ring0_addr": "10.0.0.9"}, false); msg != "" || got["ring0_addr"] != "10.0.0.9" || len(got) != 1 {
		t.Errorf("fallback on a one-link cluster: %v %q", got, msg)
	}
	for _, x := range []struct {
		links map[string]string
		want  string
	}{
		{map[string]string{"ring0_addr": "10.0.0.2"}, "corosync: address '10.0.0.2' already used on link ring0_addr by node 'pve02'"},
		{map[string]string{"ring0_addr": "10.0.0.9", "ring1_addr": "10.1.0.3"}, "corosync: address '10.1.0.3' already used on link ring1_addr by node 'pve03'"},
		{map[string]string{"ring0_addr": "10.0.0.9", "ring1_addr": "10.1.0.9"}, "corosync: link 1 specified for new node doesn't exist in cluster config"},
	} {
		if _, msg := JoinLinks(c, "pve09", x.links, true); msg != x.want {
			t.Errorf("%v: %q, want %q", x.links, msg, x.want)
		}
	}
	if got, msg := JoinLinks(c, "pve02", map[string]string{"ring0_addr": "10.0.0.2"}, true); msg != "" || got["ring0_addr"] != "10.0.0.2" {
		t.Errorf("a node re-added keeps its own address: %v %q", got, msg)
	}
	two := &corosync.Conf{Nodes: []*corosync.Node{{Name: "a", NodeID: 1, Links: map[string]string{"ring0_addr": "10.0.0.1", "ring1_addr": "10.1.0.1"}}}}
	if _, msg := JoinLinks(two, "b", map[string]string{"ring0_addr": "10.0.0.2"}, true); msg != "corosync: link 1 exists in cluster config but wasn't specified for new node" {
		t.Errorf("a link missing: %q", msg)
	}
	if _, msg := JoinLinks(two, "b", map[string]string{"ring0_addr": "10.0.0.2"}, false); msg != "no links given but multiple links found on other nodes, fallback only supported on single-link clusters" {
		t.Errorf("fallback on a two-link cluster: %q", msg)
	}
}
