package pveapi

import (
	"context"
	"fmt"
	"net/url"
	"strings"
)

// Privileges returns the caller's effective privileges on path, as PVE
// computes them for this very user or token (GET /access/permissions with
// no userid: a privilege-separated token sees its own, reduced set).
func (c *Client) Privileges(ctx context.Context, path string) (map[string]bool, error) {
	var perms map[string]map[string]any
	if err := c.Get(ctx, "/access/permissions", url.Values{"path": {path}}, &perms); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, privs := range perms {
		for p, v := range privs {
			if String(v) != "0" {
				out[p] = true
			}
		}
	}
	return out, nil
}

// RequireAny fails with a permission error unless the caller holds at least
// one of privs on path. Use it where PVE answers an empty list instead of a
// 403 (K19): without the right, "empty" means "not allowed to see", never
// "absent".
func (c *Client) RequireAny(ctx context.Context, path string, privs ...string) error {
	if c.local {
		return nil // pvesh runs as root@pam
	}
	have, err := c.Privileges(ctx, path)
	if err != nil {
		return err
	}
	for _, p := range privs {
		if have[p] {
			return nil
		}
	}
	e := newError("GET", "/access/permissions", 403,
		fmt.Sprintf("the API user lacks %s on %s, so PVE hides what is there instead of refusing", strings.Join(privs, " or "), path), nil, nil)
	return e
}
