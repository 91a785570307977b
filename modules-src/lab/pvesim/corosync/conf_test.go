package corosync

import (
	"reflect"
	"strings"
	"testing"
)

func twoNodes() *Conf {
	return &Conf{ClusterName: "lab", ConfigVersion: 3, TokenCoefficient: 200, Nodes: []*Node{
		{Name: "pve01", NodeID: 1, Votes: 1, Links: map[string]string{"ring0_addr": "10.0.0.1", "ring1_addr": "10.1.0.1"}},
		{Name: "pve02", NodeID: 2, Votes: 2, Links: map[string]string{"ring0_addr": "10.0.0.2"}},
	}}
}

// What Render writes, Parse reads back: the file the lab shows in
// /etc/pve is the configuration it runs.
func TestRenderParseRoundTrip(t *testing.T) {
	c := twoNodes()
	got, err := Parse(Render(c))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Errorf("parsed %+v, want %+v", got, c)
	}
	if c.TotalVotes() != 3 || c.Member("pve02") != c.Nodes[1] || c.Member("pve03") != nil {
		t.Errorf("votes %d, members %v %v", c.TotalVotes(), c.Member("pve02"), c.Member("pve03"))
	}
	if c.ExpectedVotes = 1; c.TotalVotes() != 1 {
		t.Errorf("pvecm expected 1: total votes %d", c.TotalVotes())
	}
}

// An edited corosync.conf is taken as pmxcfs takes it: not on a standalone
// node, not when older than the running one, and a removed
// token_coefficient falls back to corosync's default.
func TestAdopt(t *testing.T) {
	text := Render(twoNodes())
	if ok, err := Adopt(nil, text); ok || err != nil {
		t.Errorf("standalone: %v %v", ok, err)
	}
	newer := twoNodes()
	newer.ConfigVersion = 4
	if ok, err := Adopt(newer, text); ok || err == nil || err.Error() != "local corosync.conf is newer" {
		t.Errorf("older copy: %v %v", ok, err)
	}
	cur := twoNodes()
	edited := strings.Replace(strings.Replace(text, "config_version: 3", "config_version: 5", 1), "  token_coefficient: 200\n", "", 1)
	edited = strings.Replace(edited, "quorum_votes: 2", "quorum_votes: 1", 1)
	if ok, err := Adopt(cur, edited); !ok || err != nil {
		t.Fatalf("newer copy: %v %v", ok, err)
	}
	if cur.ConfigVersion != 5 || cur.TokenCoefficient != 125 || cur.Nodes[1].Votes != 1 {
		t.Errorf("adopted %+v (node 2: %+v)", cur, cur.Nodes[1])
	}
	for _, bad := range []string{"totem {\n", "}\n", "totem {\n  cluster_name lab\n}\n", "nodelist {\n}\n", "totem {\n  config_version: 0\n}\n"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
