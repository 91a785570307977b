package pveapi

import (
	"context"
	"net/url"
)

// Getter is the read half of the client: what the typed areas
// (pveapi/qemu, resources, replication, ha) and the task-list query need,
// so they can be handed a *Client, a read-only check-mode client or a test
// double alike.
type Getter interface {
	Get(ctx context.Context, path string, params url.Values, out any) error
}

var _ Getter = (*Client)(nil)
