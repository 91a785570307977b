package pvezfs

import (
	"context"
	"fmt"
	"maps"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/host"
	"github.com/gopve/proxmox/modules-src/host/blockdev"
	"github.com/gopve/proxmox/modules-src/host/systemd"
	"github.com/gopve/proxmox/modules-src/host/zfs"
)

// pool carries one run's knowledge from stage to stage.
type pool struct {
	r   *ansible.Run
	env Env
	p   params

	props      map[string]string // wanted dataset properties (mountpoint included)
	devices    []blockdev.Device
	existed    bool
	created    bool // a create is planned in this run
	warnedSize bool
}

func (m *pool) zfs() zfs.Client { return zfs.Client{Runner: m.env.Runner} }

var (
	poolName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.:-]*$`)
	reserved = regexp.MustCompile(`^(mirror|raidz|draid|spare|log|cache|special|dedup|c[0-9].*)`)
)

// minDevices per layout; single is exactly one.
var minDevices = map[string]int{"single": 1, "stripe": 1, "mirror": 2, "raidz1": 2, "raidz2": 3, "raidz3": 4}

// validate checks the arguments before anything is read from the node, so
// bad input never gets as far as a command.
func (m *pool) validate() error {
	p := m.p
	if !poolName.MatchString(p.Name) || reserved.MatchString(p.Name) {
		return fmt.Errorf("name: %q is not a valid pool name (a letter first, then letters, digits, _ - . :; not mirror, raidz…, spare, log, cache)", p.Name)
	}
	if p.State == "absent" {
		return nil
	}
	if n := len(p.Devices); n < minDevices[p.Layout] {
		return fmt.Errorf("devices: layout %s needs at least %d devices, got %d", p.Layout, minDevices[p.Layout], n)
	}
	if p.Layout == "single" && len(p.Devices) > 1 {
		return fmt.Errorf("devices: layout single takes one device, got %d; use layout stripe (no redundancy) or mirror", len(p.Devices))
	}
	seen := map[string]bool{}
	for _, d := range p.Devices {
		if seen[d] {
			return fmt.Errorf("devices: %s is listed twice", d)
		}
		seen[d] = true
	}
	if p.Ashift < 9 || p.Ashift > 16 {
		return fmt.Errorf("ashift: %d is out of range (9 to 16; 12 means 4 KiB sectors)", p.Ashift)
	}
	m.props = DefaultProperties()
	for k, v := range p.Properties {
		if k == "mountpoint" {
			return fmt.Errorf("properties: set the mountpoint with the mountpoint option, not in properties")
		}
		m.props[k] = fmt.Sprint(v)
		if b, ok := v.(bool); ok { // YAML on/off arrive as booleans
			m.props[k] = map[bool]string{true: "on", false: "off"}[b]
		}
	}
	mp := p.Mountpoint
	if mp == "" {
		mp = "/" + p.Name
	}
	switch {
	case (mp == "none" || mp == "legacy") && !p.AllowUnmounted:
		return fmt.Errorf("mountpoint: %s refused: Proxmox VE must mount the pool's datasets for LXC container volumes, so containers on an unmounted pool fail to start (Z5); keep the default /%s, or set allow_unmounted: true if this pool never holds containers", mp, p.Name)
	case mp != "none" && mp != "legacy" && !strings.HasPrefix(mp, "/"):
		return fmt.Errorf("mountpoint: %q must be an absolute path", mp)
	}
	m.props["mountpoint"] = path.Clean(mp)
	if mp == "none" || mp == "legacy" {
		m.props["mountpoint"] = mp
	}
	return nil
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

// leafDisk maps a device path from `zpool status -P` to the kernel name of
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
func (m *pool) compareExisting(ctx context.Context, st zfs.Status) error {
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
	got, err := m.zfs().PoolProp(ctx, m.p.Name, "ashift")
	if err != nil {
		return err
	}
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

// planPool is stage 1.
func (m *pool) planPool(ctx context.Context, _ *ansible.World) ([]ansible.Change, error) {
	exists, err := m.zfs().Exists(ctx, m.p.Name)
	if err != nil {
		return nil, err
	}
	if err := m.resolve(); err != nil {
		return nil, err
	}
	m.existed = exists
	if exists { // Z1: nothing to create, nothing to destroy
		st, err := m.zfs().Status(ctx, m.p.Name)
		if err != nil {
			return nil, err
		}
		return nil, m.compareExisting(ctx, st)
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
	m.created = true
	return append(changes, m.createChange()), nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
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
			return err
		},
		Verify: func(ctx context.Context) error {
			ok, err := m.zfs().Exists(ctx, m.p.Name)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("zpool create returned success but pool %s is not listed", m.p.Name)
			}
			st, err := m.zfs().Status(ctx, m.p.Name)
			if err != nil {
				return err
			}
			return m.compareExisting(ctx, st)
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

// sameValue compares a property as zfs reads it back with the requested
// value: acltype=posixacl reads back as "posix" on current OpenZFS.
func sameValue(prop, have, want string) bool {
	norm := func(v string) string {
		v = strings.ToLower(v)
		if prop == "acltype" && v == "posixacl" {
			return "posix"
		}
		if prop == "acltype" && v == "noacl" {
			return "off"
		}
		return v
	}
	return norm(have) == norm(want)
}

// datasetProps is a fact of the predicted world (ansible.World): the
// pool's root dataset properties as zfs would read them back. A planned
// create predicts them, so stage 2 plans against the pool as it will be.
func datasetProps(pool string) ansible.Key[map[string]zfs.Prop] {
	return ansible.Key[map[string]zfs.Prop]("pvezfs:props:" + pool)
}

// planProps is stage 2: changeable properties and the mountpoint (Z5).
func (m *pool) planProps(ctx context.Context, w *ansible.World) ([]ansible.Change, error) {
	keys := make([]string, 0, len(m.props))
	for k := range m.props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	cur, err := datasetProps(m.p.Name).Get(ctx, w, func(ctx context.Context) (map[string]zfs.Prop, error) {
		return m.zfs().Props(ctx, m.p.Name, keys)
	})
	if err != nil {
		return nil, fmt.Errorf("properties: %w", err)
	}
	var changes []ansible.Change
	for _, k := range keys {
		k, want := k, m.props[k]
		have, ok := cur[k]
		if !ok {
			return nil, fmt.Errorf("properties: zfs did not report %q for %s", k, m.p.Name)
		}
		if sameValue(k, have.Value, want) {
			continue
		}
		changes = append(changes, ansible.Change{
			ID:      "prop:" + k,
			Summary: fmt.Sprintf("set %s=%s on %s (was %s)", k, want, m.p.Name, have.Value),
			Diff:    &ansible.Diff{Before: k + "=" + have.Value + "\n", After: k + "=" + want + "\n", BeforeHeader: m.p.Name, AfterHeader: m.p.Name},
			Apply: func(ctx context.Context) error {
				_, err := m.env.Runner.Run(ctx, host.Command{Name: "zfs", Args: []string{"set", k + "=" + want, m.p.Name}})
				return err
			},
			Verify: func(ctx context.Context) error {
				got, err := m.zfs().Props(ctx, m.p.Name, []string{k})
				if err != nil {
					return err
				}
				if !sameValue(k, got[k].Value, want) {
					return fmt.Errorf("%s reads %s=%s, expected %s", m.p.Name, k, got[k].Value, want)
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
		})
	}
	return changes, nil
}

func scrubUnit(period, pool string) string { return "zfs-scrub-" + period + "@" + pool + ".timer" }

// planScrub is stage 3 (Z6).
func (m *pool) planScrub(ctx context.Context, _ *ansible.World) ([]ansible.Change, error) {
	var changes []ansible.Change
	for _, period := range []string{"monthly", "weekly"} {
		unit := scrubUnit(period, m.p.Name)
		want := m.p.Scrub == period
		st, err := systemd.State(ctx, m.env.Runner, unit)
		if err != nil {
			return nil, fmt.Errorf("scrub: %w", err)
		}
		if st.Raw == "not-found" {
			if want {
				return nil, fmt.Errorf("scrub: %s does not exist (zfsutils-linux ships zfs-scrub-%s@.timer); set scrub: disabled or install it", unit, period)
			}
			continue
		}
		if want == st.Enabled && want == st.Active {
			continue
		}
		verb, do := "enable and start ", systemd.EnableNow
		if !want {
			verb, do = "disable and stop ", systemd.DisableNow
		}
		changes = append(changes, ansible.Change{
			ID:      "scrub:" + unit,
			Summary: verb + unit,
			Apply:   func(ctx context.Context) error { return do(ctx, m.env.Runner, unit) },
			Verify: func(ctx context.Context) error {
				got, err := systemd.State(ctx, m.env.Runner, unit)
				if err != nil {
					return err
				}
				if got.Enabled != want || got.Active != want {
					return fmt.Errorf("%s is enabled=%v active=%v, expected %v", unit, got.Enabled, got.Active, want)
				}
				return nil
			},
		})
	}
	return changes, nil
}

// planDestroy is state=absent.
func (m *pool) planDestroy(ctx context.Context, _ *ansible.World) ([]ansible.Change, error) {
	exists, err := m.zfs().Exists(ctx, m.p.Name)
	if err != nil || !exists {
		return nil, err
	}
	m.existed = true
	if !m.p.ForceDestroy {
		return nil, fmt.Errorf("force_destroy: pool %s exists and state=absent would destroy it with all its data; set force_destroy: true to really do that", m.p.Name)
	}
	return []ansible.Change{{
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
	}}, nil
}
