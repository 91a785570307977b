package pveclone

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
)

// poolReady is K6 for a VM this run creates: PVE only takes the pool at
// creation and refuses a missing one (RPCEnvironment::check_pool_exist),
// so the pool must exist before the clone or create. A missing pool fails
// the task before anything is sent, unless pool_create asks for it: then
// it is created first (POST /pools), its own change, read back.
func (v *vm) poolReady(ctx context.Context) ([]ansible.Change, error) {
	pool := v.p.Pool
	if pool == "" {
		return nil, nil
	}
	if err := pveformat.CheckFormat("pve-poolid", pool); err != nil {
		return nil, fmt.Errorf("pool: %w (letters, digits, . - _, up to three levels)", err)
	}
	pools, err := v.pools(ctx)
	if err != nil {
		return nil, err
	}
	switch {
	case pools[pool]:
		return nil, nil
	case !v.p.PoolCreate:
		// In a check run of the whole site an earlier task may create it
		// (ansible.NotYet); a real run refuses here, before anything is sent.
		return nil, v.r.NotYet(ansible.Prerequisite{Option: "pool", Kind: ansible.CreatedPool, Name: pool, Object: "pool " + pool, Predicts: "the VM created in it"},
			fmt.Errorf("pool: pool '%s' does not exist; PVE only takes a pool when the VM is created (K6): create the pool first, or set pool_create", pool))
	}
	// Pool.pm create_pool's own refusals, decided before anything is sent.
	leaf := pool
	if i := strings.LastIndex(pool, "/"); i >= 0 {
		leaf = pool[i+1:]
		if parent := pool[:i]; !pools[parent] {
			return nil, fmt.Errorf("pool: parent '%s' of pool '%s' does not exist (pool_create creates one level)", parent, pool)
		}
	}
	if c := leaf[0]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
		return nil, fmt.Errorf("pool: pool name must start with a letter ('%s')", pool)
	}
	return []ansible.Change{{
		ID:      "pool:" + pool,
		Summary: fmt.Sprintf("create pool %s (K6: the VM joins it at creation)", pool),
		Apply: func(ctx context.Context) error {
			_, err := pveansible.Dispatch(ctx, v.r, v.c, pveapi.Write{Method: "POST", Path: "/pools", Params: url.Values{"poolid": {pool}},
				What: "create pool " + pool, Creates: true,
				Settle: func(ctx context.Context) (bool, error) { return v.poolFound(ctx, pool) }})
			return err
		},
		Verify: func(ctx context.Context) error {
			ok, err := v.poolFound(ctx, pool)
			if err == nil && !ok {
				err = fmt.Errorf("pool %s is not listed after its creation", pool)
			}
			return err
		},
	}}, nil
}

// poolFound reads GET /pools. A token without Pool.Audit on the pool does
// not see it (K19): the clone would then fail on PVE's own check, naming
// the pool.
func (v *vm) poolFound(ctx context.Context, pool string) (bool, error) {
	pools, err := v.pools(ctx)
	return pools[pool], err
}

// pools is the set of pools the token sees (GET /pools).
func (v *vm) pools(ctx context.Context) (map[string]bool, error) {
	var list []struct {
		PoolID string `json:"poolid"`
	}
	if err := v.c.Get(ctx, "/pools", nil, &list); err != nil {
		return nil, fmt.Errorf("pool: cannot list the pools: %w", err)
	}
	out := map[string]bool{}
	for _, p := range list {
		out[p.PoolID] = true
	}
	return out, nil
}
