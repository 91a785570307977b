package zfs

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
	"github.com/gopve/proxmox/modules-src/lab/tools/nodecfg"
	"github.com/gopve/proxmox/modules-src/lab/tools/statefile"
	"github.com/gopve/proxmox/modules-src/lab/tools/zfslabel"
)

// StateFile is the name of the ZFS state under state_dir.
const StateFile = "zfs.json"

// Tool runs zpool/zfs for one node.
type Tool struct {
	Env  *cli.Env
	Node *nodecfg.Node
	Now  func() time.Time
}

func (t *Tool) update(fn func(s *State) (bool, error)) error {
	var s State
	return statefile.Update(t.Node.StatePath(StateFile), &s, func() (bool, error) { return fn(&s) })
}

// exitErr carries an exit status through update's error path.
type exitErr struct {
	code int
	msg  string
}

func (e *exitErr) Error() string { return e.msg }

func fail(code int, format string, a ...any) error {
	return &exitErr{code: code, msg: fmt.Sprintf(format, a...)}
}

func (t *Tool) finish(err error) int {
	if err == nil {
		return 0
	}
	if e, ok := err.(*exitErr); ok {
		if e.msg != "" {
			return t.Env.Fail(e.code, "%s", e.msg)
		}
		return e.code
	}
	return t.Env.Fail(1, "%v", err)
}

const zpoolUsage = `usage: zpool command args ...
where 'command' is one of the following:

	create [-fnd] [-o property=value] ... 
	    [-O file-system-property=value] ... 
	    [-m mountpoint] [-R root] <pool> <vdev> ...
	destroy [-f] <pool>
	export [-af] <pool> ...
	get [-Hp] [-o "all" | field[,...]] <"all" | property[,...]> [pool] ...
	import [-d dir] [-f] [pool | id]
	labelclear [-f] <vdev>
	list [-gHLpPv] [-o property[,...]] [pool] ...
	scrub [-s | -p] <pool> ...
	set <property=value> <pool>
	status [-xP] [pool] ...
`

// Zpool runs the zpool stand-in.
func (t *Tool) Zpool() int {
	args := t.Env.Args
	if len(args) == 0 {
		t.Env.Errf("missing command\n%s", zpoolUsage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "create":
		err = t.create(rest)
	case "list":
		err = t.list(rest)
	case "status":
		err = t.status(rest)
	case "get":
		err = t.poolGet(rest)
	case "set":
		err = t.poolSet(rest)
	case "destroy":
		err = t.destroy(rest)
	case "export":
		err = t.export(rest)
	case "import":
		err = t.importPool(rest)
	case "scrub":
		err = t.scrub(rest)
	case "labelclear":
		err = t.labelclear(rest)
	case "-?", "help":
		t.Env.Outf("%s", zpoolUsage)
		return 0
	default:
		t.Env.Errf("unrecognized command '%s'\n%s", cmd, zpoolUsage)
		return 2
	}
	return t.finish(err)
}

func usage(msg string) error { return fail(2, "%s\n%s", msg, strings.TrimRight(zpoolUsage, "\n")) }

var reservedPool = regexp.MustCompile(`^(mirror|raidz[0-9]*|draid[0-9]*|spare|log|cache|special|dedup|c[0-9].*)$`)

func checkPoolName(name string) error {
	if reservedPool.MatchString(name) {
		return fail(1, "cannot create '%s': name is reserved", name)
	}
	if name == "" || !(name[0] >= 'a' && name[0] <= 'z' || name[0] >= 'A' && name[0] <= 'Z') {
		return fail(1, "cannot create '%s': name must begin with a letter", name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_-.: ", c)) {
			return fail(1, "cannot create '%s': invalid character '%c' in pool name", name, c)
		}
	}
	return nil
}

var minDevices = map[string]int{"mirror": 2, "raidz1": 2, "raidz2": 3, "raidz3": 4}

// createRequest is a parsed `zpool create` command line.
type createRequest struct {
	name          string
	force, dryRun bool
	poolProps     map[string]string // -o
	fsProps       map[string]string // -O, canonical values
	mountpoint    string            // -m
	layout        string            // stripe, mirror, raidz1…
	devArgs       []string          // the devices as given
}

// create is `zpool create`: parse the command line, resolve the devices,
// then, under the state lock, check them and record the pool (or, with -n,
// only print the layout), label the devices and mount the root dataset.
func (t *Tool) create(args []string) error {
	req, err := parseCreate(args)
	if err != nil {
		return err
	}
	leaves, err := resolveLeaves(req.devArgs)
	if err != nil {
		return err
	}
	labelled := false
	var mountErr error
	err = t.update(func(s *State) (bool, error) {
		if err := t.checkNewVdevs(s, req, leaves); err != nil {
			return false, err
		}
		if req.dryRun {
			t.printLayout(req, leaves)
			return false, nil
		}
		p, err := t.newPool(req, leaves)
		if err != nil {
			return false, err
		}
		labelled = true
		if err := t.writeLabels(p, zfslabel.StateActive, false); err != nil {
			return false, err
		}
		s.addPool(p)
		mountErr = t.mount(s, p, p.Datasets[0])
		return true, nil
	})
	if err == nil && mountErr != nil {
		// The pool exists; only its mount failed (real zpool exits 1 too).
		return mountErr
	}
	if err != nil && labelled {
		// The pool was not recorded: leave no half-created pool behind.
		for _, l := range leaves {
			zfslabel.Wipe(l.arg)
		}
	}
	return err
}

// parseCreate reads options, the pool name and the vdev specification,
// validating properties as zpool does before it touches any device.
func parseCreate(args []string) (*createRequest, error) {
	opts, rest, err := cli.Getopt(args, "fndo:O:m:R:t:")
	if err != nil {
		return nil, usage(err.Error())
	}
	req := &createRequest{poolProps: map[string]string{}, fsProps: map[string]string{}}
	for _, o := range opts {
		switch o.Name {
		case 'f':
			req.force = true
		case 'n':
			req.dryRun = true
		case 'o', 'O':
			if err := req.setProp(o.Name, o.Value, firstOr(rest)); err != nil {
				return nil, err
			}
		case 'm':
			req.mountpoint = o.Value
		}
	}
	if len(rest) == 0 {
		return nil, usage("missing pool name argument")
	}
	if len(rest) == 1 {
		return nil, usage("missing vdev specification")
	}
	req.name = rest[0]
	if err := checkPoolName(req.name); err != nil {
		return nil, err
	}
	if req.layout, req.devArgs, err = parseVdevSpec(rest[1:]); err != nil {
		return nil, err
	}
	return req, nil
}

// setProp records one -o (pool) or -O (root dataset) property=value.
func (req *createRequest) setProp(flag byte, kv, pool string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok {
		return usage("missing '=' for property=value argument")
	}
	if flag == 'o' {
		def, ok := poolSettable[k]
		if !ok {
			return fail(2, "property '%s' is not a valid pool or vdev property", k)
		}
		cv, err := def.validate(v)
		if err != nil {
			return fail(1, "cannot create '%s': %v", pool, err)
		}
		req.poolProps[k] = cv
		return nil
	}
	def := datasetProp(k)
	if def == nil && !isUserProp(k) {
		return fail(1, "cannot create '%s': invalid property '%s'", pool, k)
	}
	if def != nil {
		cv, err := def.validate(v)
		if err != nil {
			return fail(1, "cannot create '%s': %v", pool, err)
		}
		k, v = def.name, cv
	}
	req.fsProps[k] = v
	return nil
}

// parseVdevSpec reads one optional layout keyword and its devices (the lab
// simulates one top-level vdev group).
func parseVdevSpec(spec []string) (layout string, devArgs []string, err error) {
	layout, devArgs = "stripe", spec
	switch kw := devArgs[0]; kw {
	case "mirror", "raidz", "raidz1", "raidz2", "raidz3":
		layout = kw
		if kw == "raidz" {
			layout = "raidz1"
		}
		devArgs = devArgs[1:]
	}
	for _, a := range devArgs {
		if _, ok := minDevices[a]; ok || a == "raidz" || a == "log" || a == "cache" || a == "spare" || a == "special" {
			return "", nil, fail(1, "lab zpool: only one top-level vdev group is simulated (got '%s' after the first)", a)
		}
	}
	if need := minDevices[layout]; len(devArgs) < max(need, 1) {
		return "", nil, fail(1, "invalid vdev specification: %s requires at least %d devices", layout, need)
	}
	return layout, devArgs, nil
}

// resolveLeaves resolves each device argument (path, by-id name, file).
func resolveLeaves(devArgs []string) ([]*leaf, error) {
	var leaves []*leaf
	for _, a := range devArgs {
		l, err := resolveLeaf(a)
		if err != nil {
			return nil, fail(1, "%v", err)
		}
		leaves = append(leaves, l)
	}
	return leaves, nil
}

// checkNewVdevs refuses devices in use (unless -f may override it), the
// same device twice, devices under 64 MiB and an existing pool name.
func (t *Tool) checkNewVdevs(s *State, req *createRequest, leaves []*leaf) error {
	var vdevErrs []string
	for _, l := range leaves {
		if msg, _ := t.inUse(s, l, req.force); msg != "" {
			vdevErrs = append(vdevErrs, msg)
		}
	}
	if len(vdevErrs) > 0 {
		head := "use '-f' to override the following errors:"
		if req.force {
			head = "the following errors must be manually repaired:"
		}
		return fail(1, "invalid vdev specification\n%s\n%s", head, strings.Join(vdevErrs, "\n"))
	}
	seen := map[string]bool{}
	for _, l := range leaves {
		if seen[l.resolved] {
			return fail(1, "cannot create '%s': one or more vdevs refer to the same device, or one of\nthe devices is part of an active md or lvm device", req.name)
		}
		seen[l.resolved] = true
		if l.size < zfslabel.MinDeviceBytes {
			return fail(1, "cannot create '%s': one or more devices is less than the minimum size (64M)", req.name)
		}
	}
	if s.pool(req.name) != nil {
		return fail(1, "cannot create '%s': pool already exists", req.name)
	}
	return nil
}

// printLayout is `zpool create -n`: the layout, nothing written.
func (t *Tool) printLayout(req *createRequest, leaves []*leaf) {
	t.Env.Outf("would create '%s' with the following layout:\n\n\t%s\n", req.name, req.name)
	indent := "\t  "
	if req.layout != "stripe" {
		t.Env.Outf("\t  %s\n", strings.TrimSuffix(req.layout, "1"))
		indent = "\t    "
	}
	for _, l := range leaves {
		t.Env.Outf("%s%s\n", indent, filepath.Base(l.arg))
	}
}

// newPool builds the pool record and its root dataset.
func (t *Tool) newPool(req *createRequest, leaves []*leaf) (*Pool, error) {
	now := t.Now()
	p := &Pool{Name: req.name, GUID: newGUID(), TopGUID: newGUID(), Layout: req.layout, Props: req.poolProps,
		Created: now, TXG: 4}
	// Z4: without -o ashift, ZFS takes the largest physical sector size
	// of the devices (512-byte sectors give ashift 9, not 12).
	for _, l := range leaves {
		p.Ashift = max(p.Ashift, l.ashift)
	}
	if a, ok := req.poolProps["ashift"]; ok && a != "0" {
		p.Ashift, _ = strconv.Atoi(a)
	}
	if req.layout == "stripe" || len(leaves) == 1 {
		p.TopGUID = 0
	}
	for _, l := range leaves {
		p.Devices = append(p.Devices, Device{Path: l.arg, Resolved: l.resolved, Size: l.size, GUID: newGUID(), File: l.file})
	}
	root := &Dataset{Name: req.name, Props: req.fsProps, Created: now}
	if req.mountpoint != "" {
		if _, err := datasetProp("mountpoint").validate(req.mountpoint); err != nil {
			return nil, fail(1, "cannot create '%s': %v", req.name, err)
		}
		root.Props["mountpoint"] = req.mountpoint
	}
	p.Datasets = []*Dataset{root}
	return p, nil
}

// addPool records p, dropping earlier exported or destroyed records of the
// same devices.
func (s *State) addPool(p *Pool) {
	var keep []*Pool
	for _, o := range s.Pools {
		if !sharesDevice(o, p) {
			keep = append(keep, o)
		}
	}
	s.Pools = append(keep, p)
}

func firstOr(a []string) string {
	if len(a) > 0 {
		return a[0]
	}
	return ""
}

func sharesDevice(a, b *Pool) bool {
	for _, x := range a.Devices {
		for _, y := range b.Devices {
			if x.Resolved == y.Resolved {
				return true
			}
		}
	}
	return false
}

// inUse mirrors check_slice/check_file: a device with a foreign signature
// needs -f; a member of an active pool can never be reused. hard reports
// an error -f cannot override.
func (t *Tool) inUse(s *State, l *leaf, force bool) (msg string, hard bool) {
	typ := signature(l.arg)
	if typ == "" {
		return "", false
	}
	if typ != "zfs_member" {
		if force {
			return "", false
		}
		return fmt.Sprintf("%s contains a filesystem of type '%s'", l.arg, typ), false
	}
	lab, _ := zfslabel.Read(l.arg)
	if lab == nil {
		return "", false
	}
	desc := ""
	switch lab.State {
	case zfslabel.StateActive:
		desc = "potentially active"
		for _, p := range s.Pools {
			if p.Name == lab.Pool && p.GUID == lab.PoolGUID && !p.Exported {
				desc = "active"
			}
		}
	case zfslabel.StateExported:
		desc = "exported"
	case zfslabel.StateDestroyed:
		return "", false
	default:
		desc = "unknown"
	}
	if desc == "active" {
		return fmt.Sprintf("%s is part of active pool '%s'", l.arg, lab.Pool), true
	}
	if force {
		return "", false
	}
	return fmt.Sprintf("%s is part of %s pool '%s'", l.arg, desc, lab.Pool), false
}

// writeLabels writes the full labels of every device of p (only those that
// still carry p's label when onlyOwn is set, for export/destroy/import: a
// device reused by another pool since keeps that pool's label).
func (t *Tool) writeLabels(p *Pool, state uint64, onlyOwn bool) error {
	host := t.Node.Node
	var kids []zfslabel.Child
	var asize uint64
	for _, d := range p.Devices {
		kids = append(kids, zfslabel.Child{GUID: d.GUID, Path: d.Path, Type: leafKind(d)})
		asize += p.asize(d)
	}
	vtype := ""
	var nparity uint64
	switch {
	case p.Layout == "mirror":
		vtype = "mirror"
	case strings.HasPrefix(p.Layout, "raidz"):
		vtype, nparity = "raidz", uint64(p.parity())
	}
	for _, d := range p.Devices {
		if onlyOwn {
			if cur, _ := zfslabel.Read(d.Path); cur == nil || cur.PoolGUID != p.GUID {
				continue
			}
		}
		l := &zfslabel.Label{Pool: p.Name, PoolGUID: p.GUID, GUID: d.GUID, TopGUID: p.TopGUID, State: state,
			TXG: p.TXG, Hostname: host, Path: d.Path, Ashift: uint64(p.Ashift), VdevType: vtype, Nparity: nparity,
			Children: kids, Asize: asize, Timestamp: t.Now()}
		if vtype == "" {
			l.TopGUID, l.VdevType, l.Asize = d.GUID, leafKind(d), p.asize(d)
		}
		if err := zfslabel.Write(d.Path, l); err != nil {
			return fail(1, "cannot write the label of %s for pool '%s': %v", d.Path, p.Name, err)
		}
	}
	return nil
}

func leafKind(d Device) string {
	if d.File {
		return "file"
	}
	return "disk"
}

// relabel records a pool state change (export, destroy, import) in the
// labels of the devices that still belong to the pool.
func (t *Tool) relabel(p *Pool, state uint64) error {
	p.TXG++
	return t.writeLabels(p, state, true)
}

func (t *Tool) destroy(args []string) error {
	_, rest, err := cli.Getopt(args, "f")
	if err != nil {
		return usage(err.Error())
	}
	if len(rest) != 1 {
		return usage("missing pool argument")
	}
	return t.update(func(s *State) (bool, error) {
		p := s.pool(rest[0])
		if p == nil {
			return false, fail(1, "cannot open '%s': no such pool", rest[0])
		}
		if err := t.relabel(p, zfslabel.StateDestroyed); err != nil {
			return false, err
		}
		for i, o := range s.Pools {
			if o == p {
				s.Pools = append(s.Pools[:i], s.Pools[i+1:]...)
				break
			}
		}
		return true, nil
	})
}

func (t *Tool) export(args []string) error {
	_, rest, err := cli.Getopt(args, "af")
	if err != nil {
		return usage(err.Error())
	}
	if len(rest) == 0 {
		return usage("missing pool argument")
	}
	return t.update(func(s *State) (bool, error) {
		for _, n := range rest {
			p := s.pool(n)
			if p == nil {
				return false, fail(1, "cannot open '%s': no such pool", n)
			}
			if err := t.relabel(p, zfslabel.StateExported); err != nil {
				return false, err
			}
			p.Exported = true
		}
		return true, nil
	})
}

func (t *Tool) importPool(args []string) error {
	_, rest, err := cli.Getopt(args, "d:fNo:") // -o cachefile=none: pve-storage's import
	if err != nil {
		return usage(err.Error())
	}
	return t.update(func(s *State) (bool, error) {
		var avail []*Pool
		for _, p := range s.Pools {
			if p.Exported {
				avail = append(avail, p)
			}
		}
		if len(rest) == 0 {
			if len(avail) == 0 {
				t.Env.Errf("no pools available to import\n")
				return false, nil
			}
			for _, p := range avail {
				t.Env.Outf("   pool: %s\n     id: %d\n  state: ONLINE\n action: The pool can be imported using its name or numeric identifier.\n config:\n\n", p.Name, p.GUID)
				t.writeConfig(p, false, false, false)
				t.Env.Outf("\n")
			}
			return false, nil
		}
		for _, p := range avail {
			if p.Name == rest[0] || strconv.FormatUint(p.GUID, 10) == rest[0] {
				if s.pool(p.Name) != nil {
					return false, fail(1, "cannot import '%s': a pool with that name already exists", p.Name)
				}
				p.Exported = false
				if err := t.relabel(p, zfslabel.StateActive); err != nil {
					return false, err
				}
				return true, nil
			}
		}
		return false, fail(1, "cannot import '%s': no such pool available", rest[0])
	})
}

func (t *Tool) scrub(args []string) error {
	opts, rest, err := cli.Getopt(args, "spw")
	if err != nil {
		return usage(err.Error())
	}
	stop := ""
	for _, o := range opts {
		switch o.Name {
		case 's':
			stop = "cancel"
		case 'p':
			stop = "pause"
		}
	}
	if len(rest) == 0 {
		return usage("missing pool name argument")
	}
	return t.update(func(s *State) (bool, error) {
		for _, n := range rest {
			p := s.pool(n)
			if p == nil {
				return false, fail(1, "cannot open '%s': no such pool", n)
			}
			if stop != "" { // lab scrubs finish at once: there is never one to stop
				return false, fail(1, "cannot %s scrubbing %s: there is no active scrub", stop, n)
			}
			p.Props["lab:lastscrub"] = strconv.FormatInt(t.Now().Unix(), 10)
		}
		return true, nil
	})
}

func (t *Tool) labelclear(args []string) error {
	opts, rest, err := cli.Getopt(args, "f")
	if err != nil || len(rest) != 1 {
		return usage("missing vdev name")
	}
	return t.update(func(s *State) (bool, error) {
		l, _ := zfslabel.Read(rest[0])
		if l == nil {
			return false, fail(1, "failed to check state for %s", rest[0])
		}
		if l.State == zfslabel.StateActive && s.pool(l.Pool) != nil {
			return false, fail(1, "labelclear operation failed.\n\tVdev %s is a member (ACTIVE), of pool \"%s\".\n\tTo remove label information from this device, export or destroy\n\tthe pool, or remove %s from the configuration of this pool\n\tand retry the labelclear operation.", rest[0], l.Pool, rest[0])
		}
		if l.State == zfslabel.StateExported && len(opts) == 0 {
			return false, fail(1, "use '-f' to override the following error:\n%s is a member of exported pool \"%s\"", rest[0], l.Pool)
		}
		return false, zfslabel.Wipe(rest[0])
	})
}

func (t *Tool) selectPools(s *State, names []string) ([]*Pool, error) {
	if len(names) == 0 {
		return s.imported(), nil
	}
	var out []*Pool
	for _, n := range names {
		p := s.pool(n)
		if p == nil {
			return out, fail(1, "cannot open '%s': no such pool", n)
		}
		out = append(out, p)
	}
	return out, nil
}

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

// PoolNames lists imported pools (for systemd's zfs-scrub instances and tests).
func PoolNames(statePath string) ([]string, error) {
	var s State
	if err := statefile.Read(statePath, &s); err != nil {
		return nil, err
	}
	var out []string
	for _, p := range s.imported() {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out, nil
}

// mount "mounts" a dataset at its mountpoint: the directory is created. A
// directory that exists and is not empty is mounted over when the dataset's
// overlay property is on (the OpenZFS >= 2.0 default); with overlay=off the
// mount fails as in ZFS ("cannot mount '/x': directory is not empty"),
// leaving mounted=no.
func (t *Tool) mount(s *State, p *Pool, d *Dataset) error { return t.mountWith(s, p, d, false) }

// mountWith is mount; force is `zfs mount -O`.
func (t *Tool) mountWith(s *State, p *Pool, d *Dataset, force bool) error {
	d.Unmounted = false
	mp, _ := s.get(p, d, "mountpoint")
	if !strings.HasPrefix(mp.value, "/") {
		return nil
	}
	dir := t.Node.HostPath(mp.value)
	// Directories that are other datasets' mountpoints belong to those
	// mounts, not to the directory underneath (no layering is simulated).
	others := map[string]bool{}
	for _, o := range p.Datasets {
		if o != d {
			if omp, _ := s.get(p, o, "mountpoint"); strings.HasPrefix(omp.value, "/") {
				others[omp.value] = true
			}
		}
	}
	if ov, _ := s.get(p, d, "overlay"); ov.value == "on" {
		force = true
	}
	if ents, err := os.ReadDir(dir); err == nil && !force {
		for _, e := range ents {
			if !others[filepath.Join(mp.value, e.Name())] {
				d.Unmounted = true
				return fail(1, "cannot mount '%s': directory is not empty", mp.value)
			}
		}
	}
	os.MkdirAll(dir, 0o755)
	return nil
}
