package pvestorage

import (
	"context"
	"maps"
	"time"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
)

// nodeStatus is GET /nodes/{node}/storage/{storage}/status, reduced.
type nodeStatus struct {
	Active  bool   `json:"active"`
	Enabled bool   `json:"enabled"`
	Shared  bool   `json:"shared"`
	Total   uint64 `json:"total"`
	Used    uint64 `json:"used"`
	Avail   uint64 `json:"avail"`
	Error   string `json:"error,omitempty"`
}

// report sets the result: the final config (read back, or predicted in
// check mode), whether it existed, and per-node status on request.
func (s *storage) report(ok bool) {
	cfg := map[string]any{}
	if s.final != nil {
		cfg = maps.Clone(s.final)
		delete(cfg, "digest")
		for k, v := range cfg {
			if !isMarker(k, v) {
				delete(cfg, k)
			}
		}
	}
	s.r.Set("storage", cfg)
	s.r.Set("existed", s.existed)
	pveansible.ReportVersion(s.r, s.version)
	if !s.p.NodeStatus || !ok || s.final == nil || s.r.CheckMode() && !s.existed {
		return
	}
	ctx, cancel := context.WithTimeout(s.r.Context(), 30*time.Second)
	defer cancel()
	nodes, err := s.nodesOf(ctx, s.final)
	if err != nil {
		s.r.Warn("node_status: cannot list the nodes: " + err.Error())
		return
	}
	out := map[string]nodeStatus{}
	for _, n := range nodes {
		var st nodeStatus
		if err := s.c.Get(ctx, pveapi.Path("/nodes/%s/storage/%s/status", n.Node, s.p.Storage), nil, &st); err != nil {
			st = nodeStatus{Error: err.Error()}
		}
		out[n.Node] = st
	}
	s.r.Set("node_status", out)
}
