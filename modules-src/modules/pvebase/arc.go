package pvebase

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/host"
	"github.com/gopve/proxmox/modules-src/host/modprobe"
	"github.com/gopve/proxmox/modules-src/host/size"
)

const (
	zfsConf    = "/etc/modprobe.d/zfs.conf"
	arcSysfs   = "/sys/module/zfs/parameters/zfs_arc_max"
	arcOptName = "zfs_arc_max"
)

func parseArc(s string) (uint64, error) { return size.Parse(arcOptName, s) }

// readLiveArc returns the running ARC cap; ok is false when the zfs module is
// not loaded.
func (m *base) readLiveArc() (v uint64, ok bool, err error) {
	b, err := os.ReadFile(m.env.Root.Path(arcSysfs))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read %s: %w", arcSysfs, err)
	}
	v, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("read %s: %q is not a number", arcSysfs, strings.TrimSpace(string(b)))
	}
	return v, true, nil
}

// planArc is stage 4 (B4, B5).
func (m *base) planArc(_ context.Context, want uint64) ([]ansible.Change, error) {
	if m.p.ZFSArcMax == "" {
		return nil, nil
	}
	cur, err := m.env.Root.ReadFile(zfsConf)
	if err != nil {
		return nil, err
	}
	val := strconv.FormatUint(want, 10)
	desired := modprobe.Set(string(cur.Content), "zfs", arcOptName, val)
	var changes []ansible.Change
	fileChanges := false
	if fc := host.PlanFrom(cur, []byte(desired), 0o644); fc != nil {
		fileChanges = true
		ch := m.fileChange("zfs_arc:conf", fmt.Sprintf("set zfs_arc_max=%s (%s) in %s and rebuild the initramfs", val, size.Format(want), zfsConf), fc)
		// Two actions, one effect: the cap only takes effect at boot once
		// the initramfs embeds the file. If the rebuild fails, the file is
		// put back (host.WriteThenAct), else the next run would see no
		// change and never rebuild.
		ch.Apply = func(ctx context.Context) error {
			_, err := m.env.Root.WriteThenAct(ctx, fc, m.env.Now(), func(ctx context.Context) error {
				_, err := m.env.Runner.Run(ctx, host.Command{Name: "update-initramfs", Args: []string{"-u", "-k", "all"}})
				return err
			})
			return fileApplyError(err)
		}
		changes = append(changes, ch)
	}
	live, loaded, err := m.readLiveArc()
	if err != nil {
		return nil, err
	}
	switch {
	case m.p.ZFSArcLive && loaded && live != want:
		changes = append(changes, ansible.Change{
			ID:      "zfs_arc:live",
			Summary: fmt.Sprintf("set the running ARC cap to %s (%s)", val, size.Format(want)),
			Diff:    &ansible.Diff{Before: strconv.FormatUint(live, 10) + "\n", After: val + "\n", BeforeHeader: arcSysfs, AfterHeader: arcSysfs},
			Apply: func(ctx context.Context) error {
				// sysfs parameters are written in place, never renamed over
				return m.env.Root.WriteInPlace(ctx, arcSysfs, []byte(val+"\n"))
			},
			Verify: func(context.Context) error {
				got, _, err := m.readLiveArc()
				if err != nil {
					return err
				}
				if got != want {
					return fmt.Errorf("%s reads %d, expected %d", arcSysfs, got, want)
				}
				return nil
			},
		})
	case m.p.ZFSArcLive && !loaded && fileChanges:
		m.r.Warn("zfs_arc_live: the zfs module is not loaded; the new ARC cap applies when it loads")
	case !m.p.ZFSArcLive && loaded && live != want:
		m.reboot = append(m.reboot, fmt.Sprintf("ZFS ARC cap %s set in %s but the running value is %d (set zfs_arc_live to apply it now)", val, zfsConf, live))
	case !m.p.ZFSArcLive && !loaded && fileChanges:
		m.reboot = append(m.reboot, "ZFS ARC cap changed in "+zfsConf)
	}
	return changes, nil
}
