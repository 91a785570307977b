// Package corosync is the cluster's corosync configuration as the lab
// models it: corosync.conf parsed and written as pve-cluster's
// PVE::Corosync (src/PVE/Corosync.pm: parse_conf, write_conf; pvecm's
// layout of the file), the totem section join info shows, and the votes
// quorum counts.
//
// corosync.conf edited in /etc/pve is what pmxcfs hands to corosync
// (dcdb_sync_corosync_conf in src/pmxcfs/dcdb.c): a copy whose
// config_version is lower than the running one is ignored ("local
// corosync.conf is newer"); otherwise it becomes the cluster's
// configuration, as after `corosync-cfgtool -R`. The cluster name cannot
// change on a reload; the nodelist, votes, links and token_coefficient can.
//
// Reconstruction: only the keys the lab models are read (totem's
// cluster_name, config_version, token_coefficient; each node's name,
// nodeid, quorum_votes and ringN_addr links); the rest is written as pvecm
// writes it and ignored on reading.
package corosync

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Conf is corosync.conf plus what `pvecm expected` overrides.
type Conf struct {
	ClusterName      string  `json:"cluster_name"`
	ConfigVersion    int     `json:"config_version"`
	TokenCoefficient int     `json:"token_coefficient,omitempty"`
	Nodes            []*Node `json:"nodes"`
	// ExpectedVotes overrides the sum of votes when set (pvecm expected).
	ExpectedVotes int `json:"expected_votes,omitempty"`
}

// Node is one nodelist entry.
type Node struct {
	Name   string            `json:"name"`
	NodeID int               `json:"nodeid"`
	Votes  int               `json:"votes"`
	Links  map[string]string `json:"links"` // "ring0_addr" → "10.0.0.1"
}

// Member returns the corosync nodelist entry of name, or nil.
func (c *Conf) Member(name string) *Node {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// TotalVotes is the sum of the nodes' votes, or ExpectedVotes when set.
func (c *Conf) TotalVotes() int {
	if c.ExpectedVotes > 0 {
		return c.ExpectedVotes
	}
	t := 0
	for _, n := range c.Nodes {
		t += n.Votes
	}
	return t
}

// confSection is one parsed corosync.conf block.
type confSection struct {
	values   map[string]string
	children map[string][]*confSection
}

// parseCorosyncConf parses corosync's configuration syntax: "name {",
// "key: value", "}" and # comments.
func parseCorosyncConf(text string) (*confSection, error) {
	root := &confSection{values: map[string]string{}, children: map[string][]*confSection{}}
	stack := []*confSection{root}
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cur := stack[len(stack)-1]
		switch {
		case strings.HasSuffix(line, "{"):
			name := strings.TrimSpace(strings.TrimSuffix(line, "{"))
			sec := &confSection{values: map[string]string{}, children: map[string][]*confSection{}}
			cur.children[name] = append(cur.children[name], sec)
			stack = append(stack, sec)
		case line == "}":
			if len(stack) == 1 {
				return nil, fmt.Errorf("line %d: unexpected '}'", i+1)
			}
			stack = stack[:len(stack)-1]
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				return nil, fmt.Errorf("line %d: expected 'key: value', got %q", i+1, line)
			}
			cur.values[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if len(stack) != 1 {
		return nil, fmt.Errorf("missing '}' at the end")
	}
	return root, nil
}

// Parse reads the parts of a corosync.conf the lab models.
func Parse(text string) (*Conf, error) {
	root, err := parseCorosyncConf(text)
	if err != nil {
		return nil, err
	}
	totems := root.children["totem"]
	if len(totems) != 1 {
		return nil, fmt.Errorf("no totem section")
	}
	t := totems[0].values
	c := &Conf{ClusterName: t["cluster_name"]}
	if c.ConfigVersion, err = strconv.Atoi(t["config_version"]); err != nil || c.ConfigVersion < 1 {
		return nil, fmt.Errorf("unable to parse cluster config_version")
	}
	if tc := t["token_coefficient"]; tc != "" {
		if c.TokenCoefficient, err = strconv.Atoi(tc); err != nil {
			return nil, fmt.Errorf("token_coefficient: %w", err)
		}
	}
	for _, nl := range root.children["nodelist"] {
		for _, n := range nl.children["node"] {
			m := &Node{Name: n.values["name"], Votes: 1, Links: map[string]string{}}
			if m.NodeID, err = strconv.Atoi(n.values["nodeid"]); err != nil || m.Name == "" {
				return nil, fmt.Errorf("nodelist entry %q without a name or nodeid", m.Name)
			}
			if v := n.values["quorum_votes"]; v != "" {
				if m.Votes, err = strconv.Atoi(v); err != nil {
					return nil, fmt.Errorf("node %s: quorum_votes: %w", m.Name, err)
				}
			}
			for k, v := range n.values {
				if strings.HasPrefix(k, "ring") && strings.HasSuffix(k, "_addr") {
					m.Links[k] = v
				}
			}
			c.Nodes = append(c.Nodes, m)
		}
	}
	sort.Slice(c.Nodes, func(i, j int) bool { return c.Nodes[i].NodeID < c.Nodes[j].NodeID })
	return c, nil
}

// Adopt applies an edited corosync.conf to the running configuration cur
// (nil on a standalone node; see the package comment); it reports whether
// anything was taken.
func Adopt(cur *Conf, text string) (bool, error) {
	if cur == nil {
		// A standalone node's corosync.conf starts no corosync (pvecm
		// create does): nothing to reload.
		return false, nil
	}
	c, err := Parse(text)
	if err != nil {
		return false, err
	}
	if c.ConfigVersion < cur.ConfigVersion {
		return false, fmt.Errorf("local corosync.conf is newer")
	}
	cur.ConfigVersion = c.ConfigVersion
	cur.Nodes = c.Nodes
	if c.TokenCoefficient != 0 || cur.TokenCoefficient != 0 {
		cur.TokenCoefficient = c.TokenCoefficient
		if cur.TokenCoefficient == 0 {
			cur.TokenCoefficient = 125 // corosync's default when the key is gone
		}
	}
	return true, nil
}

// Render writes corosync.conf as pvecm does; its SHA-1 is the
// join info's config_digest.
func Render(c *Conf) string {
	var b strings.Builder
	b.WriteString("logging {\n  debug: off\n  to_syslog: yes\n}\n\nnodelist {\n")
	for _, m := range c.Nodes {
		fmt.Fprintf(&b, "  node {\n    name: %s\n    nodeid: %d\n    quorum_votes: %d\n", m.Name, m.NodeID, m.Votes)
		keys := slices.Sorted(maps.Keys(m.Links))
		for _, k := range keys {
			fmt.Fprintf(&b, "    %s: %s\n", k, m.Links[k])
		}
		b.WriteString("  }\n")
	}
	b.WriteString("}\n\nquorum {\n  provider: corosync_votequorum\n}\n\n")
	fmt.Fprintf(&b, "totem {\n  cluster_name: %s\n  config_version: %d\n  interface {\n    linknumber: 0\n  }\n  ip_version: ipv4-6\n  link_mode: passive\n  secauth: on\n", c.ClusterName, c.ConfigVersion)
	if c.TokenCoefficient > 0 && c.TokenCoefficient != 125 {
		fmt.Fprintf(&b, "  token_coefficient: %d\n", c.TokenCoefficient)
	}
	b.WriteString("  version: 2\n}\n")
	return b.String()
}

// Totem is corosync's totem section as join info shows it: all strings.
func Totem(c *Conf) map[string]any {
	t := map[string]any{
		"cluster_name":   c.ClusterName,
		"config_version": strconv.Itoa(c.ConfigVersion),
		"interface":      map[string]any{"0": map[string]any{"linknumber": "0"}},
		"ip_version":     "ipv4-6",
		"link_mode":      "passive",
		"secauth":        "on",
		"version":        "2",
	}
	if c.TokenCoefficient > 0 && c.TokenCoefficient != 125 {
		t["token_coefficient"] = strconv.Itoa(c.TokenCoefficient)
	}
	return t
}
