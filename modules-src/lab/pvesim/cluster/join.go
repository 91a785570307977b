package cluster

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/corosync"
)

// LinkAddr is the address of a corosync-link property string
// ("10.0.0.1" or "address=10.0.0.1,priority=…").
func LinkAddr(v string) string {
	for _, part := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			return part
		}
		if k == "address" {
			return val
		}
	}
	return ""
}

// Links collects a create's or join's link0..link7 (link(i) is the
// parameter, "" when absent) as ringN_addr; none given is ring0_addr
// defAddr, the node's own address.
func Links(link func(i int) string, defAddr string) map[string]string {
	links := map[string]string{}
	for i := 0; i <= 7; i++ {
		if v := link(i); v != "" {
			links[fmt.Sprintf("ring%d_addr", i)] = LinkAddr(v)
		}
	}
	if len(links) == 0 {
		links["ring0_addr"] = defAddr
	}
	return links
}

// Joiner is what assert_joinable looks at on the joining node.
type Joiner struct {
	Name, Addr string
	// InCluster: the node has a corosync.conf (and so an authkey and a
	// running corosync).
	InCluster bool
	// HasGuests: its /etc/pve's vmlist lists guests (a clustered node's is
	// the cluster's).
	HasGuests bool
}

// JoinableReasons is assert_joinable for j: the reasons it may not join
// (force overrides them). links are the ringN_addr the join would use;
// each must be an address of the joiner (passing the primary's IP as
// link0 is a classic mistake).
func JoinableReasons(j Joiner, links map[string]string) []string {
	// pve-cluster Setup.pm assert_joinable, in its order: corosync's
	// authkey and corosync.conf, then the vmlist (the whole cluster's on a
	// clustered node: any guest there counts), then a running corosync.
	var reasons []string
	if j.InCluster {
		reasons = append(reasons,
			"authentication key '/etc/corosync/authkey' already exists",
			"cluster config '/etc/pve/corosync.conf' already exists")
	}
	if j.HasGuests { // they would collide with the cluster's VMIDs
		reasons = append(reasons, "this host already contains virtual guests")
	}
	if j.InCluster {
		reasons = append(reasons, "corosync is already running, is this node already in a cluster?!")
	}
	for _, k := range slices.Sorted(maps.Keys(links)) {
		if ip := links[k]; ip != j.Addr && ip != j.Name {
			link := "link" + strings.TrimSuffix(strings.TrimPrefix(k, "ring"), "_addr")
			reasons = append(reasons, fmt.Sprintf("%s: cannot use IP '%s', not found on local node!", link, ip))
		}
	}
	return reasons
}

// JoinLinks is addnode's check of the joiner's links against the
// cluster's (pve-cluster API2/ClusterConfig.pm addnode, before the
// nodelist check): an address another node uses on any link is refused;
// links given must be exactly the links the cluster's nodes have; none
// given (explicit false: links holds only the fallback, the joiner's own
// address as new_node_ip) is taken as the cluster's one link, refused when
// it has several. It returns the ringN_addr the node gets, or PVE's error.
func JoinLinks(c *corosync.Conf, joiner string, links map[string]string, explicit bool) (map[string]string, string) {
	if explicit {
		for _, k := range slices.Sorted(maps.Keys(links)) {
			for _, m := range c.Nodes {
				if m.Name == joiner {
					continue // re-adding a node (force) may keep its addresses
				}
				for i := 0; i <= 7; i++ {
					id := fmt.Sprintf("ring%d_addr", i)
					if v, ok := m.Links[id]; ok && v == links[k] {
						return nil, fmt.Sprintf("corosync: address '%s' already used on link %s by node '%s'", links[k], id, m.Name)
					}
				}
			}
		}
	}
	var have map[string]string // the cluster's links: any node's (verify_conf keeps them alike)
	if len(c.Nodes) > 0 {
		have = c.Nodes[0].Links
	}
	if explicit {
		for i := 0; i <= 7; i++ {
			id := fmt.Sprintf("ring%d_addr", i)
			_, inCluster := have[id]
			_, given := links[id]
			if inCluster && !given {
				return nil, fmt.Sprintf("corosync: link %d exists in cluster config but wasn't specified for new node", i)
			}
			if given && !inCluster {
				return nil, fmt.Sprintf("corosync: link %d specified for new node doesn't exist in cluster config", i)
			}
		}
		return links, ""
	}
	if len(have) != 1 {
		return nil, "no links given but multiple links found on other nodes, fallback only supported on single-link clusters"
	}
	fallback := ""
	for _, v := range links {
		fallback = v
	}
	for id := range have {
		return map[string]string{id: fallback}, ""
	}
	return links, ""
}

// AddNodeID is addnode's check of the joiner against c's nodelist
// (pve-cluster API2/ClusterConfig.pm addnode). An existing entry keeps its
// node id and votes unless they are given; it is overwritten only with
// force and when both match ("forcing overwrite of configured node"),
// else refused. A new node without a node id gets the lowest free one;
// votes not given (votes < 0) are 1. It returns the node id and votes, or
// PVE's error text. The caller makes the node's directories, then calls
// Append.
//
// Reconstruction: a node id given for a new node that another node holds
// is refused here; addnode writes it as it is, and corosync then refuses
// the duplicate on every node, which the lab does not model.
func AddNodeID(c *corosync.Conf, joiner string, nodeid, votes int, force bool) (int, int, string) {
	if old := c.Member(joiner); old != nil {
		if nodeid == 0 {
			nodeid = old.NodeID
		}
		if votes < 0 {
			votes = old.Votes
		}
		if old.Votes != votes || old.NodeID != nodeid || !force {
			return 0, 0, fmt.Sprintf("can't add existing node '%s'", joiner)
		}
		c.Nodes = RemoveMember(c.Nodes, joiner)
		return nodeid, votes, ""
	}
	if votes < 0 {
		votes = 1
	}
	if nodeid == 0 {
		used := map[int]bool{}
		for _, m := range c.Nodes {
			used[m.NodeID] = true
		}
		for nodeid = 1; used[nodeid]; nodeid++ {
		}
	}
	for _, m := range c.Nodes {
		if m.NodeID == nodeid {
			return 0, 0, fmt.Sprintf("Node ID %d already used by node %s", nodeid, m.Name)
		}
	}
	return nodeid, votes, ""
}

// NewMember is addnode's checks of the joiner, in addnode's order: its
// links (JoinLinks), then its node id and votes (AddNodeID; nodeid 0 and
// votes < 0 are not given). It returns the nodelist entry the joiner gets,
// or PVE's error text. The caller makes the node's directories
// (LocalDirs), then calls Append.
func NewMember(c *corosync.Conf, joiner string, nodeid, votes int, links map[string]string, explicit, force bool) (*corosync.Node, string) {
	links, msg := JoinLinks(c, joiner, links, explicit)
	if msg != "" {
		return nil, msg
	}
	nodeid, votes, msg = AddNodeID(c, joiner, nodeid, votes, force)
	if msg != "" {
		return nil, msg
	}
	return &corosync.Node{Name: joiner, NodeID: nodeid, Votes: votes, Links: links}, ""
}

// LocalDirs are what addnode's gen_local_dirs makes under
// /etc/pve/nodes/<joiner> (Cluster/Setup.pm): no certificate yet.
var LocalDirs = []string{"qemu-server", "lxc", "openvz", "priv"}

// Append adds n to c's nodelist, in node id order, as a new config version.
func Append(c *corosync.Conf, n *corosync.Node) {
	c.Nodes = append(c.Nodes, n)
	sort.Slice(c.Nodes, func(i, j int) bool { return c.Nodes[i].NodeID < c.Nodes[j].NodeID })
	c.ConfigVersion++
}

// RemoveMember is list without name (in place).
func RemoveMember(list []*corosync.Node, name string) []*corosync.Node {
	out := list[:0]
	for _, m := range list {
		if m.Name != name {
			out = append(out, m)
		}
	}
	return out
}

// DelnodeTarget is delnode's lookup of the node to remove: its name or
// one of its ring0/ring1 addresses; nil when c lists none (or is nil).
func DelnodeTarget(c *corosync.Conf, victim string) *corosync.Node {
	if c == nil {
		return nil
	}
	for _, cand := range c.Nodes {
		if cand.Name == victim || cand.Links["ring0_addr"] == victim || cand.Links["ring1_addr"] == victim {
			return cand
		}
	}
	return nil
}

// JoinInfo is GET /cluster/config/join of c asked on local: the nodelist
// (numbers as strings) with each member's address and its current
// certificate's fingerprint (get_node_fingerprint, whose error is
// returned: a joiner not finished has none yet), the totem section and
// corosync.conf's digest. The preferred node is local unless asked
// (non-nil), when it must be a member.
func JoinInfo(c *corosync.Conf, local string, asked *string, addr func(*corosync.Node) string, fingerprint func(node string) (string, error)) (map[string]any, error) {
	preferred := local
	if asked != nil {
		preferred = *asked
		if c.Member(preferred) == nil {
			return nil, fmt.Errorf("unknown node '%s'", preferred)
		}
	}
	list := []map[string]any{}
	for _, m := range c.Nodes {
		e := map[string]any{
			"name": m.Name, "nodeid": strconv.Itoa(m.NodeID), "quorum_votes": strconv.Itoa(m.Votes),
			"pve_addr": addr(m),
		}
		fp, err := fingerprint(m.Name)
		if err != nil {
			return nil, err
		}
		e["pve_fp"] = fp
		for k, v := range m.Links {
			e[k] = v
		}
		list = append(list, e)
	}
	sum := sha1.Sum([]byte(corosync.Render(c)))
	return map[string]any{
		"nodelist": list, "preferred_node": preferred, "totem": corosync.Totem(c),
		"config_digest": hex.EncodeToString(sum[:]),
	}, nil
}
