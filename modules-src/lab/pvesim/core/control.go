package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// ControlHandler serves the lab's internal control API (plain HTTP/JSON,
// meant for a Unix socket; not part of the PVE API). Errors are non-2xx with
// {"error": "<message>"}. See the package documentation for the routes.
func (s *Sim) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/requests", s.ctlListRequests)
	mux.HandleFunc("DELETE /v1/requests", s.ctlResetRequests)
	mux.HandleFunc("GET /v1/faults", s.ctlListFaults)
	mux.HandleFunc("POST /v1/faults", s.ctlAddFault)
	mux.HandleFunc("DELETE /v1/faults", s.ctlClearFaults)
	mux.HandleFunc("DELETE /v1/faults/{id}", s.ctlRemoveFault)
	mux.HandleFunc("GET /v1/nodes", s.ctlListNodes)
	mux.HandleFunc("GET /v1/nodes/{node}", s.ctlGetNode)
	mux.HandleFunc("POST /v1/nodes/{node}/online", s.ctlSetOnline)
	mux.HandleFunc("GET /v1/nodes/{node}/cluster", s.ctlGetCluster)
	mux.HandleFunc("POST /v1/clusters", s.ctlCreateCluster)
	mux.HandleFunc("POST /v1/nodes/{member}/cluster/nodes", s.ctlAddNode)
	mux.HandleFunc("POST /v1/nodes/{node}/cluster/finish-join", s.ctlFinishJoin)
	mux.HandleFunc("POST /v1/nodes/{node}/cluster/expected", s.ctlSetExpected)
	mux.HandleFunc("POST /v1/access/users", s.ctlAddUser)
	mux.HandleFunc("POST /v1/access/tokens", s.ctlAddToken)
	mux.HandleFunc("POST /v1/access/acl", s.ctlGrant)
	mux.HandleFunc("GET /v1/nodes/{node}/pmxcfs/{path...}", s.ctlReadPmxcfs)
	mux.HandleFunc("PUT /v1/nodes/{node}/pmxcfs/{path...}", s.ctlWritePmxcfs)
	mux.HandleFunc("DELETE /v1/nodes/{node}/pmxcfs/{path...}", s.ctlDeletePmxcfs)
	mux.HandleFunc("POST /v1/nodes/{node}/guests", s.ctlAddGuest)
	mux.HandleFunc("POST /v1/remote-stores", s.ctlAddRemoteStore)
	s.handleControls(mux)
	return mux
}

// ctlListRequests serves GET /v1/requests.
func (s *Sim) ctlListRequests(w http.ResponseWriter, r *http.Request) {
	list := s.Requests()
	node, onlyMut := r.URL.Query().Get("node"), r.URL.Query().Get("mutating") == "1"
	out := []Request{}
	for _, e := range list {
		if node != "" && e.Node != node || onlyMut && !e.Mutating() {
			continue
		}
		out = append(out, e)
	}
	ctlJSON(w, 200, out)
}

// ctlResetRequests serves DELETE /v1/requests.
func (s *Sim) ctlResetRequests(w http.ResponseWriter, r *http.Request) {
	s.ResetRequests()
	ctlJSON(w, 200, map[string]any{})
}

// ctlListFaults serves GET /v1/faults.
func (s *Sim) ctlListFaults(w http.ResponseWriter, r *http.Request) {
	ctlJSON(w, 200, s.faults.List())
}

// ctlAddFault serves POST /v1/faults.
func (s *Sim) ctlAddFault(w http.ResponseWriter, r *http.Request) {
	var f struct {
		Fault
		DelayMS int64 `json:"delay_ms"`
	}
	if !ControlDecode(w, r, &f) {
		return
	}
	if f.DelayMS > 0 {
		f.Delay = time.Duration(f.DelayMS) * time.Millisecond
	}
	id, err := s.faults.Add(f.Fault)
	if err != nil {
		ctlError(w, 400, err)
		return
	}
	ctlJSON(w, 200, map[string]any{"id": id})
}

// ctlClearFaults serves DELETE /v1/faults.
func (s *Sim) ctlClearFaults(w http.ResponseWriter, r *http.Request) {
	s.faults.Clear()
	ctlJSON(w, 200, map[string]any{})
}

// ctlRemoveFault serves DELETE /v1/faults/{id}.
func (s *Sim) ctlRemoveFault(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil {
		ctlError(w, 400, fmt.Errorf("fault id must be a number: %w", err))
		return
	}
	s.faults.Remove(id)
	ctlJSON(w, 200, map[string]any{})
}

// ctlListNodes serves GET /v1/nodes.
func (s *Sim) ctlListNodes(w http.ResponseWriter, r *http.Request) {
	out := []map[string]any{}
	for _, name := range s.NodeNames() {
		n, _ := s.Node(name)
		out = append(out, nodeJSON(n))
	}
	ctlJSON(w, 200, out)
}

// ctlGetNode serves GET /v1/nodes/{node}.
func (s *Sim) ctlGetNode(w http.ResponseWriter, r *http.Request) {
	n, ok := s.Node(r.PathValue("node"))
	if !ok {
		ctlError(w, 404, fmt.Errorf("no node %q in this lab", r.PathValue("node")))
		return
	}
	ctlJSON(w, 200, nodeJSON(n))
}

// ctlSetOnline serves POST /v1/nodes/{node}/online.
func (s *Sim) ctlSetOnline(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Online bool `json:"online"`
	}
	if !ControlDecode(w, r, &body) {
		return
	}
	if err := s.SetOnline(r.PathValue("node"), body.Online); err != nil {
		ctlError(w, 404, err)
		return
	}
	n, _ := s.Node(r.PathValue("node"))
	ctlJSON(w, 200, nodeJSON(n))
}

// ctlGetCluster serves GET /v1/nodes/{node}/cluster.
func (s *Sim) ctlGetCluster(w http.ResponseWriter, r *http.Request) {
	info, ok := s.Cluster(r.PathValue("node"))
	if !ok {
		ctlError(w, 404, errors.New("Error: Corosync config '/etc/pve/corosync.conf' does not exist - is this node part of a cluster?"))
		return
	}
	ctlJSON(w, 200, info)
}

// ctlCreateCluster serves POST /v1/clusters.
func (s *Sim) ctlCreateCluster(w http.ResponseWriter, r *http.Request) {
	var body struct{ Node, Name, Link0 string }
	if !ControlDecode(w, r, &body) {
		return
	}
	info, err := s.CreateCluster(body.Node, body.Name, body.Link0)
	ControlResult(w, info, err)
}

// ctlAddNode serves POST /v1/nodes/{member}/cluster/nodes.
func (s *Sim) ctlAddNode(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Node  string `json:"node"`
		Link0 string `json:"link0"`
		Force bool   `json:"force"`
		// Entry only: the member's half of the join (pvecm addnode); the
		// joiner then calls finish-join (join.go).
		Entry bool `json:"entry"`
	}
	if !ControlDecode(w, r, &body) {
		return
	}
	add := s.AddNode
	if body.Entry {
		add = s.AddNodeEntry
	}
	info, err := add(r.PathValue("member"), body.Node, body.Link0, body.Force)
	ControlResult(w, info, err)
}

// ctlFinishJoin serves POST /v1/nodes/{node}/cluster/finish-join: the
// joiner's half; the answer holds finish_join's output lines, and its
// error when it failed.
func (s *Sim) ctlFinishJoin(w http.ResponseWriter, r *http.Request) {
	var out []string
	_, err := s.FinishJoin(r.PathValue("node"), func(f string, a ...any) { out = append(out, fmt.Sprintf(f, a...)) })
	res := map[string]any{"output": out}
	if err != nil {
		res["error"] = err.Error()
	}
	ControlResult(w, res, nil)
}

// ctlSetExpected serves POST /v1/nodes/{node}/cluster/expected.
func (s *Sim) ctlSetExpected(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Votes int `json:"votes"`
	}
	if !ControlDecode(w, r, &body) {
		return
	}
	info, err := s.SetExpectedVotes(r.PathValue("node"), body.Votes)
	ControlResult(w, info, err)
}

// ctlAddUser serves POST /v1/access/users.
func (s *Sim) ctlAddUser(w http.ResponseWriter, r *http.Request) {
	var body struct{ Node, User, Password string }
	if !ControlDecode(w, r, &body) {
		return
	}
	ControlResult(w, map[string]any{}, s.AddUser(body.Node, body.User, body.Password))
}

// ctlAddRemoteStore serves POST /v1/remote-stores.
func (s *Sim) ctlAddRemoteStore(w http.ResponseWriter, r *http.Request) {
	var body RemoteStore
	if !ControlDecode(w, r, &body) {
		return
	}
	ControlResult(w, map[string]any{}, s.AddRemoteStore(body))
}

// ctlAddToken serves POST /v1/access/tokens.
func (s *Sim) ctlAddToken(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Node    string `json:"node"`
		User    string `json:"user"`
		Name    string `json:"name"`
		Privsep bool   `json:"privsep"`
	}
	if !ControlDecode(w, r, &body) {
		return
	}
	id, secret, err := s.AddToken(body.Node, TokenSpec{User: body.User, Name: body.Name, Privsep: body.Privsep})
	// Like `pveum user token add`, the secret is shown once, to the caller.
	ControlResult(w, map[string]string{"full-tokenid": id, "value": secret}, err)
}

// ctlGrant serves POST /v1/access/acl.
func (s *Sim) ctlGrant(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Node      string `json:"node"`
		Path      string `json:"path"`
		UGID      string `json:"ugid"`
		Role      string `json:"role"`
		Propagate bool   `json:"propagate"`
	}
	if !ControlDecode(w, r, &body) {
		return
	}
	ControlResult(w, map[string]any{}, s.Grant(body.Node, body.Path, body.UGID, body.Role, body.Propagate))
}

// ctlReadPmxcfs serves GET /v1/nodes/{node}/pmxcfs/{path...}.
func (s *Sim) ctlReadPmxcfs(w http.ResponseWriter, r *http.Request) {
	content, ok, err := s.ReadPmxcfs(r.PathValue("node"), r.PathValue("path"))
	switch {
	case err != nil:
		ControlResult(w, nil, err)
	case !ok:
		ctlError(w, 404, fmt.Errorf("/etc/pve/%s: No such file or directory", r.PathValue("path")))
	default:
		ctlJSON(w, 200, map[string]string{"content": content})
	}
}

// ctlWritePmxcfs serves PUT /v1/nodes/{node}/pmxcfs/{path...}.
func (s *Sim) ctlWritePmxcfs(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Content string `json:"content"`
	}
	if !ControlDecode(w, r, &body) {
		return
	}
	ControlResult(w, map[string]any{}, s.WritePmxcfs(r.PathValue("node"), r.PathValue("path"), body.Content, false))
}

// ctlDeletePmxcfs serves DELETE /v1/nodes/{node}/pmxcfs/{path...}.
func (s *Sim) ctlDeletePmxcfs(w http.ResponseWriter, r *http.Request) {
	ControlResult(w, map[string]any{}, s.WritePmxcfs(r.PathValue("node"), r.PathValue("path"), "", true))
}

func nodeJSON(n NodeInfo) map[string]any {
	return map[string]any{"name": n.Name, "addr": n.Addr, "url": n.URL, "fingerprint": n.Fingerprint,
		"online": n.Online, "serving": n.Serving, "cluster": n.Cluster}
}

// ControlResult answers a control API call: v as JSON, or the error with
// its status (BadRequestError 400, ConflictError 409, NotFoundError 404,
// anything else 500) as {"error": "<message>"}.
func ControlResult(w http.ResponseWriter, v any, err error) {
	var conflict *ConflictError
	var notFound *NotFoundError
	var bad *BadRequestError
	switch {
	case err == nil:
		ctlJSON(w, 200, v)
	case errors.As(err, &bad):
		ctlError(w, 400, err)
	case errors.As(err, &conflict):
		ctlError(w, 409, err)
	case errors.As(err, &notFound):
		ctlError(w, 404, err)
	default:
		ctlError(w, 500, err)
	}
}

// ControlDecode reads a control API call's JSON body into v; on a bad
// body it answers 400 and returns false.
func ControlDecode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		ctlError(w, 400, fmt.Errorf("control API wants a JSON body: %w", err))
		return false
	}
	return true
}

func ctlJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func ctlError(w http.ResponseWriter, status int, err error) {
	ctlJSON(w, status, map[string]string{"error": err.Error()})
}
