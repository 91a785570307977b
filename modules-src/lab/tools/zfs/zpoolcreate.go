package zfs

// zpool create: the command line parsed as OpenZFS parses it, the vdevs
// checked (in use, duplicated, too few for their layout), the pool made and
// its labels written on the devices.

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
	"github.com/gopve/proxmox/modules-src/lab/tools/zfslabel"
)

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
