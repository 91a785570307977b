package pveclone

import (
	"context"
	"fmt"
	"net/url"
	"regexp"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
)

// poolNameRe is pve-access-control's verify_poolname (AccessControl.pm):
// letters, digits, . - _, at most three levels separated by /.
var poolNameRe = regexp.MustCompile(`^[A-Za-z0-9.\-_]+(?:/[A-Za-z0-9.\-_]+){0,2}$`)

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
	if !poolNameRe.MatchString(pool) {
		return nil, fmt.Errorf("pool: pool name '%s' contains invalid characters (PVE's pve-poolid: letters, digits, . - _, up to three levels)", pool)
	}
	ok, err := v.poolFound(ctx, pool)
	if err != nil {
		return nil, err
	}
	switch {
	case ok:
		return nil, nil
	case !v.p.PoolCreate:
		return nil, fmt.Errorf("pool: pool '%s' does not exist; PVE only takes a pool when the VM is created (K6): create the pool first, or set pool_create", pool)
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
	var pools []struct {
		PoolID string `json:"poolid"`
	}
	if err := v.c.Get(ctx, "/pools", nil, &pools); err != nil {
		return false, fmt.Errorf("pool: cannot list the pools: %w", err)
	}
	for _, p := range pools {
		if p.PoolID == pool {
			return true, nil
		}
	}
	return false, nil
}
