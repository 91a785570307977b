package pvezfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/host"
	"github.com/gopve/proxmox/modules-src/host/zfs"
)

// Z5 means mounted at /POOL on every run, not only "mountpoint=/POOL": a pool
// whose mount failed (its directory was not empty when it was created or
// imported) reads mountpoint=/POOL and mounted=no, and Proxmox VE cannot use
// it for containers.

// wantsMount tells whether the task expects the pool mounted.
func (m *pool) wantsMount() bool {
	mp := m.props["mountpoint"]
	cm := m.props["canmount"]
	return strings.HasPrefix(mp, "/") && (cm == "" || cm == "on")
}

// planMount plans `zfs mount POOL` for an existing pool that is not mounted
// although its mountpoint is right. remounting says a mountpoint change is
// already planned: zfs mounts the pool when its mountpoint is set (with
// canmount=on), and that change's Verify checks the mount.
func (m *pool) planMount(cur map[string]zfs.Prop, remounting bool) (*ansible.Change, error) {
	if !m.wantsMount() || remounting || cur["mounted"].Value != "no" {
		return nil, nil
	}
	if cm := cur["canmount"].Value; cm != "" && cm != "on" && m.props["canmount"] == "" {
		return nil, fmt.Errorf("mountpoint: pool %s is not mounted because its canmount property is %s; Proxmox VE must mount the pool for LXC container volumes (Z5): set properties: {canmount: \"on\"}, or allow_unmounted: true if this pool never holds containers", m.p.Name, cm)
	}
	mp := m.props["mountpoint"]
	if err := m.mountpointFree(mp); err != nil {
		return nil, err
	}
	return &ansible.Change{
		ID:      "mount:" + m.p.Name,
		Summary: fmt.Sprintf("mount %s at %s (it was not mounted)", m.p.Name, mp),
		Diff:    &ansible.Diff{Before: "mounted=no\n", After: "mounted=yes\n", BeforeHeader: m.p.Name, AfterHeader: m.p.Name},
		Apply: func(ctx context.Context) error {
			_, err := m.env.Runner.Run(ctx, host.Command{Name: "zfs", Args: []string{"mount", m.p.Name}})
			return err
		},
		Verify: m.verifyMounted,
		Predict: func(w *ansible.World) {
			props, _ := datasetProps(m.p.Name).Predicted(w)
			next := maps.Clone(cur)
			maps.Copy(next, props)
			next["mounted"] = zfs.Prop{Value: "yes", Source: "-"}
			datasetProps(m.p.Name).Predict(w, next)
		},
	}, nil
}

// verifyMounted reads `zfs get mounted` back.
func (m *pool) verifyMounted(ctx context.Context) error {
	if !m.wantsMount() {
		return nil
	}
	got, err := m.zfs().Props(ctx, m.p.Name, []string{"mounted"})
	if err != nil {
		return err
	}
	if v := got["mounted"].Value; v != "yes" {
		return fmt.Errorf("%s is not mounted at %s (zfs get mounted reads %q)", m.p.Name, m.props["mountpoint"], v)
	}
	return nil
}

// mountpointFree refuses a mountpoint directory that holds files: zfs
// cannot mount over it ("directory is not empty"), and `zpool create` would
// then create the pool and fail, leaving it unmounted. Checked before
// anything is written, so check mode predicts that failure too.
func (m *pool) mountpointFree(mp string) error {
	if !strings.HasPrefix(mp, "/") {
		return nil
	}
	ents, err := os.ReadDir(m.env.Root.Path(mp))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "not a directory") {
			return fmt.Errorf("mountpoint: %s exists and is not a directory; zfs cannot mount pool %s there", mp, m.p.Name)
		}
		return fmt.Errorf("mountpoint: read %s: %w", mp, err)
	}
	if len(ents) > 0 {
		names := make([]string, 0, 3)
		for _, e := range ents[:min(3, len(ents))] {
			names = append(names, e.Name())
		}
		return fmt.Errorf("mountpoint: %s is not empty (%s…), so zfs cannot mount pool %s there (Z5); move its content away or choose another mountpoint", mp, strings.Join(names, ", "), m.p.Name)
	}
	return nil
}
