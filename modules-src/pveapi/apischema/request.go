package apischema

import (
	"fmt"
	"maps"
	"net/url"
	"strings"
)

// Request is one API call as a value: built by a typed area, checked by
// Validate, sent by the caller (the dispatch-once layer for writes). Path
// is the real, escaped path; Schema the schema's path with its {params},
// whose values are in PathParams.
type Request struct {
	Method     string
	Path       string
	Schema     string
	PathParams map[string]string
	Params     url.Values
	// Task is set for a call PVE answers with a task id: how to find that
	// task in the node's task list when the answer is lost.
	Task *TaskHint
	// Needs names the privileges PVE checks for the call, for a 403 that
	// names none (pveapi.Write.Needs).
	Needs string
}

// TaskHint names the worker a call starts (fork_worker's type and id in
// qemu-server), to settle a lost answer with pveapi.ListTasks on Node
// (TaskQuery{TypeFilter: one of Types, VMID: ID, Since: the send time})
// instead of sending the call again.
type TaskHint struct {
	Node  string   // the node the worker runs on (the path's node)
	Types []string // e.g. "qmclone"; several when PVE picks (qmstart, or hastart for an HA guest)
	ID    string   // the task's id field: the VMID the worker is started for
}

// New builds a request: schema is the schema path ("/nodes/{node}/qemu/{vmid}/config"),
// pathParams fill its {params} in order.
func New(method, schema string, params url.Values, pathParams ...string) Request {
	r := Request{Method: method, Schema: schema, PathParams: map[string]string{}, Params: params}
	if r.Params == nil {
		r.Params = url.Values{}
	}
	var b strings.Builder
	i := 0
	for _, seg := range strings.Split(strings.TrimPrefix(schema, "/"), "/") {
		b.WriteByte('/')
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") && i < len(pathParams) {
			r.PathParams[strings.Trim(seg, "{}")] = pathParams[i]
			b.WriteString(url.PathEscape(pathParams[i]))
			i++
			continue
		}
		b.WriteString(seg)
	}
	r.Path = b.String()
	return r
}

// String names the request without its parameter values (they may be
// secrets): "PUT /nodes/pve01/qemu/201/config".
func (r Request) String() string { return r.Method + " " + r.Path }

// Validate checks the request against the schema of PVE major version
// major: an *Errors naming every refused parameter, or nil.
func (r Request) Validate(major int) error {
	t, err := For(major)
	if err != nil {
		return err
	}
	m := t.Method(r.Method, r.Schema)
	if m == nil {
		return fmt.Errorf("%s %s: not in the PVE %d API", r.Method, r.Schema, major)
	}
	all := url.Values{}
	maps.Copy(all, r.Params)
	for k, v := range r.PathParams {
		all[k] = []string{v}
	}
	if errs := ValidateParams(m, all); len(errs) > 0 {
		return &Errors{Version: major, Request: r.Method + " " + r.Schema, List: errs}
	}
	return nil
}
