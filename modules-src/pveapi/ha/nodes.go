package ha

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
)

// NodeList is the nodes of a group or node-affinity rule with their
// priorities (higher is preferred; 0 when none is written).
type NodeList map[string]int

var nodePrioRe = regexp.MustCompile(`^([a-zA-Z0-9](?:[a-zA-Z0-9\-]*[a-zA-Z0-9])?)(?::(\d+))?$`)

// ParseNodeList reads "pve01:2,pve02:1,pve03" (PVE::Tools::split_list, then
// HA/Tools.pm parse_node_priority for each entry). A node named twice is
// refused: PVE would keep one of the two silently.
func ParseNodeList(s string) (NodeList, error) {
	out := NodeList{}
	for _, entry := range pveformat.SplitList(s) {
		m := nodePrioRe.FindStringSubmatch(entry)
		if m == nil {
			return nil, fmt.Errorf("unable to parse HA node entry '%s'", entry)
		}
		prio := 0
		if m[2] != "" {
			n, err := strconv.Atoi(m[2])
			if err != nil {
				return nil, fmt.Errorf("unable to parse HA node entry '%s'", entry)
			}
			prio = n
		}
		if _, dup := out[m[1]]; dup {
			return nil, fmt.Errorf("node '%s' is listed twice", m[1])
		}
		out[m[1]] = prio
	}
	return out, nil
}

// String prints the list as NodeAffinity.pm encode_plugin_value does:
// sorted by node, "node:prio", a priority of 0 as the bare node. Two
// lists with one meaning print the same.
func (l NodeList) String() string {
	parts := make([]string, 0, len(l))
	for _, n := range slices.Sorted(maps.Keys(l)) {
		if p := l[n]; p != 0 {
			parts = append(parts, n+":"+strconv.Itoa(p))
		} else {
			parts = append(parts, n)
		}
	}
	return strings.Join(parts, ",")
}

// Equal compares two lists by meaning.
func (l NodeList) Equal(o NodeList) bool { return maps.Equal(l, o) }

// Nodes returns the node names, sorted.
func (l NodeList) Nodes() []string { return slices.Sorted(maps.Keys(l)) }
