package pvezfs

import (
	"context"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/host"
	"github.com/gopve/proxmox/modules-src/host/blockdev"
	"github.com/gopve/proxmox/modules-src/host/zfs"
)

// pool carries one run's knowledge from stage to stage. The stages live
// in create.go (1, the pool), props.go and mount.go (2, properties and the
// mount), scrub.go (3) and destroy.go (state=absent); validate.go checks
// the arguments before any of them runs.
type pool struct {
	r   *ansible.Run
	env Env
	p   params

	props   map[string]string // wanted dataset properties (mountpoint included)
	devices []blockdev.Device
	existed bool
	created bool // a create is planned in this run

	// memo answers the run's repeated reads (the report reads what the
	// plan read, the plan reads what prefetch read) until the first Apply
	// stops it for good; see stopMemoOnApply.
	memo *host.Memo
}

// reads is the runner of the run's reads: the memo's until the first
// change, the node's after it.
func (m *pool) reads() host.Runner { return m.memo.Runner(m.env.Runner) }

func (m *pool) zfs() zfs.Client { return zfs.Client{Runner: m.reads()} }

// stopMemoOnApply makes every change of a stage stop the memo before it
// applies: from the first write on, each read (a Verify, the next stage's
// plan, the report) goes to the node, so nothing is reported that was not
// read after the last change.
func (m *pool) stopMemoOnApply(plan ansible.StageFunc) ansible.StageFunc {
	return func(ctx context.Context, w *ansible.World) ([]ansible.Change, error) {
		changes, err := plan(ctx, w)
		for i := range changes {
			apply := changes[i].Apply
			changes[i].Apply = func(ctx context.Context) error {
				m.memo.Stop()
				return apply(ctx)
			}
		}
		return changes, err
	}
}

// propKeys are the dataset properties a run reads: the wanted ones, what
// the report shows, and mounted/canmount for the mount (Z5). The plan and
// the report read the same list, so the report's read is the plan's.
func (m *pool) propKeys() []string {
	keys := slices.Sorted(maps.Keys(m.props))
	for _, k := range slices.Concat(reportProps, []string{"mounted", "canmount"}) {
		if !contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// resolve maps every device to its by-id name (Z2), failing on the first
// that does not exist, and on two names for the same disk.
func (m *pool) resolve() error {
	m.devices = nil
	byKernel := map[string]string{}
	for _, d := range m.p.Devices {
		dev, err := blockdev.Resolve(m.env.Root, d)
		if err != nil {
			return fmt.Errorf("devices: %w", err)
		}
		if other, dup := byKernel[dev.Kernel]; dup {
			return fmt.Errorf("devices: %s and %s are the same disk (%s)", other, d, dev.Kernel)
		}
		byKernel[dev.Kernel] = d
		m.devices = append(m.devices, dev)
	}
	return nil
}

var (
	nvmePart = regexp.MustCompile(`^(/dev/(?:nvme[0-9]+n[0-9]+|mmcblk[0-9]+))p[0-9]+$`)
	sdPart   = regexp.MustCompile(`^(/dev/[hsv]d[a-z]+)[0-9]+$`)
	idPart   = regexp.MustCompile(`-part[0-9]+$`)
)

// leafDisk maps a device path from `zpool list -v -P` to the kernel name of
// its whole disk: ZFS partitions whole disks it is given (…-part1, sdb1).
func (m *pool) leafDisk(leaf string) string {
	p := leaf
	if path.Dir(p) == blockdev.ByIDDir {
		p = idPart.ReplaceAllString(p, "")
	}
	k, err := blockdev.Canonical(m.env.Root, p)
	if err != nil {
		k = p
	}
	if s := nvmePart.FindStringSubmatch(k); s != nil {
		return s[1]
	}
	if s := sdPart.FindStringSubmatch(k); s != nil {
		return s[1]
	}
	return k
}

func (m *pool) wantLayout() string {
	if m.p.Layout == "stripe" && len(m.p.Devices) == 1 {
		return "single"
	}
	return m.p.Layout
}

// compareExisting fails when the pool on the node is not the pool asked for
// in the ways that cannot be changed (Z4). It never plans a change.
func (m *pool) compareExisting(ctx context.Context, tree zfs.Tree) error {
	info, st := tree.PoolInfo, tree.Status()
	var have, want []string
	for _, l := range st.Leaves() {
		have = append(have, m.leafDisk(l))
	}
	for _, d := range m.devices {
		want = append(want, d.Kernel)
	}
	sort.Strings(have)
	sort.Strings(want)
	if st.Layout() != m.wantLayout() || strings.Join(have, " ") != strings.Join(want, " ") {
		return fmt.Errorf("pool %s already exists as %s on %s, but the task asks for %s on %s; pve_zfs never rebuilds an existing pool (that destroys its data): make the task match the pool, or destroy the pool yourself (state: absent, force_destroy: true) and run again (Z4)",
			m.p.Name, st.Layout(), strings.Join(st.Leaves(), ", "), m.p.Layout, strings.Join(want, ", "))
	}
	got := info.Ashift
	if got == strconv.Itoa(m.p.Ashift) {
		return nil
	}
	// The pool property can be changed for vdevs added later; the vdevs'
	// own block size (in their label, read by blkid) is what was fixed at
	// creation.
	if leaves := st.Leaves(); len(leaves) > 0 {
		res, err := m.env.Runner.Run(ctx, host.Command{Name: "blkid", Args: []string{"-p", "-o", "value", "-s", "BLOCK_SIZE", leaves[0]}})
		if err == nil && strings.TrimSpace(res.Stdout) == strconv.Itoa(1<<m.p.Ashift) {
			m.r.Warn(fmt.Sprintf("pool %s: its ashift property says %s but its disks use ashift %d as requested; only vdevs added later would use %s", m.p.Name, got, m.p.Ashift, got))
			return nil
		}
	}
	return fmt.Errorf("ashift: pool %s was created with ashift %s, the task asks for %d; ashift is fixed when a pool is created and pve_zfs never rebuilds a pool (Z4): set ashift: %s to keep the pool", m.p.Name, got, m.p.Ashift, got)
}

func contains(xs []string, x string) bool { return slices.Contains(xs, x) }
