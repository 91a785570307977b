package etcpvefs

import (
	"fmt"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pmxcfs"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// Cluster is what .members shows of a node's cluster (corosync.conf's
// nodelist and the votes the node sees).
type Cluster struct {
	Name          string
	ConfigVersion int
	Quorate       bool // as the node asking sees it
	Nodes         []Member
}

// Member is one node of Cluster's nodelist.
type Member struct {
	Name   string
	NodeID int
	Online bool
	IP     string
	HasIP  bool // the lab knows the node: only then is "ip" shown
}

// Members is node's .members (status.c cfs_create_memberlist_msg); c is
// nil on a standalone node. serial is the database's change counter.
func Members(node string, serial int, c *Cluster) []byte {
	var b strings.Builder
	b.WriteString("{\n")
	fmt.Fprintf(&b, "\"nodename\": \"%s\",\n", node)
	if c == nil {
		fmt.Fprintf(&b, "\"version\": %d\n}\n", 0)
		return []byte(b.String())
	}
	fmt.Fprintf(&b, "\"version\": %d,\n", serial)
	fmt.Fprintf(&b, "\"cluster\": { \"name\": \"%s\", \"version\": %d, \"nodes\": %d, \"quorate\": %d },\n",
		c.Name, c.ConfigVersion, len(c.Nodes), pvecommon.BoolNum(c.Quorate))
	b.WriteString("\"nodelist\": {\n")
	for i, m := range c.Nodes {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, "  \"%s\": { \"id\": %d, \"online\": %d", m.Name, m.NodeID, pvecommon.BoolNum(m.Online))
		if m.HasIP {
			fmt.Fprintf(&b, ", \"ip\": \"%s\"", m.IP)
		}
		b.WriteString("}")
	}
	b.WriteString("\n  }\n}\n")
	return []byte(b.String())
}

// Version is .version (status.c cfs_create_version_msg): the start time
// of pmxcfs and, for every observed file, the database's change counter.
func Version(started int64, serial int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "{\n\"starttime\": %d,\n\"clinfo\": %d,\n\"vmlist\": %d,\n", started, serial, 0)
	for _, f := range []string{"corosync.conf", "corosync.conf.new", "storage.cfg", "user.cfg", "domains.cfg",
		"notifications.cfg", "priv/notifications.cfg", "priv/shadow.cfg", "priv/acme/plugins.cfg", "priv/tfa.cfg",
		"priv/token.cfg", "priv/wg-keys.cfg"} {
		fmt.Fprintf(&b, "\"%s\": %d,\n", f, serial)
	}
	b.WriteString("\"kvstore\": {\n}\n}\n")
	return []byte(b.String())
}

// VMList is .vmlist (status.c cfs_create_vmlist_msg) over the guest
// configurations vms (pmxcfs.ScanVMConfigs of the database's directory).
func VMList(serial int, vms []pmxcfs.VMConfig) []byte {
	var b strings.Builder
	if len(vms) == 0 {
		fmt.Fprintf(&b, "{\n\"version\": %d\n\n}\n", serial)
		return []byte(b.String())
	}
	fmt.Fprintf(&b, "{\n\"version\": %d,\n\"ids\": {\n", serial)
	for i, vm := range vms {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, "\"%d\": { \"node\": \"%s\", \"type\": \"%s\", \"version\": %d }", vm.VMID, vm.Node, vm.Type, serial)
	}
	b.WriteString("}\n\n}\n")
	return []byte(b.String())
}

// ClusterLog is .clusterlog (logger.c clog_dump_json): the lab logs
// nothing to the cluster log.
func ClusterLog() []byte { return []byte("{\n\"data\": []}\n") }
