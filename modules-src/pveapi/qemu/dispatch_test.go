package qemu_test

import (
	"context"
	"net/url"
	"time"

	"github.com/gopve/proxmox/modules-src/pveapi"
)

// dispatch sends one write the only way the client sends writes
// (Dispatch), as a module would; these tests never lose an answer, so the
// settle read is never consulted.
func dispatch(ctx context.Context, c *pveapi.Client, method, path string, params url.Values, out any) error {
	o, err := c.Dispatch(ctx, pveapi.Write{Method: method, Path: path, Params: params, What: method + " " + path,
		Settle: func(context.Context) (bool, error) { return false, nil }, SettleWithin: time.Millisecond})
	if err != nil || out == nil {
		return err
	}
	return o.Decode(out)
}
