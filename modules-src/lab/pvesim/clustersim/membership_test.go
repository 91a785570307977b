package clustersim_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
)

// C8: the join information names members by their PVE node names, so a
// fingerprint looked up by an inventory alias ("node-a") is simply not
// there; the name to look up comes from the node itself (GET /nodes).
func TestJoinInfoKeyedByNodeNameC8(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{Nodes: 2})
	p1 := simtest.NewClient(t, s, "pve01").Root()
	p2 := simtest.NewClient(t, s, "pve02").Root()
	if st := simtest.WaitTask(t, p1, simtest.CreateCluster(t, p1, "lab")); st["exitstatus"] != "OK" {
		t.Fatalf("create: %v", st)
	}
	simtest.Eventually(t, "quorate", func() bool { return simtest.Quorate(p1, 1) })

	// The inventory calls the primary "node-a"; PVE calls it pve01.
	inventory := map[string]string{"node-a": "127.77.x.11"}
	info := p1.Call("GET", "/cluster/config/join", nil).Must(t, "join info").Obj()
	for alias := range inventory {
		if fp, ok := simtest.JoinFingerprint(info, alias); ok {
			t.Errorf("join info answered for the inventory alias %q (fp %s): PVE only knows node names", alias, fp)
		}
	}
	// The node's own answer gives the name the join info uses.
	nodes := p1.Call("GET", "/nodes", nil).Must(t, "nodes").List()
	if len(nodes) != 1 || nodes[0]["node"] != "pve01" {
		t.Fatalf("/nodes on a one-node cluster: %v", nodes)
	}
	fp, ok := simtest.JoinFingerprint(info, nodes[0]["node"].(string))
	if n, _ := s.Node("pve01"); !ok || fp != n.Fingerprint {
		t.Fatalf("join info by node name: %q %v, want pve01's fingerprint %s", fp, ok, n.Fingerprint)
	}
	// With the alias as preferred node the API refuses outright.
	if r := p1.Call("GET", "/cluster/config/join", url.Values{"node": {"node-a"}}); r.Status == 200 {
		t.Errorf("join info for node=node-a answered 200: %v", r.Data)
	}
	simtest.JoinVia(t, s, p1, p2)
	simtest.Eventually(t, "2 nodes quorate", func() bool { return simtest.Quorate(p1, 2) })
}

// C9: nothing in the API makes a member standalone again. delnode on a
// remaining member drops it from corosync.conf, but the removed node keeps
// its copy of /etc/pve (corosync.conf included) without quorum, and any
// re-join is refused until the node is reinstalled.
func TestDelnodeLeavesRemovedNodeClusteredC9(t *testing.T) {
	t.Parallel()
	for _, version := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", version), func(t *testing.T) {
			t.Parallel()
			s := simtest.Start(t, pvesim.New, simtest.Opts{Version: version, Nodes: 3})
			p1 := simtest.NewClient(t, s, "pve01").Root()
			p2 := simtest.NewClient(t, s, "pve02").Root()
			p3 := simtest.NewClient(t, s, "pve03").Root()
			if st := simtest.WaitTask(t, p1, simtest.CreateCluster(t, p1, "lab")); st["exitstatus"] != "OK" {
				t.Fatalf("create: %v", st)
			}
			simtest.Eventually(t, "quorate", func() bool { return simtest.Quorate(p1, 1) })
			simtest.JoinVia(t, s, p1, p2)
			simtest.Eventually(t, "2 nodes quorate", func() bool { return simtest.Quorate(p1, 2) })
			simtest.JoinVia(t, s, p1, p3)
			simtest.Eventually(t, "3 nodes quorate", func() bool { return simtest.Quorate(p1, 3) })

			// The API has no "leave": the schema offers only this
			// delete-a-member call, and a node cannot remove itself.
			if r := p3.Call("DELETE", "/cluster/config/nodes/pve03", nil); r.Status != 500 || r.Reason != "Cannot delete myself from cluster!" {
				t.Errorf("delnode of self: %d %q", r.Status, r.Reason)
			}
			if r := p1.Call("DELETE", "/cluster/config/nodes/pve09", nil); r.Status != 500 || r.Reason != "Node/IP: pve09 is not a known host of the cluster." {
				t.Errorf("delnode of a stranger: %d %q", r.Status, r.Reason)
			}
			p1.Call("DELETE", "/cluster/config/nodes/pve03", nil).Must(t, "delnode pve03 on pve01")

			// The remaining members no longer list it.
			names := func(c *simtest.Client) string {
				var out []string
				for _, e := range c.Call("GET", "/cluster/config/nodes", nil).Must(t, "nodes of "+c.Node).List() {
					out = append(out, fmt.Sprint(e["name"]))
				}
				return strings.Join(out, ",")
			}
			if got := names(p2); got != "pve01,pve02" {
				t.Errorf("pve02 sees members %s, want pve01,pve02", got)
			}
			simtest.Eventually(t, "2 of 2 quorate", func() bool { return simtest.Quorate(p1, 2) })

			// The removed node is not standalone: it still holds the old
			// corosync.conf, has no quorum and /etc/pve is read-only.
			if got := names(p3); got != "pve01,pve02,pve03" {
				t.Errorf("removed pve03 sees members %s, want its stale pve01,pve02,pve03", got)
			}
			for _, e := range p3.Call("GET", "/cluster/status", nil).Must(t, "status on removed pve03").List() {
				if e["type"] == "cluster" && fmt.Sprint(e["quorate"]) != "0" {
					t.Errorf("removed pve03 claims quorum: %v", e)
				}
				if e["type"] == "node" && fmt.Sprint(e["online"]) != "0" {
					t.Errorf("removed pve03, its corosync stopped, still sees %v online", e["name"])
				}
			}
			if r := p3.Call("GET", "/cluster/config/join", nil); r.Status != 200 {
				t.Errorf("removed pve03 should still answer join info from its stale config: %d %q", r.Status, r.Reason)
			}
			if err := s.WritePmxcfs("pve03", "priv/authorized_keys", "x\n", false); err == nil {
				t.Errorf("removed pve03's /etc/pve accepted a write without quorum")
			}
			// A re-join is refused by assert_joinable, as on real PVE.
			n1, _ := s.Node("pve01")
			upid := p3.Call("POST", "/cluster/config/join", simtest.JoinParams(s, "pve01", n1.Fingerprint)).Must(t, "re-join accepted").Data.(string)
			if st := simtest.WaitTask(t, p3, upid); st["exitstatus"] != "Check if node may join a cluster failed!" {
				t.Errorf("re-join of removed pve03: %v", st["exitstatus"])
			}
			if _, err := s.AddNode("pve01", "pve03", "", false); err == nil {
				t.Errorf("pvecm add of removed pve03 succeeded")
			}
			if info, _ := s.Cluster("pve01"); len(info.Nodes) != 2 {
				t.Errorf("the cluster changed after the refused re-join: %+v", info.Nodes)
			}
		})
	}
}
