package pvesim

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// corosync.conf edited in /etc/pve is what pmxcfs hands to corosync
// (dcdb_sync_corosync_conf): a copy whose config_version is lower than the
// running one is ignored ("local corosync.conf is newer"); otherwise it
// becomes the cluster's configuration, as after `corosync-cfgtool -R`. The
// cluster name cannot change on a reload; the nodelist, votes, links and
// token_coefficient can.

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

// corosyncFromConf reads the parts of a corosync.conf the lab models.
func corosyncFromConf(text string) (*Corosync, error) {
	root, err := parseCorosyncConf(text)
	if err != nil {
		return nil, err
	}
	totems := root.children["totem"]
	if len(totems) != 1 {
		return nil, fmt.Errorf("no totem section")
	}
	t := totems[0].values
	c := &Corosync{ClusterName: t["cluster_name"]}
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
			m := &CorosyncNode{Name: n.values["name"], Votes: 1, Links: map[string]string{}}
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

// adoptCorosyncConf applies an edited corosync.conf to db (see above); it
// reports whether anything was taken.
func adoptCorosyncConf(db *ConfigDB, text string) (bool, error) {
	if db.Corosync == nil {
		// A standalone node's corosync.conf starts no corosync (pvecm
		// create does): nothing to reload.
		return false, nil
	}
	c, err := corosyncFromConf(text)
	if err != nil {
		return false, err
	}
	if c.ConfigVersion < db.Corosync.ConfigVersion {
		return false, fmt.Errorf("local corosync.conf is newer")
	}
	cur := db.Corosync
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
