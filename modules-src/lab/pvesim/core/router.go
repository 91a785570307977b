package core

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
)

// What a backend registers into, before Start (pvesim.New wires them):
// its PVE API endpoints (Handle), its routes of the lab's control API
// (HandleControl) and its background loops, the daemons a node runs
// (OnStart). core never imports a backend; a backend's state lives in
// State (persisted) or in what these closures hold.

// Handler is one endpoint's implementation. It runs under the state lock
// (Sim's Mu), after the request has been authenticated, validated against
// the schema, proxied to its node and permission-checked.
type Handler func(rc *Req) (any, error)

// Handle adds a backend's endpoints to the router, keyed "METHOD
// /schema/path" as the schema names them. Backends register before Start
// (pvesim.New wires them); two handlers for one endpoint are a wiring bug.
// Paths the schema knows that no backend handles answer 501 with a message
// that says so.
func (s *Sim) Handle(routes map[string]Handler) {
	for k, h := range routes {
		if _, dup := s.routes[k]; dup {
			panic(fmt.Sprintf("pvesim: %s is handled twice", k))
		}
		s.routes[k] = h
	}
}

// HandleControl adds a route to the lab's control API (ControlHandler), a
// net/http pattern "METHOD /v1/...": what the lab offers outside PVE's
// API, its own (pvesim/controlapi) or a backend's, such as `pvesr run`.
// The handler decodes and answers with ControlDecode and ControlResult.
// Two handlers for one pattern are a wiring bug.
func (s *Sim) HandleControl(pattern string, h http.HandlerFunc) {
	if _, dup := s.controls[pattern]; dup {
		panic(fmt.Sprintf("pvesim: control route %s is handled twice", pattern))
	}
	s.controls[pattern] = h
}

// handleControls adds the backends' control routes to mux, in a fixed
// order.
func (s *Sim) handleControls(mux *http.ServeMux) {
	for _, p := range slices.Sorted(maps.Keys(s.controls)) {
		mux.HandleFunc(p, s.controls[p])
	}
}

// OnStart adds a backend's background loop: a daemon every node runs, such
// as pvescheduler (replication) or HA's CRM. Start runs each loop once, in
// its own goroutine counted in Workers, so Close waits for it; the loop
// returns when Sleep reports the simulator closing.
func (s *Sim) OnStart(loop func()) { s.loops = append(s.loops, loop) }

// OnNodePower adds a model's or backend's reaction to a node powering off
// (online false) or on (SetOnline, the lab's power actions), such as
// pve-guests' onboot start (pvesim/guests) or HA's fencing and failback.
// The reactions run under Mu, in the order they were added, after core
// has stopped the node or, on power-on, started it.
func (s *Sim) OnNodePower(f func(node string, online bool)) {
	s.nodePower = append(s.nodePower, f)
}

// OnHARequest adds a backend's reaction to a request the HA model records
// (pvesim/guests: a guest's hastart/hastop task, hamodel.go): HA's CRM acting on
// the ConfigDB dbID at its next round. f runs under Mu.
func (s *Sim) OnHARequest(f func(dbID string)) { s.haRequest = append(s.haRequest, f) }

// HARequestedLocked runs the OnHARequest reactions: the HA model
// (pvesim/guests) calls it once a request is in resources.cfg.
func (s *Sim) HARequestedLocked(dbID string) {
	for _, f := range s.haRequest {
		f(dbID)
	}
}

// startLoops runs the backends' loops (Start).
func (s *Sim) startLoops() {
	for _, loop := range s.loops {
		s.Workers.Add(1)
		go func() {
			defer s.Workers.Done()
			loop()
		}()
	}
}

// handleBuiltins registers core's own endpoints: login and the tasks,
// which the request pipeline itself serves.
func (s *Sim) handleBuiltins() {
	for _, routes := range []map[string]Handler{s.authRoutes(), s.taskRoutes()} {
		s.Handle(routes)
	}
}
