package pvezfs

// state=absent: the pool destroyed, with force_destroy only.

import (
	"context"
	"fmt"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/host"
)

// planDestroy is state=absent: the pool destroyed, then its scrub timers
// disabled (left enabled, they would fire every month against a pool that
// no longer exists). Timers left by an earlier destroy are disabled too.
func (m *pool) planDestroy(ctx context.Context, _ *ansible.World) ([]ansible.Change, error) {
	exists, err := m.zfs().Exists(ctx, m.p.Name)
	if err != nil {
		return nil, err
	}
	timers, err := m.scrubChanges(ctx, "")
	if err != nil {
		return nil, err
	}
	if !exists {
		return timers, nil
	}
	m.existed = true
	if !m.p.ForceDestroy {
		return nil, fmt.Errorf("force_destroy: pool %s exists and state=absent would destroy it with all its data; set force_destroy: true to really do that", m.p.Name)
	}
	return append([]ansible.Change{{
		ID:      "pool:destroy",
		Summary: "destroy pool " + m.p.Name + " and all its data",
		Apply: func(ctx context.Context) error {
			_, err := m.env.Runner.Run(ctx, host.Command{Name: "zpool", Args: []string{"destroy", m.p.Name}})
			return err
		},
		Verify: func(ctx context.Context) error {
			ok, err := m.zfs().Exists(ctx, m.p.Name)
			if err == nil && ok {
				err = fmt.Errorf("pool %s is still listed", m.p.Name)
			}
			return err
		},
	}}, timers...), nil
}
