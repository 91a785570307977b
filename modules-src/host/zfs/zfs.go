// Package zfs reads ZFS pool state through the zpool and zfs commands, in
// their script-friendly forms (-H: tab separated, no header; -p: exact
// numbers), and parses `zpool status -P` for the vdev tree.
package zfs

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/host"
)

// Client runs zpool/zfs through a Runner. It only reads: a module makes its
// changes with its own commands, so Memo can never hold an answer that a
// write through this Client made stale.
type Client struct {
	Runner host.Runner
	// Memo, when set, answers a read the run already made (see Memo).
	Memo *Memo
}

func (c Client) run(ctx context.Context, name string, args ...string) (host.Result, error) {
	cmd := host.Command{Name: name, Args: args}
	if c.Memo == nil {
		return c.Runner.Run(ctx, cmd)
	}
	return c.Memo.run(ctx, c.Runner, cmd)
}

// poolColumns is what one `zpool list` of a pool reads: whether it exists,
// its capacity and health, and its ashift, in one command.
const poolColumns = "name,size,alloc,free,health,ashift"

// PoolInfo is a pool's line of `zpool list -Hp -o ` + poolColumns.
type PoolInfo struct {
	Usage
	// Ashift is the pool property; 0 means it was never set (zpool
	// then chose per vdev).
	Ashift string
}

// Pool reads the pool's line of `zpool list`. found is false when no
// imported pool has this name: "no such pool" is the only failure that
// means absent (Z1); anything else is an error.
func (c Client) Pool(ctx context.Context, pool string) (info PoolInfo, found bool, err error) {
	res, err := c.run(ctx, "zpool", "list", "-H", "-p", "-o", poolColumns, pool)
	if err != nil {
		if strings.Contains(res.Stderr, "no such pool") {
			return PoolInfo{}, false, nil
		}
		return PoolInfo{}, false, fmt.Errorf("look for pool %s: %w", pool, err)
	}
	f := strings.Split(strings.TrimRight(res.Stdout, "\n"), "\t")
	if len(f) != 6 || f[0] != pool {
		return PoolInfo{}, false, fmt.Errorf("look for pool %s: unexpected zpool list output %q (want %s)", pool, res.Stdout, poolColumns)
	}
	// A pool zfs cannot open (UNAVAIL, FAULTED) lists "-" for what it
	// cannot know; it still exists, and its health says why.
	for i := 1; i <= 3; i++ {
		if f[i] == "-" {
			f[i] = "0"
		}
	}
	u, err := ParseUsage(strings.Join(f[1:5], "\t"))
	if err != nil {
		return PoolInfo{}, false, fmt.Errorf("look for pool %s: %w", pool, err)
	}
	return PoolInfo{Usage: u, Ashift: f[5]}, true, nil
}

// Exists tells whether an imported pool has this name (Z1); see Pool.
func (c Client) Exists(ctx context.Context, pool string) (bool, error) {
	_, found, err := c.Pool(ctx, pool)
	return found, err
}

// Pools lists the imported pools.
func (c Client) Pools(ctx context.Context) ([]string, error) {
	res, err := c.run(ctx, "zpool", "list", "-H", "-o", "name")
	if err != nil {
		return nil, fmt.Errorf("list pools: %w", err)
	}
	return strings.Fields(res.Stdout), nil
}

// Usage is the capacity and health of a pool, as `zpool list` reads them.
type Usage struct {
	Size   uint64 `json:"size"`
	Alloc  uint64 `json:"allocated"`
	Free   uint64 `json:"free"`
	Health string `json:"health"`
}

// ParseUsage parses one -Hp line of size, alloc, free, health.
func ParseUsage(out string) (Usage, error) {
	f := strings.Split(strings.TrimRight(out, "\n"), "\t")
	if len(f) != 4 {
		return Usage{}, fmt.Errorf("unexpected zpool list output %q (want 4 tab-separated fields)", out)
	}
	var u Usage
	for i, p := range []*uint64{&u.Size, &u.Alloc, &u.Free} {
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return Usage{}, fmt.Errorf("unexpected zpool list output %q: field %d is not a number", out, i+1)
		}
		*p = v
	}
	u.Health = f[3]
	return u, nil
}

// Prop is one property value and where it comes from (local, default, …).
type Prop struct {
	Value  string `json:"value"`
	Source string `json:"source"`
}

// Props reads dataset properties with `zfs get -H -p -o property,value,source`.
func (c Client) Props(ctx context.Context, dataset string, names []string) (map[string]Prop, error) {
	res, err := c.run(ctx, "zfs", "get", "-H", "-p", "-o", "property,value,source", strings.Join(names, ","), dataset)
	if err != nil {
		return nil, fmt.Errorf("read properties of %s: %w", dataset, err)
	}
	return ParseProps(res.Stdout)
}

// ParseProps parses property<TAB>value<TAB>source lines.
func ParseProps(out string) (map[string]Prop, error) {
	props := map[string]Prop{}
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		f := strings.Split(l, "\t")
		if len(f) != 3 {
			return nil, fmt.Errorf("unexpected zfs get line %q (want property, value, source)", l)
		}
		props[f[0]] = Prop{Value: f[1], Source: f[2]}
	}
	return props, nil
}

// Vdev is a top-level vdev: a leaf device (Type "disk") or a group.
type Vdev struct {
	Type    string   `json:"type"` // disk, mirror, raidz1, raidz2, raidz3, draid…
	Devices []string `json:"devices"`
	State   string   `json:"state"`
}

// Status is the parsed `zpool status -P POOL`.
type Status struct {
	Pool  string `json:"pool"`
	State string `json:"state"`
	Vdevs []Vdev `json:"vdevs"` // data vdevs only (logs, cache, spares… are skipped)
}

// Status reads `zpool status -P POOL` (full device paths).
func (c Client) Status(ctx context.Context, pool string) (Status, error) {
	res, err := c.run(ctx, "zpool", "status", "-P", pool)
	if err != nil {
		return Status{}, fmt.Errorf("read status of pool %s: %w", pool, err)
	}
	return ParseStatus(res.Stdout)
}

// ParseStatus reads the config tree. Nesting is by indentation after the
// leading tab: the pool at 0, top-level vdevs at 2, leaves of a group at 4.
// Section names at level 0 other than the pool (logs, cache, spares,
// special, dedup) end the data vdevs.
func ParseStatus(out string) (Status, error) {
	var st Status
	inConfig, inData := false, false
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		if !inConfig {
			switch {
			case strings.HasPrefix(t, "pool:"):
				st.Pool = strings.TrimSpace(strings.TrimPrefix(t, "pool:"))
			case strings.HasPrefix(t, "state:"):
				st.State = strings.TrimSpace(strings.TrimPrefix(t, "state:"))
			case t == "config:":
				inConfig = true
			}
			continue
		}
		if t == "" || strings.HasPrefix(t, "NAME ") {
			continue
		}
		if strings.HasPrefix(t, "errors:") {
			break
		}
		body := strings.TrimPrefix(l, "\t")
		level := len(body) - len(strings.TrimLeft(body, " "))
		f := strings.Fields(t)
		name, state := f[0], ""
		if len(f) > 1 {
			state = f[1]
		}
		switch {
		case level == 0:
			inData = name == st.Pool
		case !inData:
		case level == 2:
			typ := "disk"
			if g := groupType(name); g != "" {
				typ = g
			}
			v := Vdev{Type: typ, State: state}
			if typ == "disk" {
				v.Devices = []string{name}
			}
			st.Vdevs = append(st.Vdevs, v)
		case level >= 4 && len(st.Vdevs) > 0:
			last := &st.Vdevs[len(st.Vdevs)-1]
			last.Devices = append(last.Devices, name)
		}
	}
	if st.Pool == "" || !inConfig {
		return st, fmt.Errorf("unexpected zpool status output: no pool/config section")
	}
	return st, nil
}

// groupType maps "mirror-0", "raidz2-1", "draid1:…" to the vdev type.
func groupType(name string) string {
	base := name
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			base = name[:i]
		}
	}
	switch base {
	case "mirror", "raidz1", "raidz2", "raidz3", "replacing", "spare":
		return base
	case "raidz":
		return "raidz1"
	}
	if strings.HasPrefix(name, "draid") {
		return "draid"
	}
	return ""
}

// Layout names the pool's data layout the way pve_zfs's option does:
// "single" (one disk), "stripe" (several disks), or the group type when all
// top-level vdevs share it.
func (s Status) Layout() string {
	if len(s.Vdevs) == 0 {
		return ""
	}
	types := map[string]bool{}
	for _, v := range s.Vdevs {
		types[v.Type] = true
	}
	if len(types) != 1 {
		keys := slices.Sorted(maps.Keys(types))
		return "mixed(" + strings.Join(keys, ",") + ")"
	}
	t := s.Vdevs[0].Type
	if t == "disk" {
		if len(s.Vdevs) == 1 {
			return "single"
		}
		return "stripe"
	}
	return t
}

// Leaves returns every data device of the pool.
func (s Status) Leaves() []string {
	var out []string
	for _, v := range s.Vdevs {
		out = append(out, v.Devices...)
	}
	return out
}
