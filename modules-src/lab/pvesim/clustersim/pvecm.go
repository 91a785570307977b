package clustersim

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/cluster"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/corosync"
)

// Pvecm is the lab's stand-in for pvecm's create, add, expected and status
// on a node (pve-cluster PVE/CLI/pvecm.pm, Cluster/Setup.pm), with no task:
// the Go API pvesim.Sim exposes and the control API routes the pvecm
// stand-in (tools/pvecm) calls. pvecm add's halves (addnode, finish_join) are
// join.go's, which the join endpoints share.
type Pvecm struct{ s *core.Sim }

// NewPvecm is s's pvecm stand-in.
func NewPvecm(s *core.Sim) Pvecm { return Pvecm{s} }

// registerPvecm adds the pvecm stand-in's control API routes to s.
func registerPvecm(s *core.Sim) {
	p := NewPvecm(s)
	s.HandleControl("GET /v1/nodes/{node}/cluster", p.ctlGetCluster)
	s.HandleControl("POST /v1/clusters", p.ctlCreateCluster)
	s.HandleControl("POST /v1/nodes/{node}/cluster/expected", p.ctlSetExpected)
	s.HandleControl("POST /v1/nodes/{member}/cluster/nodes", p.ctlAddNode)
	s.HandleControl("POST /v1/nodes/{node}/cluster/finish-join", p.ctlFinishJoin)
}

// Cluster returns the cluster node belongs to, or false when standalone.
func (p Pvecm) Cluster(node string) (core.ClusterInfo, bool) {
	p.s.Mu.Lock()
	defer p.s.Mu.Unlock()
	return p.s.ClusterLocked(node)
}

// CreateCluster is `pvecm create` on node (no task; the CLI prints its own
// output): the cluster is quorate at once.
func (p Pvecm) CreateCluster(node, name, link0 string) (core.ClusterInfo, error) {
	p.s.Mu.Lock()
	defer p.s.Mu.Unlock()
	n := p.s.State.Nodes[node]
	if n == nil {
		return core.ClusterInfo{}, &core.NotFoundError{Msg: fmt.Sprintf("no node %q in this lab", node)}
	}
	db := p.s.DBOf(node)
	if db.Corosync != nil {
		return core.ClusterInfo{}, &core.ConflictError{Msg: "cluster config '/etc/pve/corosync.conf' already exists"}
	}
	addr := n.Addr
	if link0 != "" {
		addr = cluster.LinkAddr(link0)
	}
	db.Corosync = &corosync.Conf{ClusterName: name, ConfigVersion: 1, Nodes: []*corosync.Node{{
		Name: node, NodeID: 1, Votes: 1, Links: map[string]string{"ring0_addr": addr}}}}
	if p.s.Cfg.Version >= 9 {
		db.Corosync.TokenCoefficient = 125
	}
	n.CorosyncUpAt = time.Now().UnixMilli()
	db.Serial++
	p.s.SaveLocked()
	info, _ := p.s.ClusterLocked(node)
	return info, nil
}

// SetExpectedVotes is `pvecm expected N` (0 restores the sum of votes).
func (p Pvecm) SetExpectedVotes(node string, votes int) (core.ClusterInfo, error) {
	p.s.Mu.Lock()
	defer p.s.Mu.Unlock()
	db := p.s.DBOf(node)
	if db == nil || db.Corosync == nil {
		return core.ClusterInfo{}, &core.NotFoundError{Msg: "Corosync config '/etc/pve/corosync.conf' does not exist - is this node part of a cluster?"}
	}
	db.Corosync.ExpectedVotes = votes
	p.s.SaveLocked()
	info, _ := p.s.ClusterLocked(node)
	return info, nil
}

// ctlGetCluster serves GET /v1/nodes/{node}/cluster.
func (p Pvecm) ctlGetCluster(w http.ResponseWriter, r *http.Request) {
	info, ok := p.Cluster(r.PathValue("node"))
	if !ok {
		//lint:ignore ST1005 pvecm status's own message
		core.ControlError(w, 404, errors.New("Error: Corosync config '/etc/pve/corosync.conf' does not exist - is this node part of a cluster?"))
		return
	}
	core.ControlJSON(w, 200, info)
}

// ctlCreateCluster serves POST /v1/clusters.
func (p Pvecm) ctlCreateCluster(w http.ResponseWriter, r *http.Request) {
	var body struct{ Node, Name, Link0 string }
	if !core.ControlDecode(w, r, &body) {
		return
	}
	info, err := p.CreateCluster(body.Node, body.Name, body.Link0)
	core.ControlResult(w, info, err)
}

// ctlSetExpected serves POST /v1/nodes/{node}/cluster/expected.
func (p Pvecm) ctlSetExpected(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Votes int `json:"votes"`
	}
	if !core.ControlDecode(w, r, &body) {
		return
	}
	info, err := p.SetExpectedVotes(r.PathValue("node"), body.Votes)
	core.ControlResult(w, info, err)
}

// ctlAddNode serves POST /v1/nodes/{member}/cluster/nodes.
func (p Pvecm) ctlAddNode(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Node  string `json:"node"`
		Link0 string `json:"link0"`
		Force bool   `json:"force"`
		// Entry only: the member's half of the join (pvecm addnode); the
		// joiner then calls finish-join (join.go).
		Entry bool `json:"entry"`
	}
	if !core.ControlDecode(w, r, &body) {
		return
	}
	add := p.AddNode
	if body.Entry {
		add = p.AddNodeEntry
	}
	info, err := add(r.PathValue("member"), body.Node, body.Link0, body.Force)
	core.ControlResult(w, info, err)
}

// ctlFinishJoin serves POST /v1/nodes/{node}/cluster/finish-join: the
// joiner's half; the answer holds finish_join's output lines, and its
// error when it failed.
func (p Pvecm) ctlFinishJoin(w http.ResponseWriter, r *http.Request) {
	var out []string
	_, err := p.FinishJoin(r.PathValue("node"), func(f string, a ...any) { out = append(out, fmt.Sprintf(f, a...)) })
	res := map[string]any{"output": out}
	if err != nil {
		res["error"] = err.Error()
	}
	core.ControlResult(w, res, nil)
}
