// Package writes counts the writes sent on behalf of one change (issue 23
// §2): the runtime (modules-src/ansible) puts a Counter in the context it
// hands a change's Apply, and the layers that write — pveapi's
// Client.Dispatch, host's file writes and node commands that are not
// read-only — note each write in it. The runtime then refuses to believe an
// Apply that claims it changed nothing (ansible.NothingChanged) after a
// write was noted: the change is reported changed, unverified.
//
// It is a tiny package of its own because pveapi and host must not import
// the Ansible runtime. Modules must not import it
// (modules.TestNodeWritesOnlyThroughHost): a module cannot note, forget or undo a
// write; only the layers that send them do.
package writes

import (
	"context"
	"sync"
)

// Counter holds the writes noted under a context that carries it. The
// runtime gives each Run one counter (in the Run's context, from which
// every stage's, Apply's and Verify's context derives) and compares it
// before and after each Apply, so a write counts for the change whose
// Apply sent it whatever context the module passed down.
type Counter struct {
	mu    sync.Mutex
	whats []string
}

type key struct{}

// With returns ctx carrying c: every write noted under it goes to c.
func With(ctx context.Context, c *Counter) context.Context {
	return context.WithValue(ctx, key{}, c)
}

// Detach returns ctx without a counter, for a transport whose caller
// already notes the write it carries (pvesh runs a write that Dispatch
// notes, and Dispatch tells PVE's refusal from a write that happened).
func Detach(ctx context.Context) context.Context {
	if ctx.Value(key{}) == nil {
		return ctx
	}
	return context.WithValue(ctx, key{}, (*Counter)(nil))
}

// Note records one write that may have changed the target (sent, and not
// refused before acting); what names it for the runtime's message. Outside
// a Run (no counter: tests of the lower layers) it does nothing.
func Note(ctx context.Context, what string) {
	c, _ := ctx.Value(key{}).(*Counter)
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.whats = append(c.whats, what)
}

// Count is how many writes were noted so far (0 for a nil counter).
func (c *Counter) Count() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.whats)
}

// Since names the writes noted after the first n.
func (c *Counter) Since(n int) []string {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n >= len(c.whats) {
		return nil
	}
	return append([]string(nil), c.whats[n:]...)
}
