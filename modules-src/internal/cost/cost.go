// Package cost counts what one module run costs the node it runs on and
// the API it talks to (issue 24 §3): the processes the run started, the
// API requests it sent and the connections it opened for them. The
// runtime (modules-src/ansible) puts a Counter in the Run's context; the
// layers that start processes (host.ExecRunner) and send requests
// (pveapi's transports) note each one under the context they were given.
// At -vvv the run's counts are in the result (gopve_cost), which is how
// `make bench` prints them per module: a count of what really happened,
// not an estimate.
//
// A package of its own, like internal/writes, because host and pveapi
// must not import the Ansible runtime. Modules do not import it: only the
// layers that start a process or send a request note one.
package cost

import (
	"context"
	"sync/atomic"
)

// Counter holds the counts of one run; safe for concurrent use.
type Counter struct {
	processes, requests, connections atomic.Int64
}

// Counts is a Counter read at one moment.
type Counts struct {
	Processes   int `json:"processes"`    // programs started on the node (pvesh, zpool, ssh, …)
	APIRequests int `json:"api_requests"` // HTTP requests sent to a pveproxy, pvesh calls included
	Connections int `json:"connections"`  // new HTTPS connections (a reused keep-alive one is not counted)
}

type key struct{}

// With returns ctx carrying c.
func With(ctx context.Context, c *Counter) context.Context {
	return context.WithValue(ctx, key{}, c)
}

func from(ctx context.Context) *Counter {
	c, _ := ctx.Value(key{}).(*Counter)
	return c
}

// Process notes one program started (it ran, whatever its exit code).
func Process(ctx context.Context) {
	if c := from(ctx); c != nil {
		c.processes.Add(1)
	}
}

// Request notes one API request sent.
func Request(ctx context.Context) {
	if c := from(ctx); c != nil {
		c.requests.Add(1)
	}
}

// Connection notes one new connection opened for a request.
func Connection(ctx context.Context) {
	if c := from(ctx); c != nil {
		c.connections.Add(1)
	}
}

// Read returns the counts so far (zero for a nil counter).
func (c *Counter) Read() Counts {
	if c == nil {
		return Counts{}
	}
	return Counts{Processes: int(c.processes.Load()), APIRequests: int(c.requests.Load()),
		Connections: int(c.connections.Load())}
}
