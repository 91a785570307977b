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
// (Sim's mu), after the request has been authenticated, validated against
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

// HandleControl adds a backend's route to the lab's control API
// (ControlHandler), a net/http pattern "METHOD /v1/...": what the lab
// offers outside PVE's API for that backend, such as `pvesr run`. The
// handler decodes and answers as core's own do (ControlDecode,
// ControlResult). Two handlers for one pattern are a wiring bug.
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

// handleBuiltins registers the endpoints still simulated inside core, one
// table per backend; each moves out with its backend's package.
func (s *Sim) handleBuiltins() {
	for _, routes := range []map[string]Handler{
		s.authRoutes(), s.nodeRoutes(), s.taskRoutes(),
		s.clusterRoutes(), s.uploadRoutes(),
		s.haRoutes(),
	} {
		s.Handle(routes)
	}
}
