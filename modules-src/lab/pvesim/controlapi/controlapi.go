// Package controlapi is the lab's control API (core's ControlHandler:
// plain HTTP/JSON on the lab's Unix socket, no part of PVE's API): the
// request log, faults, the nodes' power, /etc/pve files and the remote
// stores. Its routes are those of
// core's Go API (core's api.go) over HTTP; it follows no PVE source, but
// its errors carry the messages real PVE prints. pvesim.New registers it,
// as a backend, through HandleControl; a backend's own routes sit with
// that backend, with the Go API they serve (replsim's `pvesr run`,
// accesssim's pveum stand-in: users, tokens, ACLs; clustersim's pvecm
// stand-in: create, add and its halves, expected, status; guests' fixture).
// pvesim's package doc lists the routes.
package controlapi

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
)

// ctl serves the control API's routes on its Sim.
type ctl struct{ *core.Sim }

// Register adds the control API's routes to s.
func Register(s *core.Sim) {
	c := ctl{s}
	s.HandleControl("GET /v1/requests", c.ctlListRequests)
	s.HandleControl("DELETE /v1/requests", c.ctlResetRequests)
	s.HandleControl("GET /v1/faults", c.ctlListFaults)
	s.HandleControl("POST /v1/faults", c.ctlAddFault)
	s.HandleControl("DELETE /v1/faults", c.ctlClearFaults)
	s.HandleControl("DELETE /v1/faults/{id}", c.ctlRemoveFault)
	s.HandleControl("GET /v1/nodes", c.ctlListNodes)
	s.HandleControl("GET /v1/nodes/{node}", c.ctlGetNode)
	s.HandleControl("POST /v1/nodes/{node}/online", c.ctlSetOnline)
	s.HandleControl("GET /v1/nodes/{node}/pmxcfs/{path...}", c.ctlReadPmxcfs)
	s.HandleControl("PUT /v1/nodes/{node}/pmxcfs/{path...}", c.ctlWritePmxcfs)
	s.HandleControl("DELETE /v1/nodes/{node}/pmxcfs/{path...}", c.ctlDeletePmxcfs)
	s.HandleControl("POST /v1/remote-stores", c.ctlAddRemoteStore)
}

// ctlListRequests serves GET /v1/requests.
func (c ctl) ctlListRequests(w http.ResponseWriter, r *http.Request) {
	list := c.Requests()
	node, onlyMut := r.URL.Query().Get("node"), r.URL.Query().Get("mutating") == "1"
	out := []core.Request{}
	for _, e := range list {
		if node != "" && e.Node != node || onlyMut && !e.Mutating() {
			continue
		}
		out = append(out, e)
	}
	core.ControlJSON(w, 200, out)
}

// ctlResetRequests serves DELETE /v1/requests.
func (c ctl) ctlResetRequests(w http.ResponseWriter, r *http.Request) {
	c.ResetRequests()
	core.ControlJSON(w, 200, map[string]any{})
}

// ctlListFaults serves GET /v1/faults.
func (c ctl) ctlListFaults(w http.ResponseWriter, r *http.Request) {
	core.ControlJSON(w, 200, c.Faults().List())
}

// ctlAddFault serves POST /v1/faults.
func (c ctl) ctlAddFault(w http.ResponseWriter, r *http.Request) {
	var f struct {
		core.Fault
		DelayMS int64 `json:"delay_ms"`
	}
	if !core.ControlDecode(w, r, &f) {
		return
	}
	if f.DelayMS > 0 {
		f.Delay = time.Duration(f.DelayMS) * time.Millisecond
	}
	id, err := c.Faults().Add(f.Fault)
	if err != nil {
		core.ControlError(w, 400, err)
		return
	}
	core.ControlJSON(w, 200, map[string]any{"id": id})
}

// ctlClearFaults serves DELETE /v1/faults.
func (c ctl) ctlClearFaults(w http.ResponseWriter, r *http.Request) {
	c.Faults().Clear()
	core.ControlJSON(w, 200, map[string]any{})
}

// ctlRemoveFault serves DELETE /v1/faults/{id}.
func (c ctl) ctlRemoveFault(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil {
		core.ControlError(w, 400, fmt.Errorf("fault id must be a number: %w", err))
		return
	}
	c.Faults().Remove(id)
	core.ControlJSON(w, 200, map[string]any{})
}

// ctlListNodes serves GET /v1/nodes.
func (c ctl) ctlListNodes(w http.ResponseWriter, r *http.Request) {
	out := []map[string]any{}
	for _, name := range c.NodeNames() {
		n, _ := c.Node(name)
		out = append(out, nodeJSON(n))
	}
	core.ControlJSON(w, 200, out)
}

// ctlGetNode serves GET /v1/nodes/{node}.
func (c ctl) ctlGetNode(w http.ResponseWriter, r *http.Request) {
	n, ok := c.Node(r.PathValue("node"))
	if !ok {
		core.ControlError(w, 404, fmt.Errorf("no node %q in this lab", r.PathValue("node")))
		return
	}
	core.ControlJSON(w, 200, nodeJSON(n))
}

// ctlSetOnline serves POST /v1/nodes/{node}/online.
func (c ctl) ctlSetOnline(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Online bool `json:"online"`
	}
	if !core.ControlDecode(w, r, &body) {
		return
	}
	if err := c.SetOnline(r.PathValue("node"), body.Online); err != nil {
		core.ControlError(w, 404, err)
		return
	}
	n, _ := c.Node(r.PathValue("node"))
	core.ControlJSON(w, 200, nodeJSON(n))
}

// ctlAddRemoteStore serves POST /v1/remote-stores.
func (c ctl) ctlAddRemoteStore(w http.ResponseWriter, r *http.Request) {
	var body core.RemoteStore
	if !core.ControlDecode(w, r, &body) {
		return
	}
	core.ControlResult(w, map[string]any{}, c.AddRemoteStore(body))
}

// ctlReadPmxcfs serves GET /v1/nodes/{node}/pmxcfs/{path...}.
func (c ctl) ctlReadPmxcfs(w http.ResponseWriter, r *http.Request) {
	content, ok, err := c.ReadPmxcfs(r.PathValue("node"), r.PathValue("path"))
	switch {
	case err != nil:
		core.ControlResult(w, nil, err)
	case !ok:
		core.ControlError(w, 404, fmt.Errorf("/etc/pve/%s: No such file or directory", r.PathValue("path")))
	default:
		core.ControlJSON(w, 200, map[string]string{"content": content})
	}
}

// ctlWritePmxcfs serves PUT /v1/nodes/{node}/pmxcfs/{path...}.
func (c ctl) ctlWritePmxcfs(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Content string `json:"content"`
	}
	if !core.ControlDecode(w, r, &body) {
		return
	}
	core.ControlResult(w, map[string]any{}, c.WritePmxcfs(r.PathValue("node"), r.PathValue("path"), body.Content, false))
}

// ctlDeletePmxcfs serves DELETE /v1/nodes/{node}/pmxcfs/{path...}.
func (c ctl) ctlDeletePmxcfs(w http.ResponseWriter, r *http.Request) {
	core.ControlResult(w, map[string]any{}, c.WritePmxcfs(r.PathValue("node"), r.PathValue("path"), "", true))
}

func nodeJSON(n core.NodeInfo) map[string]any {
	return map[string]any{"name": n.Name, "addr": n.Addr, "url": n.URL, "fingerprint": n.Fingerprint,
		"online": n.Online, "serving": n.Serving, "cluster": n.Cluster}
}
