package pvezfs

// Stage 1: an existing pool is compared (Z1, Z4), an absent one is
// created on blank disks (Z2, Z3) with its create-time properties (Z4, Z5).

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/host"
	"github.com/gopve/proxmox/modules-src/host/blockdev"
	"github.com/gopve/proxmox/modules-src/host/zfs"
)

// planPool is stage 1.
func (m *pool) planPool(ctx context.Context, _ *ansible.World) ([]ansible.Change, error) {
	tree, exists, err := m.zfs().Tree(ctx, m.p.Name)
	if err != nil {
		return nil, err
	}
	if err := m.resolve(); err != nil {
		return nil, err
	}
	m.existed = exists
	if exists { // Z1: nothing to create, nothing to destroy
		return nil, m.compareExisting(ctx, tree)
	}
	imported, err := m.zfs().Pools(ctx)
	if err != nil {
		return nil, err
	}
	var changes []ansible.Change
	for _, d := range m.devices {
		sig, err := blockdev.Probe(ctx, m.env.Runner, d.Kernel)
		if err != nil {
			return nil, fmt.Errorf("devices: %w", err)
		}
		if !sig.Present {
			continue
		}
		label := sig.Fields["LABEL"]
		if sig.Fields["TYPE"] == "zfs_member" && contains(imported, label) {
			return nil, fmt.Errorf("devices: %s (%s) belongs to the imported ZFS pool %q; refusing to touch it", d.ByID, d.Kernel, label)
		}
		if !m.p.Wipe {
			return nil, fmt.Errorf("devices: %s (%s) is not blank: blkid finds %s; refusing to overwrite it (Z3). If its data is expendable, set wipe_signatures: true", d.ByID, d.Kernel, sig.Describe())
		}
		changes = append(changes, m.wipeChange(d, sig.Describe()))
	}
	if m.wantsMount() {
		if err := m.mountpointFree(m.props["mountpoint"]); err != nil {
			return nil, err
		}
	}
	m.created = true
	return append(changes, m.createChange()), nil
}

// createFailed reads the node back after `zpool create` failed: zpool exits
// non-zero when the pool was created but could not be mounted, and a
// message saying "could not create" would then hide a pool that exists.
func (m *pool) createFailed(ctx context.Context, cause error) error {
	exists, err := m.zfs().Exists(ctx, m.p.Name)
	switch {
	case err != nil:
		return fmt.Errorf("%w; reading the pools back afterwards failed too (%v), so pool %s may exist: check zpool list", cause, err, m.p.Name)
	case exists:
		msg := fmt.Sprintf("zpool create exited with an error but pool %s now exists on the node", m.p.Name)
		if got, err := m.zfs().Props(ctx, m.p.Name, []string{"mounted"}); err == nil && got["mounted"].Value == "no" {
			msg += fmt.Sprintf(", not mounted at %s", m.props["mountpoint"])
		}
		return fmt.Errorf("%s (%w); fix the cause and run the task again: it converges the existing pool instead of creating another", msg, cause)
	}
	return cause
}

func (m *pool) wipeChange(d blockdev.Device, what string) ansible.Change {
	return ansible.Change{
		ID:      "wipe:" + d.Kernel,
		Summary: fmt.Sprintf("erase the signatures on %s (%s: %s)", d.ByID, d.Kernel, what),
		Apply: func(ctx context.Context) error {
			_, err := m.env.Runner.Run(ctx, host.Command{Name: "wipefs", Args: []string{"-a", d.ByID}})
			return err
		},
		Verify: func(ctx context.Context) error {
			sig, err := blockdev.Probe(ctx, m.env.Runner, d.Kernel)
			if err == nil && sig.Present {
				err = fmt.Errorf("%s still carries %s", d.ByID, sig.Describe())
			}
			return err
		},
	}
}

// createArgs is the zpool create command line.
func (m *pool) createArgs() []string {
	args := []string{"create", "-o", "ashift=" + strconv.Itoa(m.p.Ashift)}
	keys := make([]string, 0, len(m.props))
	for k := range m.props {
		if k != "mountpoint" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-O", k+"="+m.props[k])
	}
	args = append(args, "-m", m.props["mountpoint"], m.p.Name)
	switch m.p.Layout {
	case "mirror", "raidz1", "raidz2", "raidz3":
		args = append(args, m.p.Layout)
	}
	for _, d := range m.devices {
		args = append(args, d.ByID)
	}
	return args
}

func (m *pool) createChange() ansible.Change {
	args := m.createArgs()
	var ids []string
	for _, d := range m.devices {
		ids = append(ids, d.ByID)
	}
	return ansible.Change{
		ID:      "pool:create",
		Summary: fmt.Sprintf("create pool %s (%s, ashift %d) on %s", m.p.Name, m.wantLayout(), m.p.Ashift, strings.Join(ids, ", ")),
		Diff: &ansible.Diff{Before: map[string]any{}, After: map[string]any{"name": m.p.Name, "layout": m.wantLayout(), "devices": ids, "ashift": m.p.Ashift, "properties": m.props},
			BeforeHeader: "pool " + m.p.Name + " (absent)", AfterHeader: "pool " + m.p.Name},
		Apply: func(ctx context.Context) error {
			_, err := m.env.Runner.Run(ctx, host.Command{Name: "zpool", Args: args})
			if err == nil {
				return nil
			}
			return m.createFailed(ctx, err)
		},
		Verify: func(ctx context.Context) error {
			tree, ok, err := m.zfs().Tree(ctx, m.p.Name)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("zpool create returned success but pool %s is not listed", m.p.Name)
			}
			return m.compareExisting(ctx, tree)
		},
		// the pool's root dataset gets exactly the properties of the
		// command line (-O, -m)
		Predict: func(w *ansible.World) {
			props := make(map[string]zfs.Prop, len(m.props))
			for k, v := range m.props {
				props[k] = zfs.Prop{Value: v}
			}
			datasetProps(m.p.Name).Predict(w, props)
		},
	}
}
