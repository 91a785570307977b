package simtest

import (
	"net/url"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
)

// Clusters for the tests that need one, built through the API as the
// modules build them: create on pve01, then join one node at a time.

// CreateCluster asks c's node to create the cluster name
// (POST /cluster/config) and returns the task's UPID.
func CreateCluster(t *testing.T, c *Client, name string) string {
	t.Helper()
	r := c.Call("POST", "/cluster/config", url.Values{"clustername": {name}}).Must(t, "cluster create")
	upid, _ := r.Data.(string)
	return upid
}

// JoinParams are POST /cluster/config/join's parameters to join the
// cluster of node host, whose certificate has fingerprint fp, as root.
func JoinParams(s Sim, host string, fp string) url.Values {
	return url.Values{"hostname": {host}, "fingerprint": {fp}, "password": {s.RootPassword()}}
}

// JoinFingerprint is how a join role finds the primary's fingerprint: the
// nodelist entry whose name is the given key.
func JoinFingerprint(info map[string]any, name string) (string, bool) {
	list, _ := info["nodelist"].([]any)
	for _, e := range list {
		m, _ := e.(map[string]any)
		if m["name"] == name {
			fp, ok := m["pve_fp"].(string)
			return fp, ok
		}
	}
	return "", false
}

// JoinVia joins joiner to the cluster of primary through the API with the
// fingerprint the join info gives for primary's node name, and pins
// joiner to the node's new certificate.
func JoinVia(t *testing.T, s Sim, primary, joiner *Client) {
	t.Helper()
	info := primary.Call("GET", "/cluster/config/join", nil).Must(t, "join info").Obj()
	fp, ok := JoinFingerprint(info, primary.Node)
	if !ok {
		t.Fatalf("join info has no entry for %s: %v", primary.Node, info["nodelist"])
	}
	upid := joiner.Call("POST", "/cluster/config/join", JoinParams(s, primary.Node, fp)).Must(t, "join "+joiner.Node).Data.(string)
	Eventually(t, joiner.Node+" back after the join", func() bool {
		n, _ := s.Node(joiner.Node)
		return n.Serving && n.Fingerprint != joiner.Pin
	})
	n, _ := s.Node(joiner.Node)
	joiner.Pin = n.Fingerprint
	joiner.Root()
	if st := WaitTask(t, joiner, upid); st["exitstatus"] != "OK" {
		t.Fatalf("join of %s: %v", joiner.Node, st)
	}
}

// TwoNodes starts a simulator (newSim, o, then adjust) and returns it as a
// quorate cluster of pve01 and pve02 (further nodes of o.Nodes stay
// standalone) with root clients on both.
func TwoNodes[S Sim](t *testing.T, newSim New[S], o Opts, adjust ...func(*core.Config)) (S, *Client, *Client) {
	t.Helper()
	if o.Nodes < 2 {
		o.Nodes = 2
	}
	s := StartWith(t, newSim, o, func(c *core.Config) {
		for _, f := range adjust {
			f(c)
		}
	})
	a := NewClient(t, s, "pve01").Root()
	WaitTask(t, a, CreateCluster(t, a, "lab"))
	Eventually(t, "quorate", func() bool { return Quorate(a, 1) })
	b := NewClient(t, s, "pve02").Root()
	JoinVia(t, s, a, b)
	Eventually(t, "2 nodes", func() bool { return Quorate(a, 2) })
	return s, a, b
}

// HACluster is a three-node cluster of PVE version (so one node can go
// down with quorum kept) with a zfspool storage "tank" on every node, and
// the lab's HA and replication clocks shortened for tests (PVE's own
// delays are the defaults: Config); adjust, if any, changes the Config
// last. It returns root clients on pve01 and pve02.
func HACluster[S Sim](t *testing.T, newSim New[S], version int, adjust func(*core.Config)) (S, *Client, *Client) {
	t.Helper()
	s, a, b := TwoNodes(t, newSim, Opts{Version: version, Nodes: 3, TaskDuration: 30 * time.Millisecond, RestartWindow: 200 * time.Millisecond},
		func(c *core.Config) {
			c.HADelay = 60 * time.Millisecond
			c.FenceDelay = 500 * time.Millisecond
			c.FailbackDelay = 400 * time.Millisecond
			c.ReplicationInterval = 150 * time.Millisecond
			if adjust != nil {
				adjust(c)
			}
		})
	c3 := NewClient(t, s, "pve03").Root()
	JoinVia(t, s, a, c3)
	Eventually(t, "3 nodes", func() bool { return Quorate(a, 3) })
	a.Call("POST", "/storage", url.Values{"storage": {"tank"}, "type": {"zfspool"}, "pool": {"tank"}, "content": {"images,rootdir"}}).Must(t, "zfs")
	return s, a, b
}
