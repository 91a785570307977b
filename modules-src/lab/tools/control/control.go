// Package control is the stand-ins' client of the lab's control API: plain
// HTTP/JSON over the Unix socket named by node.json's "control" (see
// docs/contracts.md, "Lab control API used by the CLI stand-ins"). It carries
// cluster-wide state that real PVE keeps in corosync and pmxcfs.
package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Client talks to one control socket.
type Client struct {
	http *http.Client
}

// New returns a client for the socket at path.
func New(socket string) *Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	return &Client{http: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// Error is a non-2xx answer; Message is what real PVE would print.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return e.Message }

// IsNotFound reports a 404 from the control API.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// Do sends body (JSON, may be nil) and decodes a 2xx answer into out (may be nil).
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://lab"+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("lab control socket unreachable (is the lab running?): %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("read lab control answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = fmt.Sprintf("lab control API: %s %s: %s", method, path, resp.Status)
		}
		return &Error{Status: resp.StatusCode, Message: e.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decode lab control answer to %s %s: %w", method, path, err)
	}
	return nil
}

// Cluster is a cluster as the control API describes it.
type Cluster struct {
	Name          string   `json:"name"`
	ConfigVersion int      `json:"config_version"`
	Transport     string   `json:"transport"`
	SecureAuth    bool     `json:"secure_auth"`
	RingID        string   `json:"ring_id"`
	ExpectedVotes int      `json:"expected_votes"`
	Quorate       bool     `json:"quorate"`
	Nodes         []Member `json:"nodes"`
}

// Member is one cluster node.
type Member struct {
	Name      string `json:"name"`
	NodeID    int    `json:"nodeid"`
	Votes     int    `json:"votes"`
	Ring0Addr string `json:"ring0_addr"`
	Online    bool   `json:"online"`
}

// ClusterOf returns the cluster node belongs to; IsNotFound(err) when standalone.
func (c *Client) ClusterOf(ctx context.Context, node string) (*Cluster, error) {
	var cl Cluster
	if err := c.Do(ctx, http.MethodGet, "/v1/nodes/"+node+"/cluster", nil, &cl); err != nil {
		return nil, err
	}
	return &cl, nil
}

// CreateCluster makes node the first member of a new cluster.
func (c *Client) CreateCluster(ctx context.Context, node, name, link0 string) (*Cluster, error) {
	var cl Cluster
	err := c.Do(ctx, http.MethodPost, "/v1/clusters", map[string]any{"node": node, "name": name, "link0": link0}, &cl)
	return &cl, err
}

// AddNode adds node to the cluster of member (pvecm addnode on member).
func (c *Client) AddNode(ctx context.Context, member, node, link0 string, force bool) (*Cluster, error) {
	var cl Cluster
	err := c.Do(ctx, http.MethodPost, "/v1/nodes/"+member+"/cluster/nodes",
		map[string]any{"node": node, "link0": link0, "force": force}, &cl)
	return &cl, err
}

// AddNodeEntry is the member's half of a join (pvecm addnode): node is
// listed in member's cluster; it joins for real once FinishJoin ran on it.
func (c *Client) AddNodeEntry(ctx context.Context, member, node, link0 string, force bool) (*Cluster, error) {
	var cl Cluster
	err := c.Do(ctx, http.MethodPost, "/v1/nodes/"+member+"/cluster/nodes",
		map[string]any{"node": node, "link0": link0, "force": force, "entry": true}, &cl)
	return &cl, err
}

// FinishJoin is the joiner's half of a join (finish_join): the lines it
// prints, and the error it died with ("" when it finished).
func (c *Client) FinishJoin(ctx context.Context, node string) (output []string, failure string, err error) {
	var res struct {
		Output []string `json:"output"`
		Error  string   `json:"error"`
	}
	err = c.Do(ctx, http.MethodPost, "/v1/nodes/"+node+"/cluster/finish-join", map[string]any{}, &res)
	return res.Output, res.Error, err
}

// SetExpected sets the expected votes of node's cluster (pvecm expected).
func (c *Client) SetExpected(ctx context.Context, node string, votes int) (*Cluster, error) {
	var cl Cluster
	err := c.Do(ctx, http.MethodPost, "/v1/nodes/"+node+"/cluster/expected", map[string]any{"votes": votes}, &cl)
	return &cl, err
}

// NodeInfo is the simulator's current view of a node.
type NodeInfo struct {
	Name        string `json:"name"`
	Addr        string `json:"addr"`
	URL         string `json:"url"`
	Fingerprint string `json:"fingerprint"`
	Online      bool   `json:"online"`
	Cluster     string `json:"cluster"`
}

// Node returns what the simulator says about node now: a join regenerates
// the joiner's certificate (C5), so node.json's fingerprint can be stale.
func (c *Client) Node(ctx context.Context, node string) (*NodeInfo, error) {
	var n NodeInfo
	if err := c.Do(ctx, http.MethodGet, "/v1/nodes/"+node, nil, &n); err != nil {
		return nil, err
	}
	return &n, nil
}
