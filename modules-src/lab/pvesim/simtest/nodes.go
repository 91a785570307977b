package simtest

import (
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
)

// MustNode is the simulator's view of node, failing the test when the lab
// has no such node.
func MustNode(t *testing.T, s Sim, name string) core.NodeInfo {
	t.Helper()
	n, ok := s.Node(name)
	if !ok {
		t.Fatalf("no node %s", name)
	}
	return n
}
