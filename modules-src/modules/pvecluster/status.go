package pvecluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/host"
	"github.com/gopve/proxmox/modules-src/pveapi"
)

// Cluster is a cluster as one node sees it; nil means standalone.
type Cluster struct {
	Name          string   `json:"name"`
	Quorate       bool     `json:"quorate"`
	Members       []Member `json:"members"`
	ExpectedVotes int      `json:"expected_votes"`
	TotalVotes    int      `json:"total_votes"`
}

// Member is one entry of the membership.
type Member struct {
	Name    string `json:"name"`
	NodeID  int    `json:"nodeid"`
	Address string `json:"address"`
	Online  bool   `json:"online"`
}

func (c *Cluster) member(name string) *Member {
	if c == nil {
		return nil
	}
	for i := range c.Members {
		if c.Members[i].Name == name {
			return &c.Members[i]
		}
	}
	return nil
}

func (c *Cluster) names() []string {
	var out []string
	for _, m := range c.Members {
		out = append(out, m.Name)
	}
	return out
}

// offline lists members that are listed but not online.
func (c *Cluster) offline() []string {
	var out []string
	for _, m := range c.Members {
		if !m.Online {
			out = append(out, m.Name)
		}
	}
	return out
}

// holds reports whether the cluster is quorate with name an online member.
func (c *Cluster) holds(name string) bool {
	m := c.member(name)
	return c != nil && c.Quorate && m != nil && m.Online
}

func (c *Cluster) String() string {
	if c == nil {
		return "standalone (no cluster)"
	}
	var ms []string
	for _, m := range c.Members {
		s := m.Name
		if !m.Online {
			s += " (offline)"
		}
		ms = append(ms, s)
	}
	q := "quorate"
	if !c.Quorate {
		q = "NOT quorate"
	}
	return fmt.Sprintf("cluster %q, %s, members: %s", c.Name, q, strings.Join(ms, ", "))
}

// Standalone is the view of a node outside any cluster: its own name.
type view struct {
	self    string // the name PVE gives the answering node
	cluster *Cluster
}

type statusEntry struct {
	Type    string `json:"type"`
	Name    string `json:"name"`
	NodeID  int    `json:"nodeid"`
	IP      string `json:"ip"`
	Online  bool   `json:"online"`
	Local   bool   `json:"local"`
	Quorate bool   `json:"quorate"`
}

// parseStatus reads GET /cluster/status: a cluster entry (absent on a
// standalone node, which answers one node entry) and node entries.
func parseStatus(raw json.RawMessage) (view, error) {
	var entries []statusEntry
	if err := pveapi.Decode(raw, &entries); err != nil {
		return view{}, fmt.Errorf("unexpected /cluster/status answer: %w", err)
	}
	var v view
	var c *Cluster
	for _, e := range entries {
		if e.Type == "cluster" {
			c = &Cluster{Name: e.Name, Quorate: e.Quorate}
		}
	}
	for _, e := range entries {
		if e.Type != "node" {
			continue
		}
		if e.Local {
			v.self = e.Name
		}
		if c != nil {
			c.Members = append(c.Members, Member{Name: e.Name, NodeID: e.NodeID, Address: e.IP, Online: e.Online})
		}
	}
	if c != nil {
		slices.SortFunc(c.Members, func(a, b Member) int { return a.NodeID - b.NodeID })
		c.ExpectedVotes = len(c.Members)
		for _, m := range c.Members {
			if m.Online {
				c.TotalVotes++
			}
		}
	}
	v.cluster = c
	return v, nil
}

// readLocal is this node's own view, through its API.
func readLocal(ctx context.Context, c *pveapi.Client) (view, error) {
	var raw json.RawMessage
	if err := c.Get(ctx, "/cluster/status", nil, &raw); err != nil {
		return view{}, fmt.Errorf("cannot read this node's cluster status: %w", err)
	}
	return parseStatus(raw)
}

// readSelf is this node's own view through its API (localAPI).
func (m *mod) readSelf(ctx context.Context) (view, error) {
	c, err := m.localAPI()
	if err != nil {
		return view{}, err
	}
	return readLocal(ctx, c)
}

// sshArgs are the options of every ssh the module runs to a peer: never a
// question (BatchMode), never a new or updated known_hosts entry. With
// known (the peer's known_hosts line) the host key is pinned to it and no
// file is consulted: the read works before known_hosts is written, and
// trusts nothing else.
func sshArgs(addr, known string, remote ...string) []string {
	args := []string{"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "UpdateHostKeys=no", "-o", "ConnectTimeout=10"}
	if known != "" {
		args = append(args, "-o", "UserKnownHostsFile=/dev/null", "-o", "GlobalKnownHostsFile=/dev/null",
			"-o", "KnownHostsCommand=/bin/echo "+known)
	}
	args = append(args, "-T", "root@"+addr, "--")
	return append(args, remote...)
}

// pveshOverSSH runs `pvesh get PATH` on a peer over root's SSH trust.
func pveshOverSSH(ctx context.Context, r host.Runner, addr, known, path string) (json.RawMessage, error) {
	res, err := r.Run(ctx, host.Command{Name: "ssh", Args: sshArgs(addr, known, "pvesh", "get", path, "--output-format", "json")})
	if err != nil {
		return nil, err
	}
	return json.RawMessage(res.Stdout), nil
}

// readOverSSH is a peer's view read with pvesh over root's SSH trust.
func readOverSSH(ctx context.Context, r host.Runner, addr, known string) (view, error) {
	raw, err := pveshOverSSH(ctx, r, addr, known, "/cluster/status")
	if err != nil {
		return view{}, fmt.Errorf("cannot read the cluster status of %s over SSH: %w", addr, err)
	}
	return parseStatus(raw)
}
