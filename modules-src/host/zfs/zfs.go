// Package zfs reads ZFS pool state through the zpool and zfs commands, in
// their script-friendly forms (-p: exact numbers; -H, tab separated without
// a header, where nothing is lost by it), and a pool with its vdev tree from
// one `zpool list -v` (ParseTree).
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
// changes with its own commands. A module that reads the same fact more
// than once in a run gives it a host.Memo's Runner.
type Client struct {
	Runner host.Runner
}

func (c Client) run(ctx context.Context, name string, args ...string) (host.Result, error) {
	return c.Runner.Run(ctx, host.Command{Name: name, Args: args})
}

// poolColumns is what the pool's line of TreeArgs reads: whether it
// exists, its capacity and health, and its ashift.
const poolColumns = "name,size,alloc,free,health,ashift"

// TreeArgs is the one command that reads a pool and its member disks:
// `zpool list -v` prints the pool's line (the -o columns) and then one line
// per vdev, nested by indentation; -P names the disks by their full paths,
// -p prints exact bytes. Not -H: scripted mode prints every vdev name after
// a tab without its indentation, so which disk belongs to which mirror
// would be lost, and the header is what proves the column order.
func TreeArgs(pool string) []string {
	return []string{"list", "-v", "-P", "-p", "-o", poolColumns, pool}
}

// PoolInfo is a pool's line of `zpool list`: capacity, health, ashift.
type PoolInfo struct {
	Usage
	// Ashift is the pool property; 0 means it was never set (zpool
	// then chose per vdev).
	Ashift string
}

// Tree is a pool as one `zpool list -v` reads it: its line, and its vdevs.
type Tree struct {
	Name string
	PoolInfo
	// Vdevs are the data vdevs, in order.
	Vdevs []Vdev
	// Classes are the other sections by name (logs, dedup, special,
	// cache, spare), which Layout and Leaves do not count.
	Classes map[string][]Vdev
}

// Status is the pool's layout part of the tree.
func (t Tree) Status() Status { return Status{Pool: t.Name, State: t.Health, Vdevs: t.Vdevs} }

// Tree reads the pool and its vdevs with one command (TreeArgs). found is
// false when no imported pool has this name: "no such pool" is the only
// failure that means absent (Z1); anything else is an error.
func (c Client) Tree(ctx context.Context, pool string) (tree Tree, found bool, err error) {
	res, err := c.run(ctx, "zpool", TreeArgs(pool)...)
	if err != nil {
		if strings.Contains(res.Stderr, "no such pool") {
			return Tree{}, false, nil
		}
		return Tree{}, false, fmt.Errorf("look for pool %s: %w", pool, err)
	}
	tree, err = ParseTree(res.Stdout, pool)
	if err != nil {
		return Tree{}, false, fmt.Errorf("look for pool %s: %w", pool, err)
	}
	return tree, true, nil
}

// Pool reads the pool's line (see Tree, whose command it runs: with a
// memo, Pool and Tree in one run cost one process).
func (c Client) Pool(ctx context.Context, pool string) (info PoolInfo, found bool, err error) {
	t, found, err := c.Tree(ctx, pool)
	return t.PoolInfo, found, err
}

// treeClasses are the section lines print_list_stats prints at depth 0
// before the vdevs of a class: "logs", "dedup", "special" (class_name[]),
// then "cache" and "spare".
var treeClasses = []string{"logs", "dedup", "special", "cache", "spare"}

// ParseTree parses `zpool list -v -P -p -o name,size,alloc,free,health,ashift
// POOL`. Its shape is OpenZFS's cmd/zpool/zpool_main.c:
//
//   - print_header: one line of the -o columns' names (NAME SIZE ALLOC
//     FREE HEALTH ASHIFT), their order is read from it;
//   - print_pool: the pool's line, one value per -o column ("-" for what
//     the pool cannot tell: an UNAVAIL pool's sizes);
//   - print_list_stats, "print static default line per vdev, not compatible
//     with '-o' <proplist> option": per vdev `printf("%*s%s%*s", depth, "",
//     name, …)` with depth 2 for a top-level vdev (mirror-0, raidz1-0, or a
//     disk), 4 for the disks of a group, and then its fixed columns SIZE
//     ALLOC FREE CKPOINT EXPANDSZ FRAG CAP DEDUP HEALTH, whatever -o said,
//     so a vdev's health is its line's last field;
//   - the classes: a line `printf(dashes, cb->cb_namewidth, class_name[n])`
//     at depth 0 ("logs", "dedup", "special"), then "cache" and "spare",
//     each followed by its vdevs at depth 2.
//
// The header must name NAME, SIZE, ALLOC, FREE, HEALTH and ASHIFT, and the
// pool's line must be pool's: anything else is an error, never a guess.
func ParseTree(out, pool string) (Tree, error) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 2 {
		return Tree{}, fmt.Errorf("unexpected zpool list output %q: want a header and the pool's line", out)
	}
	t, err := parsePoolLine(lines[0], lines[1], pool)
	if err != nil {
		return Tree{}, err
	}
	if err := t.parseVdevs(lines[2:]); err != nil {
		return Tree{}, err
	}
	if len(t.Vdevs) == 0 {
		// every imported pool has a data vdev: a zpool that ignored -v
		// must not pass for a pool without disks
		return Tree{}, fmt.Errorf("unexpected zpool list output %q: no vdevs under pool %s (want the -v tree)", out, pool)
	}
	return t, nil
}

// parsePoolLine reads pool's own line by the header's columns: its size,
// allocation, free space, health and ashift.
func parsePoolLine(headerLine, line, pool string) (Tree, error) {
	header := strings.Fields(headerLine)
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for _, h := range []string{"NAME", "SIZE", "ALLOC", "FREE", "HEALTH", "ASHIFT"} {
		if _, ok := col[h]; !ok {
			return Tree{}, fmt.Errorf("unexpected zpool list header %q: no %s column", headerLine, h)
		}
	}
	f := strings.Fields(line)
	if indent(line) != 0 || len(f) != len(header) || f[col["NAME"]] != pool {
		return Tree{}, fmt.Errorf("unexpected zpool list line %q: want pool %s's %d columns %s", line, pool, len(header), headerLine)
	}
	t := Tree{Name: pool, PoolInfo: PoolInfo{Ashift: f[col["ASHIFT"]]}, Classes: map[string][]Vdev{}}
	t.Health = f[col["HEALTH"]]
	for _, n := range []struct {
		col string
		p   *uint64
	}{{"SIZE", &t.Size}, {"ALLOC", &t.Alloc}, {"FREE", &t.Free}} {
		v := f[col[n.col]]
		if v == "-" { // a pool zfs cannot open (UNAVAIL, FAULTED) still exists; its health says why
			continue
		}
		x, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return Tree{}, fmt.Errorf("unexpected zpool list line %q: %s %q is not a number of bytes (-p)", line, n.col, v)
		}
		*n.p = x
	}
	return t, nil
}

// parseVdevs reads the vdev lines under the pool's: the data vdevs, then
// each class line and its vdevs.
func (t *Tree) parseVdevs(lines []string) error {
	class := "" // the data vdevs until a class line
	section := func() *[]Vdev {
		if class == "" {
			return &t.Vdevs
		}
		vs := t.Classes[class]
		return &vs
	}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		name, health, depth := f[0], f[len(f)-1], indent(l)
		vs := section()
		switch {
		case depth == 0 && slices.Contains(treeClasses, name):
			class = name
			t.Classes[class] = nil
			continue
		case depth == 0:
			return fmt.Errorf("unexpected zpool list line %q: another pool or an unknown section in pool %s's tree", l, t.Name)
		case len(f) < 2:
			return fmt.Errorf("unexpected zpool list line %q: a vdev without its columns", l)
		case depth == 2:
			v := Vdev{Type: groupType(name), State: health}
			if v.Type == "" {
				v.Type, v.Devices = "disk", []string{name}
			}
			*vs = append(*vs, v)
		case groupType(name) != "":
			// a replacing-0 or spare-0 inside a group: its disks follow,
			// deeper, and belong to the top-level vdev
		case len(*vs) == 0:
			return fmt.Errorf("unexpected zpool list line %q: a disk at depth %d outside any vdev", l, depth)
		default:
			last := &(*vs)[len(*vs)-1]
			last.Devices = append(last.Devices, name)
		}
		if class != "" {
			t.Classes[class] = *vs
		}
	}
	return nil
}

// indent counts the spaces a line starts with (its depth in the tree).
func indent(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

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

// Status is a pool's data layout (Tree.Status).
type Status struct {
	Pool  string `json:"pool"`
	State string `json:"state"`
	Vdevs []Vdev `json:"vdevs"` // data vdevs only (logs, cache, spares… are skipped)
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
