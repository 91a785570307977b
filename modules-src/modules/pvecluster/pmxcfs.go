package pvecluster

// A converged member proves its membership and quorum from what pmxcfs
// keeps on the node itself, with no API request, no process and no remote
// call (issue 24 §3).
//
// /etc/pve/.members is pmxcfs's generated membership file (pve-cluster
// src/pmxcfs/pmxcfs.c create_dot_members_cb → status.c
// cfs_create_memberlist_msg): {"nodename", "version", "cluster": {"name",
// "version", "nodes", "quorate"}, "nodelist": {NAME: {"id", "online",
// "ip"}}}, the cluster and nodelist only once corosync gave pmxcfs a
// cluster configuration. It is the very record GET /cluster/status answers
// from: pve-manager PVE/API2/Cluster.pm `status` calls
// PVE::Cluster::cfs_update, which fetches CFS_IPC_GET_CLUSTER_INFO (server.c:
// cfs_create_memberlist_msg again), and projects its cluster and nodelist
// (`local` is nodename == PVE::INotify::nodename). So reading the file
// proves exactly what the local API read proved, without pveproxy.
//
// What its fields are, on PVE:
//   - cluster.name, cluster.version and the nodelist come from the running
//     corosync's cmap (confdb.c: totem.cluster_name, totem.config_version,
//     nodelist.node.*);
//   - quorate is this node's corosync votequorum (quorum.c
//     quorum_notification_fn), reset to 0 when pmxcfs loses corosync
//     (service_quorum_finalize);
//   - online is membership of pmxcfs's own CPG group as this node sees it
//     (status.c dfsm_confchg): a node online here is in this node's
//     partition;
//   - ip is what that node published about itself (its kvstore "nodeip").
//
// The proof is taken only when everything agrees; anything else goes the
// way it went before (the API, and the primary's own view over SSH or its
// API), which also settles joins, half-done joins and lost quorum:
//
//   - nodename is this node's name (C8), the cluster is cluster_name and
//     quorate, and this node is online in it;
//   - /etc/pve/corosync.conf names the same cluster at the same
//     config_version as the running corosync, and lists this node and the
//     primary;
//   - on a non-primary: the primary is online in this quorate partition and
//     published the address nodes gives it. That is what the primary's own
//     read proved before (C6: it is the node at that address, in this
//     cluster, and it lists this node), as seen by this member's corosync.
//
// A corosync.conf naming another cluster is refused whatever the membership
// says (C6): it is the configuration the node runs after its next restart.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

const (
	membersFile  = "/etc/pve/.members"
	corosyncFile = "/etc/pve/corosync.conf"
)

// dotMembers is /etc/pve/.members as cfs_create_memberlist_msg writes it.
type dotMembers struct {
	Nodename string `json:"nodename"`
	Version  *int   `json:"version"`
	Cluster  *struct {
		Name    string `json:"name"`
		Version int    `json:"version"`
		Nodes   int    `json:"nodes"`
		Quorate int    `json:"quorate"`
	} `json:"cluster"`
	Nodelist map[string]struct {
		ID     int    `json:"id"`
		Online int    `json:"online"`
		IP     string `json:"ip"`
	} `json:"nodelist"`
}

// parseMembers reads .members into the view GET /cluster/status gives of
// it (pve-manager API2/Cluster.pm status: a cluster entry only with a
// nodelist), and the running corosync's config_version.
func parseMembers(raw []byte) (view, int, error) {
	var d dotMembers
	if err := json.Unmarshal(raw, &d); err != nil {
		return view{}, 0, fmt.Errorf("%s: %w", membersFile, err)
	}
	if d.Nodename == "" || d.Version == nil {
		return view{}, 0, fmt.Errorf("%s: no nodename or version", membersFile)
	}
	v := view{self: d.Nodename}
	if len(d.Nodelist) == 0 || d.Cluster == nil {
		return v, 0, nil
	}
	c := &Cluster{Name: d.Cluster.Name, Quorate: d.Cluster.Quorate == 1}
	for name, n := range d.Nodelist {
		c.Members = append(c.Members, Member{Name: name, NodeID: n.ID, Address: n.IP, Online: n.Online == 1})
	}
	slices.SortFunc(c.Members, func(a, b Member) int { return a.NodeID - b.NodeID })
	c.ExpectedVotes = len(c.Members)
	c.TotalVotes = onlineVotes(c)
	v.cluster = c
	return v, d.Cluster.Version, nil
}

// corosyncConf is what the module reads of corosync.conf.
type corosyncConf struct {
	ClusterName   string
	ConfigVersion int
	Nodes         []string
}

// parseCorosyncConf reads the totem section's cluster_name and
// config_version and the nodelist's node names from corosync.conf's
// `section { key: value }` syntax (corosync.conf(5); PVE::Corosync
// parse_conf reads the same).
func parseCorosyncConf(data string) (corosyncConf, error) {
	var cc corosyncConf
	var stack []string
	sc := bufio.NewScanner(strings.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		switch {
		case line == "":
		case strings.HasSuffix(line, "{"):
			stack = append(stack, strings.TrimSpace(strings.TrimSuffix(line, "{")))
		case line == "}":
			if len(stack) == 0 {
				return cc, fmt.Errorf("%s: unbalanced '}'", corosyncFile)
			}
			stack = stack[:len(stack)-1]
		default:
			k, val, ok := strings.Cut(line, ":")
			if !ok {
				return cc, fmt.Errorf("%s: cannot read line %q", corosyncFile, line)
			}
			k, val = strings.TrimSpace(k), strings.TrimSpace(val)
			switch path := strings.Join(stack, "."); {
			case path == "totem" && k == "cluster_name":
				cc.ClusterName = val
			case path == "totem" && k == "config_version":
				n, err := strconv.Atoi(val)
				if err != nil {
					return cc, fmt.Errorf("%s: config_version %q", corosyncFile, val)
				}
				cc.ConfigVersion = n
			case path == "nodelist.node" && k == "name":
				cc.Nodes = append(cc.Nodes, val)
			}
		}
	}
	if len(stack) != 0 {
		return cc, fmt.Errorf("%s: unbalanced '{'", corosyncFile)
	}
	return cc, sc.Err()
}

// readCorosyncConf is this node's /etc/pve/corosync.conf; nil when there
// is none (a standalone node), or when this reader cannot follow its
// syntax: then it proves nothing and the API is read (corosync, not this
// module, is the judge of the file).
func (m *mod) readCorosyncConf() (*corosyncConf, error) {
	st, err := m.env.Root.ReadFile(corosyncFile)
	if err != nil || !st.Exists {
		return nil, err
	}
	cc, err := parseCorosyncConf(string(st.Content))
	if err != nil {
		m.r.Log(2, "%v: membership read from the API", err)
		return nil, nil
	}
	return &cc, nil
}

// otherCluster is C6 on the configuration: a corosync.conf naming another
// cluster than cluster_name fails, before anything is changed, whatever the
// running membership says (what it names is what the node runs once its
// corosync restarts).
func (m *mod) otherCluster(cc *corosyncConf) error {
	if cc == nil || cc.ClusterName == "" || cc.ClusterName == m.p.ClusterName {
		return nil
	}
	return fmt.Errorf("%s already belongs to a different cluster, %q, by its %s (config_version %d, nodes %s), not %q; a node is never moved between clusters: nothing was changed (C6)",
		m.c.self.Name, cc.ClusterName, corosyncFile, cc.ConfigVersion, strings.Join(cc.Nodes, ", "), m.p.ClusterName)
}

// provenLocally returns this node's view from .members when it proves, on
// its own, a converged member: see the top of this file. false: the caller
// reads the API (and the primary) as before. It never fails: whatever it
// cannot prove, the slower reads decide.
func (m *mod) provenLocally(cc *corosyncConf) (view, bool) {
	if cc == nil {
		return view{}, false
	}
	st, err := m.env.Root.ReadFile(membersFile)
	if err != nil || !st.Exists {
		return view{}, false
	}
	v, version, err := parseMembers(st.Content)
	if err != nil {
		return view{}, false
	}
	me, primary := m.c.self, m.c.primary
	cl := v.cluster
	if v.self != me.Name || cl == nil || cl.Name != m.p.ClusterName || !cl.holds(me.Name) {
		return view{}, false
	}
	if cc.ClusterName != cl.Name || cc.ConfigVersion != version || !slices.Contains(cc.Nodes, me.Name) || !slices.Contains(cc.Nodes, primary.Name) {
		return view{}, false
	}
	if !m.c.isPrimary() {
		p := cl.member(primary.Name)
		if p == nil || !p.Online || p.Address != primary.Address {
			return view{}, false
		}
	}
	return v, true
}
