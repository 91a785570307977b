package zfs

// What zpool prints: list (and list -v's vdev rows), get and set, status
// and its config tree, in OpenZFS's layouts.

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
	"github.com/gopve/proxmox/modules-src/lab/tools/statefile"
)

var listDefault = []string{"name", "size", "allocated", "free", "checkpoint", "expandsize", "fragmentation", "capacity", "dedupratio", "health", "altroot"}

var poolColumn = map[string]column{
	"name": {header: "NAME"}, "size": {header: "SIZE", right: true, min: 5}, "allocated": {header: "ALLOC", right: true, min: 5},
	"free": {header: "FREE", right: true, min: 5}, "checkpoint": {header: "CKPOINT", right: true, min: 5},
	"expandsize": {header: "EXPANDSZ", right: true, min: 5}, "fragmentation": {header: "FRAG", right: true, min: 5},
	"capacity": {header: "CAP", right: true, min: 5}, "dedupratio": {header: "DEDUP", right: true, min: 5},
	"health": {header: "HEALTH", right: true, min: 8}, "altroot": {header: "ALTROOT"}, "guid": {header: "GUID"},
	"ashift": {header: "ASHIFT", right: true, min: 5},
}

func (t *Tool) list(args []string) error {
	opts, rest, err := cli.Getopt(args, "gHLpPvo:T:")
	if err != nil {
		return usage(err.Error())
	}
	scripted, parsable, verbose, full, resolve := false, false, false, false, false
	fields := listDefault
	for _, o := range opts {
		switch o.Name {
		case 'H':
			scripted = true
		case 'p':
			parsable = true
		case 'v':
			verbose = true
		case 'P':
			full = true
		case 'L':
			resolve = true
		case 'o':
			fields = nil
			for _, f := range strings.Split(o.Value, ",") {
				n, ok := poolPropName(f)
				if !ok && f != "name" {
					return usage(fmt.Sprintf("bad property list: invalid property '%s'", f))
				}
				fields = append(fields, n)
			}
		}
	}
	var s State
	if err := statefile.Read(t.Node.StatePath(StateFile), &s); err != nil {
		return err
	}
	pools, perr := t.selectPools(&s, rest)
	if len(pools) == 0 && perr == nil {
		if !scripted { // zpool_do_list says nothing in scripted mode
			t.Env.Outf("no pools available\n")
		}
		return nil
	}
	var cols []column
	for _, f := range fields {
		c, ok := poolColumn[f]
		if !ok {
			c = column{header: strings.ToUpper(f)}
		}
		cols = append(cols, c)
	}
	var rows [][]string
	for _, p := range pools {
		var r []string
		for _, f := range fields {
			if f == "name" {
				r = append(r, p.Name)
				continue
			}
			r = append(r, poolValue(p, f, parsable))
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return perr
	}
	if !verbose {
		writeTable(t.Env.Stdout, cols, rows, scripted, false)
		return perr
	}
	// -v: the name column as wide as the widest pool or vdev name with
	// its indentation (get_namewidth_list, at least 9), each pool's vdevs
	// after its line (list_callback → print_list_stats)
	trees := make([][]vdevRow, len(pools))
	cols[0].min = 9
	for i, p := range pools {
		trees[i] = listRows(p, full, resolve)
		for _, r := range trees[i] {
			cols[0].min = max(cols[0].min, r.depth+len(r.name))
		}
	}
	writeTableWith(t.Env.Stdout, cols, rows, scripted, false, func(i int) {
		for _, r := range trees[i] {
			r.write(t.Env.Stdout, cols[0].min, scripted, parsable)
		}
	})
	return perr
}

// vdevRow is one vdev's line of `zpool list -v`.
type vdevRow struct {
	depth              int
	name               string
	psize, space, used uint64 // used and space only for a top-level vdev
	toplevel           bool
}

// listRows is the pool's vdev tree as print_list_stats walks it: a group
// (mirror-0, raidz1-0) at depth 2 with its disks at 4, or each disk of a
// stripe at depth 2. The lab has no log, cache, special or spare vdevs, so
// no class lines. Reconstruction (docs/lab-tools.md): a top-level vdev's
// space is the pool's size split over its top-level vdevs and its
// allocation the pool's split likewise; a disk's SIZE is its device size
// (vs_pspace; the lab does not partition whole disks).
func listRows(p *Pool, full, resolve bool) []vdevRow {
	alloc := p.getProp("allocated").raw
	var rows []vdevRow
	if p.Layout == "mirror" || strings.HasPrefix(p.Layout, "raidz") {
		rows = append(rows, vdevRow{depth: 2, name: p.Layout + "-0", space: p.Size(), used: alloc, toplevel: true})
		for _, d := range p.Devices {
			rows = append(rows, vdevRow{depth: 4, name: vdevName(d, full, resolve), psize: uint64(d.Size)})
		}
		return rows
	}
	n := uint64(len(p.Devices))
	for i, d := range p.Devices {
		used := alloc / n
		if i == 0 {
			used += alloc % n
		}
		rows = append(rows, vdevRow{depth: 2, name: vdevName(d, full, resolve), psize: uint64(d.Size), space: p.asize(d), used: used, toplevel: true})
	}
	return rows
}

// write prints the row as print_list_stats does: the name indented by its
// depth and padded to width, then its fixed columns SIZE ALLOC FREE
// CKPOINT EXPANDSZ FRAG CAP DEDUP HEALTH (whatever -o asked for), each as
// print_one_column prints it: "-" for a value a vdev that is not top-level
// cannot have, for a zero size, checkpoint or expand size, and always for
// DEDUP; with -p exact numbers and CAP in whole percent; with -H a tab
// before every cell, the name not indented.
func (r vdevRow) write(w io.Writer, width int, scripted, parsable bool) {
	num := func(v uint64, valid bool) string {
		switch {
		case !valid || v == 0:
			return "-"
		case parsable:
			return strconv.FormatUint(v, 10)
		}
		return Nicenum(v)
	}
	size := r.space
	if r.psize != 0 {
		size = r.psize // vs_pspace, when the vdev has one
	}
	frag, capa := "-", "-"
	if r.toplevel {
		frag = "0"
		permyriad := r.used * 10000 / max(r.space, 1)
		switch {
		case parsable:
			capa = strconv.FormatUint(permyriad/100, 10)
		case permyriad < 1000:
			capa = fmt.Sprintf("%1.2f%%", float64(permyriad)/100)
		case permyriad < 10000:
			capa = fmt.Sprintf("%2.1f%%", float64(permyriad)/100)
		default:
			capa = fmt.Sprintf("%3.0f%%", float64(permyriad)/100)
		}
		if !parsable {
			frag += "%"
		}
	}
	cells := []string{num(size, true), num(r.used, r.toplevel), num(r.space-r.used, r.toplevel), "-", "-", frag, capa, "-", "ONLINE"}
	widths := []int{5, 5, 5, 7, 8, 5, 5, 5, 8}
	var b strings.Builder
	if scripted {
		b.WriteString("\t" + r.name)
		for _, c := range cells {
			b.WriteString("\t" + c)
		}
	} else {
		fmt.Fprintf(&b, "%*s%-*s", r.depth, "", width-r.depth, r.name)
		for i, c := range cells {
			fmt.Fprintf(&b, "  %*s", widths[i], c)
		}
	}
	fmt.Fprintln(w, b.String())
}

func poolValue(p *Pool, f string, parsable bool) string {
	return p.getProp(f).shown(parsable)
}

func (t *Tool) poolGet(args []string) error {
	opts, rest, err := cli.Getopt(args, "Hpo:")
	if err != nil {
		return usage(err.Error())
	}
	if len(rest) == 0 {
		return usage("missing property argument")
	}
	scripted, parsable := false, false
	fields := []string{"name", "property", "value", "source"}
	for _, o := range opts {
		switch o.Name {
		case 'H':
			scripted = true
		case 'p':
			parsable = true
		case 'o':
			if o.Value != "all" {
				fields = strings.Split(o.Value, ",")
			}
		}
	}
	var props []string
	if rest[0] == "all" {
		props = poolPropNames
	} else {
		for _, n := range strings.Split(rest[0], ",") {
			pn, ok := poolPropName(n)
			if !ok && !isUserProp(n) {
				return usage(fmt.Sprintf("bad property list: invalid property '%s'", n))
			}
			props = append(props, pn)
		}
	}
	var s State
	if err := statefile.Read(t.Node.StatePath(StateFile), &s); err != nil {
		return err
	}
	pools, perr := t.selectPools(&s, rest[1:])
	if perr != nil {
		return perr
	}
	var rows []map[string]string
	for _, p := range pools {
		for _, pr := range props {
			var v valueSource
			if isUserProp(pr) {
				v = valueSource{value: "-", source: "-"}
				if x, ok := p.Props[pr]; ok {
					v = valueSource{value: x, source: "local"}
				}
			} else {
				v = p.getProp(pr)
			}
			rows = append(rows, map[string]string{"name": p.Name, "property": pr, "value": v.shown(parsable), "source": v.source})
		}
	}
	writeGetTable(t.Env.Stdout, fields, rows, scripted)
	return nil
}

func (t *Tool) poolSet(args []string) error {
	if len(args) != 2 {
		return usage("missing property=value argument")
	}
	k, v, ok := strings.Cut(args[0], "=")
	if !ok {
		return usage("missing '=' for property=value argument")
	}
	return t.update(func(s *State) (bool, error) {
		p := s.pool(args[1])
		if p == nil {
			return false, fail(1, "cannot open '%s': no such pool", args[1])
		}
		if isUserProp(k) {
			p.Props[k] = v
			return true, nil
		}
		name, known := poolPropName(k)
		def, settable := poolSettable[name]
		switch {
		case !known:
			return false, fail(1, "cannot set property for '%s': invalid property '%s'", p.Name, k)
		case !settable || name == "altroot":
			return false, fail(1, "cannot set property for '%s': property '%s' is readonly", p.Name, name)
		}
		cv, err := def.validate(v)
		if err != nil {
			return false, fail(1, "cannot set property for '%s': %v", p.Name, err)
		}
		// Z4: like real ZFS, `zpool set ashift` only changes the property used
		// for vdevs added later; existing vdevs keep the ashift of creation.
		if p.Props == nil {
			p.Props = map[string]string{}
		}
		p.Props[name] = cv
		return true, nil
	})
}

func (t *Tool) status(args []string) error {
	opts, rest, err := cli.Getopt(args, "xPLvgpt")
	if err != nil {
		return usage(err.Error())
	}
	full, onlyBad, resolve := false, false, false
	for _, o := range opts {
		switch o.Name {
		case 'P':
			full = true
		case 'L':
			resolve = true
		case 'x':
			onlyBad = true
		}
	}
	var s State
	if err := statefile.Read(t.Node.StatePath(StateFile), &s); err != nil {
		return err
	}
	pools, perr := t.selectPools(&s, rest)
	if perr != nil {
		return perr
	}
	if len(pools) == 0 {
		t.Env.Outf("no pools available\n")
		return nil
	}
	if onlyBad {
		t.Env.Outf("all pools are healthy\n")
		return nil
	}
	for i, p := range pools {
		if i > 0 {
			t.Env.Outf("\n")
		}
		t.Env.Outf("  pool: %s\n state: ONLINE\n", p.Name)
		if ts, ok := p.Props["lab:lastscrub"]; ok {
			sec, _ := strconv.ParseInt(ts, 10, 64)
			t.Env.Outf("  scan: scrub repaired 0B in 00:00:01 with 0 errors on %s\n", time.Unix(sec, 0).UTC().Format("Mon Jan _2 15:04:05 2006"))
		}
		t.Env.Outf("config:\n\n")
		t.writeConfig(p, full, resolve, true)
		t.Env.Outf("\nerrors: No known data errors\n")
	}
	return nil
}

// vdevName is how zpool status names a leaf: the basename of the recorded
// path, the full path with -P, the symlink target with -L.
func vdevName(d Device, full, resolve bool) string {
	p := d.Path
	if resolve {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
	}
	if full {
		return p
	}
	return filepath.Base(p)
}

// writeConfig prints the vdev tree as print_status_config does: a tab,
// the name indented by depth and padded to the widest name (at least 10).
func (t *Tool) writeConfig(p *Pool, full, resolve, counters bool) {
	type row struct {
		depth int
		name  string
	}
	rows := []row{{0, p.Name}}
	depth := 2
	switch {
	case p.Layout == "mirror" || strings.HasPrefix(p.Layout, "raidz"):
		rows = append(rows, row{2, p.Layout + "-0"})
		depth = 4
	}
	for _, d := range p.Devices {
		rows = append(rows, row{depth, vdevName(d, full, resolve)})
	}
	width := 10
	for _, r := range rows {
		width = max(width, r.depth+len(r.name))
	}
	if counters {
		t.Env.Outf("\t%-*s  %-8s %5s %5s %5s\n", width, "NAME", "STATE", "READ", "WRITE", "CKSUM")
	}
	for _, r := range rows {
		if counters {
			t.Env.Outf("\t%*s%-*s  %-8s %5s %5s %5s\n", r.depth, "", width-r.depth, r.name, "ONLINE", "0", "0", "0")
		} else {
			t.Env.Outf("\t%*s%-*s  %s\n", r.depth, "", width-r.depth, r.name, "ONLINE")
		}
	}
}
