// Package controltest is an in-memory stand-in for the simulator's control
// API (cluster routes only), for testing the CLI stand-ins before and apart
// from the real simulator. It follows docs/contracts.md; the simulator's
// behaviour wins where they differ.
package controltest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"sync"
)

// Fake holds clusters keyed by name.
type Fake struct {
	mu       sync.Mutex
	clusters map[string]*cluster
	member   map[string]string // node -> cluster name
	offline  map[string]bool
}

type cluster struct {
	name     string
	version  int
	expected int
	nodes    []member
}

type member struct {
	Name      string `json:"name"`
	NodeID    int    `json:"nodeid"`
	Votes     int    `json:"votes"`
	Ring0Addr string `json:"ring0_addr"`
	Online    bool   `json:"online"`
}

// New returns an empty fake.
func New() *Fake {
	return &Fake{clusters: map[string]*cluster{}, member: map[string]string{}, offline: map[string]bool{}}
}

// SetOnline marks a node up or down (C10 quorum tests).
func (f *Fake) SetOnline(node string, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.offline[node] = !on
}

// Serve listens on a Unix socket at path until the returned stop is called.
func (f *Fake) Serve(path string) (stop func(), err error) {
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: f.Handler()}
	go srv.Serve(ln)
	return func() { srv.Close() }, nil
}

func (f *Fake) view(c *cluster) map[string]any {
	nodes := []member{}
	total := 0
	for _, m := range c.nodes {
		m.Online = !f.offline[m.Name]
		if m.Online {
			total += m.Votes
		}
		nodes = append(nodes, m)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].NodeID < nodes[j].NodeID })
	return map[string]any{"name": c.name, "config_version": c.version, "transport": "knet", "secure_auth": true,
		"ring_id": fmt.Sprintf("1.%x", c.version*16+len(nodes)), "expected_votes": c.expected,
		"quorate": total >= c.expected/2+1, "nodes": nodes}
}

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code int, msg string) {
	reply(w, code, map[string]string{"error": msg})
}

// Handler serves the cluster routes of the control API.
func (f *Fake) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/nodes/{node}/cluster", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		c, ok := f.clusters[f.member[r.PathValue("node")]]
		if !ok {
			fail(w, 404, "Error: Corosync config '/etc/pve/corosync.conf' does not exist - is this node part of a cluster?")
			return
		}
		reply(w, 200, f.view(c))
	})
	mux.HandleFunc("POST /v1/clusters", func(w http.ResponseWriter, r *http.Request) {
		var b struct{ Node, Name, Link0 string }
		if json.NewDecoder(r.Body).Decode(&b) != nil {
			fail(w, 400, "bad JSON")
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if _, ok := f.member[b.Node]; ok {
			fail(w, 409, "cluster config '/etc/pve/corosync.conf' already exists")
			return
		}
		c := &cluster{name: b.Name, version: 1, expected: 1, nodes: []member{{Name: b.Node, NodeID: 1, Votes: 1, Ring0Addr: b.Link0}}}
		f.clusters[b.Name] = c
		f.member[b.Node] = b.Name
		reply(w, 200, f.view(c))
	})
	mux.HandleFunc("POST /v1/nodes/{member}/cluster/nodes", func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			Node  string `json:"node"`
			Link0 string `json:"link0"`
			Force bool   `json:"force"`
		}
		if json.NewDecoder(r.Body).Decode(&b) != nil {
			fail(w, 400, "bad JSON")
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		c, ok := f.clusters[f.member[r.PathValue("member")]]
		if !ok {
			fail(w, 404, "Error: Corosync config '/etc/pve/corosync.conf' does not exist - is this node part of a cluster?")
			return
		}
		if other, ok := f.member[b.Node]; ok && other != c.name {
			fail(w, 409, fmt.Sprintf("node '%s' already belongs to cluster '%s'", b.Node, other))
			return
		}
		for _, m := range c.nodes {
			if m.Name == b.Node && !b.Force {
				fail(w, 409, "node "+b.Node+" already defined")
				return
			}
			if m.Name == b.Node {
				reply(w, 200, f.view(c))
				return
			}
		}
		c.nodes = append(c.nodes, member{Name: b.Node, NodeID: len(c.nodes) + 1, Votes: 1, Ring0Addr: b.Link0})
		c.version++
		c.expected = len(c.nodes)
		f.member[b.Node] = c.name
		reply(w, 200, f.view(c))
	})
	mux.HandleFunc("POST /v1/nodes/{node}/cluster/expected", func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			Votes int `json:"votes"`
		}
		json.NewDecoder(r.Body).Decode(&b)
		f.mu.Lock()
		defer f.mu.Unlock()
		c, ok := f.clusters[f.member[r.PathValue("node")]]
		if !ok {
			fail(w, 404, "Error: Corosync config '/etc/pve/corosync.conf' does not exist - is this node part of a cluster?")
			return
		}
		c.expected = b.Votes
		reply(w, 200, f.view(c))
	})
	return mux
}
