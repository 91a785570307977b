package core

import "fmt"

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

// handleBuiltins registers the endpoints still simulated inside core, one
// table per backend; each moves out with its backend's package.
func (s *Sim) handleBuiltins() {
	for _, routes := range []map[string]Handler{
		s.authRoutes(), s.nodeRoutes(), s.taskRoutes(),
		s.clusterRoutes(), s.uploadRoutes(),
		s.qemuRoutes(), s.replicationRoutes(), s.haRoutes(),
	} {
		s.Handle(routes)
	}
}
