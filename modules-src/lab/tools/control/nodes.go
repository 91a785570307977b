package control

import (
	"context"
	"net/http"
)

// Nodes lists the lab's nodes as the simulator sees them.
func (c *Client) Nodes(ctx context.Context) ([]NodeInfo, error) {
	var out []NodeInfo
	if err := c.Do(ctx, http.MethodGet, "/v1/nodes", nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}
