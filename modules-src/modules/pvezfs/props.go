package pvezfs

// Stage 2: changeable properties and the mountpoint converge (Z5).

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/host"
	"github.com/gopve/proxmox/modules-src/host/zfs"
)

// datasetProps is a fact of the predicted world (ansible.World): the
// pool's root dataset properties as zfs would read them back. A planned
// create predicts them, so stage 2 plans against the pool as it will be.
func datasetProps(pool string) ansible.Key[map[string]zfs.Prop] {
	return ansible.Key[map[string]zfs.Prop]("pvezfs:props:" + pool)
}

// planProps is stage 2: changeable properties and the mountpoint (Z5),
// compared with what `zfs get -p` reads back (bytes for sizes), and the
// pool really mounted, not just its mountpoint property right.
func (m *pool) planProps(ctx context.Context, w *ansible.World) ([]ansible.Change, error) {
	keys := slices.Sorted(maps.Keys(m.props))
	cur, err := datasetProps(m.p.Name).Get(ctx, w, func(ctx context.Context) (map[string]zfs.Prop, error) {
		return m.zfs().Props(ctx, m.p.Name, m.propKeys())
	})
	if err != nil {
		return nil, fmt.Errorf("properties: %w", err)
	}
	var changes []ansible.Change
	for _, k := range keys {
		want := m.props[k]
		have, ok := cur[k]
		if !ok {
			return nil, fmt.Errorf("properties: zfs did not report %q for %s", k, m.p.Name)
		}
		if zfs.SameValue(k, have.Value, want) {
			continue
		}
		if zfs.CreateOnly(k) {
			return nil, fmt.Errorf("properties: %s is %s on pool %s and can only be set when a pool is created; pve_zfs never rebuilds an existing pool: set %s: %s to keep it", k, have.Value, m.p.Name, k, have.Value)
		}
		changes = append(changes, m.propChange(k, have.Value, want, cur))
	}
	if ch, err := m.planMount(cur, len(changes) > 0 && hasProp(changes, "mountpoint")); err != nil || ch != nil {
		if err != nil {
			return nil, err
		}
		changes = append(changes, *ch)
	}
	return changes, nil
}

func hasProp(changes []ansible.Change, k string) bool {
	for _, c := range changes {
		if c.ID == "prop:"+k {
			return true
		}
	}
	return false
}

func (m *pool) propChange(k, before, want string, cur map[string]zfs.Prop) ansible.Change {
	return ansible.Change{
		ID:      "prop:" + k,
		Summary: fmt.Sprintf("set %s=%s on %s (was %s)", k, want, m.p.Name, before),
		Diff:    &ansible.Diff{Before: k + "=" + before + "\n", After: k + "=" + want + "\n", BeforeHeader: m.p.Name, AfterHeader: m.p.Name},
		Apply: func(ctx context.Context) error {
			_, err := m.env.Runner.Run(ctx, host.Command{Name: "zfs", Args: []string{"set", k + "=" + want, m.p.Name}})
			return err
		},
		Verify: func(ctx context.Context) error {
			got, err := m.zfs().Props(ctx, m.p.Name, []string{k})
			if err != nil {
				return err
			}
			if !zfs.SameValue(k, got[k].Value, want) {
				return fmt.Errorf("%s reads %s=%s, expected %s", m.p.Name, k, got[k].Value, want)
			}
			if k == "mountpoint" {
				return m.verifyMounted(ctx)
			}
			return nil
		},
		Predict: func(w *ansible.World) {
			props, _ := datasetProps(m.p.Name).Predicted(w)
			next := maps.Clone(cur)
			maps.Copy(next, props)
			next[k] = zfs.Prop{Value: want}
			datasetProps(m.p.Name).Predict(w, next)
		},
	}
}
