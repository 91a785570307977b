package zfs

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
	"github.com/gopve/proxmox/modules-src/lab/tools/statefile"
)

const zfsUsage = `usage: zfs command args ...
where 'command' is one of the following:

	create [-p] [-o property=value] ... <filesystem>
	create [-ps] [-b blocksize] [-o property=value] ... -V <size> <volume>
	destroy [-fnpRrv] <filesystem|volume>
	destroy [-dnpRrv] <filesystem|volume>@<snap>[%<snap>][,...]

	snapshot [-r] [-o property=value] ... <filesystem|volume>@<snap> ...
	rename [-f] <filesystem|volume|snapshot> <filesystem|volume|snapshot>
	clone [-p] [-o property=value] ... <snapshot> <filesystem|volume>
	list [-Hp] [-r|-d max] [-o property[,...]] [-t type[,...]] [filesystem] ...
	set <property=value> ... <filesystem> ...
	get [-rHp] [-d max] [-o "all" | field[,...]]
	    [-t type[,...]] [-s source[,...]]
	    <"all" | property[,...]> [filesystem] ...
	inherit [-r] <property> <filesystem> ...

	mount
	mount [-fvO] [-o opts] <-a | filesystem>
	unmount [-fu] <-a | filesystem|mountpoint>
`

func zusage(msg string) error { return fail(2, "%s\n%s", msg, strings.TrimRight(zfsUsage, "\n")) }

// Zfs runs the zfs stand-in.
func (t *Tool) Zfs() int {
	args := t.Env.Args
	if len(args) == 0 {
		t.Env.Errf("missing command\n%s", zfsUsage)
		return 2
	}
	var err error
	switch args[0] {
	case "get":
		err = t.zget(args[1:])
	case "set":
		err = t.zset(args[1:])
	case "list":
		err = t.zlist(args[1:])
	case "create":
		err = t.zcreate(args[1:])
	case "destroy":
		err = t.zdestroy(args[1:])
	case "inherit":
		err = t.zinherit(args[1:])
	case "snapshot", "snap":
		err = t.zsnapshot(args[1:])
	case "clone":
		err = t.zclone(args[1:])
	case "rename":
		err = t.zrename(args[1:])
	case "mount":
		err = t.zmount(args[1:])
	case "unmount", "umount":
		err = t.zunmount(args[1:])
	default:
		t.Env.Errf("unrecognized command '%s'\n%s", args[0], zfsUsage)
		return 2
	}
	return t.finish(err)
}

// datasets returns the named datasets (all when none named), optionally with descendants.
func (s *State) datasets(names []string, recursive bool) ([]*Pool, []*Dataset, error) {
	var ps []*Pool
	var ds []*Dataset
	add := func(p *Pool, d *Dataset) {
		for _, x := range ds {
			if x == d {
				return
			}
		}
		ps, ds = append(ps, p), append(ds, d)
	}
	if len(names) == 0 {
		for _, p := range s.imported() {
			for _, d := range sortedDatasets(p) {
				add(p, d)
			}
		}
		return ps, ds, nil
	}
	for _, n := range names {
		p, d := s.dataset(n)
		if d == nil {
			return ps, ds, fail(1, "cannot open '%s': dataset does not exist", n)
		}
		add(p, d)
		if recursive {
			for _, c := range sortedDatasets(p) {
				if strings.HasPrefix(c.Name, n+"/") || strings.HasPrefix(c.Name, n+"@") {
					add(p, c)
				}
			}
		}
	}
	return ps, ds, nil
}

func sortedDatasets(p *Pool) []*Dataset {
	out := append([]*Dataset(nil), p.Datasets...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (t *Tool) zget(args []string) error {
	opts, rest, err := cli.Getopt(args, "rHpd:o:t:s:")
	if err != nil {
		return zusage(err.Error())
	}
	if len(rest) == 0 {
		return zusage("missing property argument")
	}
	scripted, parsable, recursive := false, false, false
	fields := []string{"name", "property", "value", "source"}
	var sources map[string]bool
	for _, o := range opts {
		switch o.Name {
		case 'H':
			scripted = true
		case 'p':
			parsable = true
		case 'r', 'd':
			recursive = true
		case 'o':
			if o.Value != "all" {
				fields = strings.Split(o.Value, ",")
				for _, f := range fields {
					switch f {
					case "name", "property", "value", "received", "source":
					default:
						return zusage(fmt.Sprintf("invalid field '%s'", f))
					}
				}
			} else {
				fields = []string{"name", "property", "value", "received", "source"}
			}
		case 's':
			sources = map[string]bool{}
			for _, x := range strings.Split(o.Value, ",") {
				sources[x] = true
			}
		}
	}
	var props []string
	if rest[0] == "all" {
		for _, p := range datasetProps {
			props = append(props, p.name)
		}
	} else {
		for _, n := range strings.Split(rest[0], ",") {
			if def := datasetProp(n); def != nil {
				props = append(props, def.name)
			} else if isUserProp(n) {
				props = append(props, n)
			} else {
				return zusage(fmt.Sprintf("bad property list: invalid property '%s'", n))
			}
		}
	}
	var s State
	if err := statefile.Read(t.Node.StatePath(StateFile), &s); err != nil {
		return err
	}
	pools, dss, derr := s.datasets(rest[1:], recursive)
	var rows []map[string]string
	for i, d := range dss {
		for _, pr := range props {
			v, _ := s.get(pools[i], d, pr)
			if sources != nil {
				kind := v.source
				if strings.HasPrefix(kind, "inherited") {
					kind = "inherited"
				}
				if kind == "-" {
					kind = "none"
				}
				if !sources[kind] {
					continue
				}
			}
			rows = append(rows, map[string]string{"name": d.Name, "property": pr, "value": v.shown(parsable), "received": "-", "source": v.source})
		}
	}
	if len(rows) > 0 { // zfs get prints no header when nothing matched
		writeGetTable(t.Env.Stdout, fields, rows, scripted)
	}
	return derr
}

func (t *Tool) zset(args []string) error {
	var assigns [][2]string
	var targets []string
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok && len(targets) == 0 {
			assigns = append(assigns, [2]string{k, v})
		} else {
			targets = append(targets, a)
		}
	}
	if len(assigns) == 0 {
		if len(args) == 0 {
			return zusage("missing arguments")
		}
		return zusage("missing '=' for property=value argument")
	}
	if len(targets) == 0 {
		return zusage("missing dataset name(s)")
	}
	var mountErr error
	err := t.update(func(s *State) (bool, error) {
		for _, n := range targets {
			_, d := s.dataset(n)
			if d == nil {
				return false, fail(1, "cannot open '%s': dataset does not exist", n)
			}
			for _, kv := range assigns {
				k, v := kv[0], kv[1]
				if isUserProp(k) {
					d.Props[k] = v
					continue
				}
				def := datasetProp(k)
				if def == nil {
					return false, fail(1, "cannot set property for '%s': invalid property '%s'", n, k)
				}
				if def.name == "volsize" {
					if err := setVolsize(d, n, v); err != nil {
						return false, err
					}
					continue
				}
				cv, err := def.validate(v)
				if err != nil {
					return false, fail(1, "cannot set property for '%s': %v", n, err)
				}
				if d.Props == nil {
					d.Props = map[string]string{}
				}
				p, _ := s.dataset(n)
				before, _ := s.get(p, d, def.name)
				d.Props[def.name] = cv
				if def.name == "mountpoint" && (before.value != cv || d.Unmounted) {
					// a new mountpoint remounts (the dataset and its children)
					for _, c := range p.Datasets {
						if c == d || strings.HasPrefix(c.Name, d.Name+"/") {
							if err := t.mount(s, p, c); err != nil && mountErr == nil {
								mountErr = err
							}
						}
					}
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	return mountErr
}

func (t *Tool) zinherit(args []string) error {
	_, rest, err := cli.Getopt(args, "rS")
	if err != nil || len(rest) < 2 {
		return zusage("missing property or dataset argument")
	}
	return t.update(func(s *State) (bool, error) {
		for _, n := range rest[1:] {
			_, d := s.dataset(n)
			if d == nil {
				return false, fail(1, "cannot open '%s': dataset does not exist", n)
			}
			name := rest[0]
			if def := datasetProp(name); def != nil {
				if def.readonly {
					return false, fail(1, "'%s' property is read-only", def.name)
				}
				name = def.name
			} else if !isUserProp(name) {
				return false, fail(1, "invalid property '%s'", name)
			}
			delete(d.Props, name)
		}
		return true, nil
	})
}

var listNumeric = map[string]bool{"used": true, "available": true, "referenced": true, "quota": true,
	"reservation": true, "recordsize": true, "refquota": true, "refreservation": true, "creation": false}

var listHeader = map[string]string{"available": "AVAIL", "referenced": "REFER"}

func (t *Tool) zlist(args []string) error {
	opts, rest, err := cli.Getopt(args, "rHpd:o:t:s:S:")
	if err != nil {
		return zusage(err.Error())
	}
	scripted, parsable, recursive := false, false, false
	fields := []string{"name", "used", "available", "referenced", "mountpoint"}
	types := map[string]bool{"filesystem": true, "volume": true} // listsnapshots=off
	for _, o := range opts {
		switch o.Name {
		case 'H':
			scripted = true
		case 'p':
			parsable = true
		case 'r', 'd':
			recursive = true
		case 't':
			if types, err = typeFilter(o.Value); err != nil {
				return err
			}
		case 'o':
			fields = nil
			for _, f := range strings.Split(o.Value, ",") {
				if f == "name" {
					fields = append(fields, f)
					continue
				}
				def := datasetProp(f)
				if def == nil && !isUserProp(f) {
					return zusage(fmt.Sprintf("bad property list: invalid property '%s'", f))
				}
				if def != nil {
					f = def.name
				}
				fields = append(fields, f)
			}
		}
	}
	var s State
	if err := statefile.Read(t.Node.StatePath(StateFile), &s); err != nil {
		return err
	}
	pools, dss, derr := s.datasets(rest, recursive)
	// A dataset named on the command line is listed whatever its type
	// unless -t says otherwise; recursion and the full list filter by type.
	var keepP []*Pool
	var keepD []*Dataset
	for i, d := range dss {
		if types[d.kind()] {
			keepP, keepD = append(keepP, pools[i]), append(keepD, d)
		}
	}
	pools, dss = keepP, keepD
	if len(dss) == 0 && derr == nil {
		if !scripted {
			t.Env.Errf("no datasets available\n")
		}
		return nil
	}
	var cols []column
	for _, f := range fields {
		h := listHeader[f]
		if h == "" {
			h = strings.ToUpper(f)
		}
		cols = append(cols, column{header: h, right: listNumeric[f], min: map[bool]int{true: 5}[listNumeric[f]]})
	}
	var rows [][]string
	for i, d := range dss {
		var r []string
		for _, f := range fields {
			if f == "name" {
				r = append(r, d.Name)
				continue
			}
			v, _ := s.get(pools[i], d, f)
			r = append(r, v.shown(parsable))
		}
		rows = append(rows, r)
	}
	if len(rows) > 0 {
		writeTable(t.Env.Stdout, cols, rows, scripted, false)
	}
	return derr
}

func (t *Tool) zcreate(args []string) error {
	opts, rest, err := cli.Getopt(args, "psuo:V:b:")
	if err != nil || len(rest) != 1 {
		return zusage("missing filesystem argument")
	}
	parents, sparse := false, false
	var volsize, blocksize uint64
	props := map[string]string{}
	for _, o := range opts {
		switch o.Name {
		case 'p':
			parents = true
		case 's':
			sparse = true
		case 'V':
			if volsize, err = parseSize(o.Value); err != nil || volsize == 0 {
				return fail(1, "bad volume size '%s': %s", o.Value, "bad numeric value '"+o.Value+"'")
			}
		case 'b':
			n, err := parseSize(o.Value)
			if err != nil || n < 512 || n > 128<<10 || n&(n-1) != 0 {
				return fail(1, "cannot create '%s': 'volblocksize' must be power of 2 from 512B to 128KB", rest[0])
			}
			blocksize = n
		case 'o':
			k, v, ok := strings.Cut(o.Value, "=")
			if !ok {
				return zusage("missing '=' for property=value argument")
			}
			def := datasetProp(k)
			if def == nil && !isUserProp(k) {
				return fail(1, "cannot create '%s': invalid property '%s'", rest[0], k)
			}
			if def != nil {
				cv, err := def.validate(v)
				if err != nil {
					return fail(1, "cannot create '%s': %v", rest[0], err)
				}
				k, v = def.name, cv
			}
			props[k] = v
		}
	}
	name := rest[0]
	if sparse && volsize == 0 || blocksize != 0 && volsize == 0 {
		return zusage("'-s' and '-b' can only be used when creating a volume")
	}
	if volsize != 0 {
		bs := blocksize
		if bs == 0 {
			bs = defaultVolBlockSize
		}
		if volsize%bs != 0 {
			// Reconstruction of libzfs's zfs_valid_proplist check.
			return fail(1, "cannot create '%s': volume size must be a multiple of volume block size", name)
		}
		props["volsize"] = formatBytes(volsize)
		if !sparse {
			if _, ok := props["refreservation"]; !ok {
				props["refreservation"] = formatBytes(volReservation(volsize, bs))
			}
		}
	}
	var mountErr error
	err = t.update(func(s *State) (bool, error) {
		p, d := s.dataset(name)
		if p == nil {
			poolName, _, _ := strings.Cut(name, "/")
			return false, fail(1, "cannot create '%s': no such pool '%s'", name, poolName)
		}
		if d != nil {
			if parents {
				return false, nil
			}
			return false, fail(1, "cannot create '%s': dataset already exists", name)
		}
		if !strings.Contains(name, "/") {
			return false, fail(1, "cannot create '%s': missing dataset name", name)
		}
		var chain []string
		for n := parent(name); n != p.Name; n = parent(n) {
			if _, a := s.dataset(n); a == nil {
				chain = append([]string{n}, chain...)
			}
		}
		if len(chain) > 0 && !parents {
			return false, fail(1, "cannot create '%s': parent does not exist", name)
		}
		for _, n := range chain {
			p.Datasets = append(p.Datasets, &Dataset{Name: n, Props: map[string]string{}, Created: t.Now()})
		}
		if _, par := s.dataset(parent(name)); par != nil && par.Type != "" {
			return false, fail(1, "cannot create '%s': parent is not a filesystem", name)
		}
		nd := &Dataset{Name: name, Props: props, Created: t.Now()}
		if volsize != 0 {
			nd.Type, nd.BlockSize = "volume", blocksize
			if avail := s.avail(p, &Dataset{Name: p.Name}); !sparse && volReservation(volsize, max(blocksize, defaultVolBlockSize)) > avail {
				return false, fail(1, "cannot create '%s': out of space", name)
			}
			p.Datasets = append(p.Datasets, nd)
			return true, nil
		}
		p.Datasets = append(p.Datasets, nd)
		if err := t.mount(s, p, nd); err != nil {
			mountErr = fail(1, "%v\nfilesystem successfully created, but not mounted", err)
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	return mountErr
}

func (t *Tool) zdestroy(args []string) error {
	opts, rest, err := cli.Getopt(args, "frRnpv")
	if err != nil || len(rest) != 1 {
		return zusage("missing dataset argument")
	}
	recursive, dryRun := false, false
	for _, o := range opts {
		switch o.Name {
		case 'r', 'R':
			recursive = true
		case 'n':
			dryRun = true
		}
	}
	name := rest[0]
	return t.update(func(s *State) (bool, error) {
		p, d := s.dataset(name)
		if d == nil {
			return false, fail(1, "cannot open '%s': dataset does not exist", name)
		}
		if d.Name == p.Name {
			return false, fail(1, "cannot destroy '%s': operation does not apply to pools\nuse 'zfs destroy -r %s' to destroy all datasets in the pool\nuse 'zpool destroy %s' to destroy the pool itself", name, name, name)
		}
		var keep []*Dataset
		var kids, clones []string
		for _, x := range p.Datasets {
			if x.Origin != "" && (x.Origin == name || strings.HasPrefix(x.Origin, name+"@") || strings.HasPrefix(x.Origin, name+"/")) {
				clones = append(clones, x.Name)
			}
		}
		if len(clones) > 0 {
			what := "filesystem"
			if d.Type == "snapshot" {
				what = "snapshot"
			} else if d.Type == "volume" {
				what = "volume"
			}
			if what == "snapshot" {
				return false, fail(1, "cannot destroy '%s': snapshot has dependent clones\nuse '-R' to destroy the following datasets:\n%s", name, strings.Join(clones, "\n"))
			}
			// Reconstruction: a dataset whose snapshot has clones.
			return false, fail(1, "cannot destroy '%s': %s has dependent clones\nuse '-R' to destroy the following datasets:\n%s", name, what, strings.Join(clones, "\n"))
		}
		for _, x := range p.Datasets {
			switch {
			case x == d:
			case strings.HasPrefix(x.Name, name+"/") || strings.HasPrefix(x.Name, name+"@"):
				kids = append(kids, x.Name)
				if !recursive {
					keep = append(keep, x)
				}
			default:
				keep = append(keep, x)
			}
		}
		if len(kids) > 0 && !recursive {
			return false, fail(1, "cannot destroy '%s': %s has children\nuse '-r' to destroy the following datasets:\n%s", name, d.kind(), strings.Join(kids, "\n"))
		}
		if dryRun { // -n: say what would go, change nothing
			for _, k := range append(kids, name) {
				t.Env.Outf("would destroy %s\n", k)
			}
			return false, nil
		}
		p.Datasets = keep
		return true, nil
	})
}

// setVolsize is `zfs set volsize=`: volumes only; a non-sparse volume's
// refreservation follows the new size when it was the automatic one
// (libzfs zfs_fix_auto_resv). ZFS itself lets a volume shrink; PVE refuses
// that before it gets here.
func setVolsize(d *Dataset, name, v string) error {
	if d.Type != "volume" {
		return fail(1, "cannot set property for '%s': 'volsize' does not apply to datasets of this type", name)
	}
	n, err := parseSize(v)
	if err != nil || n == 0 {
		return fail(1, "cannot set property for '%s': bad numeric value '%s'", name, v)
	}
	bs := d.BlockSize
	if bs == 0 {
		bs = defaultVolBlockSize
	}
	if n%bs != 0 {
		return fail(1, "cannot set property for '%s': 'volsize' must be a multiple of volume block size (%s)", name, Nicenum(bs))
	}
	old, _ := parseSize(d.Props["volsize"])
	if r := d.refreservation(); r != 0 && r == volReservation(old, bs) {
		d.Props["refreservation"] = formatBytes(volReservation(n, bs))
	}
	d.Props["volsize"] = formatBytes(n)
	return nil
}

// formatBytes keeps a size exactly (props are read back with parseSize).
func formatBytes(n uint64) string { return strconv.FormatUint(n, 10) }
