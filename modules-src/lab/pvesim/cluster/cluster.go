// Package cluster is the simulator's model of cluster membership, after
// pve-cluster and pve-manager: who is a member and who is up, quorum
// (pmxcfs's view of corosync's votequorum: src/pmxcfs/quorum.c), the
// pre-checks and nodelist edits of a join and a removal
// (src/PVE/Cluster/Setup.pm assert_joinable; src/PVE/API2/ClusterConfig.pm
// addnode, delnode, join_info), the links a join or create is given
// (the corosync-link option of src/PVE/Corosync.pm), and the views built
// from membership alone: /cluster/status (pve-manager
// PVE/API2/Cluster.pm get_status over pmxcfs's .members), /cluster/config/
// nodes and /join, the node entries of /nodes and /cluster/resources
// (PVE/API2/Nodes.pm, Cluster.pm resources), and `pvecm status`.
//
// It also words quorum's refusal of a write (src/PVE/Cluster.pm cfs_lock's
// "no quorum!", check_cfs_quorum) and runs addnode's checks in addnode's
// order (NewMember).
//
// corosync.conf itself is pvesim/corosync; this package reads and edits
// its Conf. It is a rule package below the simulator's core (issue 27 §1),
// as pvesim/access is: pvesim/core keeps the state (state.json, who is
// up, the node's files: gen_local_dirs, certificates, the stale /etc/pve
// of a removed node) and both halves of a join, pvesim/clustersim the
// handlers, the join's locks and tasks; they pass in what only they know:
// which node is up (Up), their addresses and certificate fingerprints. It
// imports neither.
package cluster

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/corosync"
)

// Up says whether a member's corosync runs with the cluster's
// configuration and so gives its vote (core's VotesForLocked).
type Up func(name string) bool

// Quorate: a standalone /etc/pve (c nil) is always writable; a cluster's
// only with a majority of the expected votes up (C10: 1 of 3 is not).
// Expected votes are corosync's TotalVotes, `pvecm expected` included.
func Quorate(c *corosync.Conf, up Up) bool {
	if c == nil {
		return true
	}
	votes := 0
	for _, m := range c.Nodes {
		if up(m.Name) {
			votes += m.Votes
		}
	}
	return votes*2 > c.TotalVotes()
}

// CfsLockNoQuorum is cfs_lock_file's error on a read-only /etc/pve
// (pve-cluster src/PVE/Cluster.pm cfs_lock: the lock attempt spins for
// its timeout, then dies "no quorum!"), wrapped by the caller's message
// (e.g. "create storage failed"), if it gives one.
func CfsLockNoQuorum(file, errmsg string) string {
	msg := fmt.Sprintf("cfs-lock 'file-%s' error: no quorum!", strings.ReplaceAll(file, ".", "_"))
	if errmsg != "" {
		msg = errmsg + ": " + msg
	}
	return msg
}

// CheckCfsQuorum is check_cfs_quorum (Cluster.pm), which cluster-wide
// writes call first.
func CheckCfsQuorum(quorate bool) error {
	if !quorate {
		return fmt.Errorf("cluster not ready - no quorum?")
	}
	return nil
}

// Members are the nodes sharing local's /etc/pve: the nodelist, or local
// alone when standalone.
func Members(c *corosync.Conf, local string) []string {
	if c == nil {
		return []string{local}
	}
	out := make([]string, 0, len(c.Nodes))
	for _, m := range c.Nodes {
		out = append(out, m.Name)
	}
	return out
}

// flag is a boolean as PVE's JSON has it.
var flag = map[bool]int{true: 1}

// StandaloneStatus is /cluster/status on a node in no cluster: itself.
func StandaloneStatus(local, addr string) []map[string]any {
	return []map[string]any{{
		"type": "node", "id": "node/" + local, "name": local, "nodeid": 0,
		"ip": addr, "local": 1, "online": 1, "level": "",
	}}
}

// Status is /cluster/status as local sees its cluster: the cluster entry
// with local's quorum (quorate), then each nodelist entry, online when up.
func Status(c *corosync.Conf, local string, quorate bool, up Up, addr func(*corosync.Node) string) []map[string]any {
	out := []map[string]any{{
		"type": "cluster", "id": "cluster", "name": c.ClusterName, "nodes": len(c.Nodes),
		"version": c.ConfigVersion, "quorate": flag[quorate],
	}}
	for _, m := range c.Nodes {
		out = append(out, map[string]any{
			"type": "node", "id": "node/" + m.Name, "name": m.Name, "nodeid": m.NodeID,
			"ip": addr(m), "local": flag[m.Name == local], "online": flag[up(m.Name)], "level": "",
		})
	}
	return out
}

// Stats are a node's figures as pvestatd reports them.
type Stats struct {
	CPU           float64
	MaxCPU        int
	Mem, MaxMem   int64
	Disk, MaxDisk int64
	Uptime        int64
}

// NodeEntry is a node's entry of /nodes and of /cluster/resources' node
// type: offline when not up; with its figures when up and the caller has
// Sys.Audit on it (K19). audited, asked only for a node up, returns the
// figures and whether the caller may see them; shown says they are in.
func NodeEntry(name string, up bool, audited func() (Stats, bool)) (e map[string]any, shown bool) {
	e = map[string]any{"node": name, "id": "node/" + name, "type": "node", "level": ""}
	if !up {
		e["status"] = "offline"
		return e, false
	}
	e["status"] = "online"
	stats, shown := audited()
	if shown {
		e["cpu"], e["maxcpu"] = stats.CPU, stats.MaxCPU
		e["mem"], e["maxmem"] = stats.Mem, stats.MaxMem
		e["disk"], e["maxdisk"] = stats.Disk, stats.MaxDisk
		e["uptime"] = stats.Uptime
	}
	return e, shown
}

// Nodelist is /cluster/config/nodes: corosync.conf's nodelist with its
// numbers as strings, as PVE::Corosync's parser leaves them; an empty
// list when standalone (hash_to_array of an absent nodelist).
func Nodelist(c *corosync.Conf) []map[string]any {
	out := []map[string]any{}
	if c == nil {
		return out
	}
	for _, m := range c.Nodes {
		e := map[string]any{"node": m.Name, "name": m.Name, "nodeid": strconv.Itoa(m.NodeID), "quorum_votes": strconv.Itoa(m.Votes)}
		for k, v := range m.Links {
			e[k] = v
		}
		out = append(out, e)
	}
	return out
}

// Member is one corosync member as the control API shows it (`pvecm
// status` material).
type Member struct {
	Name      string `json:"name"`
	NodeID    int    `json:"nodeid"`
	Votes     int    `json:"votes"`
	Ring0Addr string `json:"ring0_addr"`
	Online    bool   `json:"online"`
}

// Info is `pvecm status` material for the CLI stand-ins.
type Info struct {
	Name          string   `json:"name"`
	ConfigVersion int      `json:"config_version"`
	Transport     string   `json:"transport"`
	SecureAuth    bool     `json:"secure_auth"`
	RingID        string   `json:"ring_id"`
	ExpectedVotes int      `json:"expected_votes"`
	TotalVotes    int      `json:"total_votes"`
	Quorum        int      `json:"quorum"`
	Quorate       bool     `json:"quorate"`
	Nodes         []Member `json:"nodes"`
	CorosyncConf  string   `json:"corosync_conf"`
}

// PvecmStatus is `pvecm status` of c: the votes of the members up, the
// quorum (a majority of the expected votes) and the ring id of the lowest
// node id up (reconstruction of corosync-quorumtool's figures).
func PvecmStatus(c *corosync.Conf, quorate bool, up Up) Info {
	info := Info{Name: c.ClusterName, ConfigVersion: c.ConfigVersion, Transport: "knet", SecureAuth: true,
		ExpectedVotes: c.TotalVotes(), Quorate: quorate, CorosyncConf: corosync.Render(c)}
	lowest := 0
	for _, m := range c.Nodes {
		on := up(m.Name)
		if on {
			info.TotalVotes += m.Votes
			if lowest == 0 || m.NodeID < lowest {
				lowest = m.NodeID
			}
		}
		info.Nodes = append(info.Nodes, Member{Name: m.Name, NodeID: m.NodeID, Votes: m.Votes, Ring0Addr: m.Links["ring0_addr"], Online: on})
	}
	sort.Slice(info.Nodes, func(i, j int) bool { return info.Nodes[i].NodeID < info.Nodes[j].NodeID })
	info.Quorum = info.ExpectedVotes/2 + 1
	info.RingID = fmt.Sprintf("%d.%x", lowest, c.ConfigVersion)
	return info
}
