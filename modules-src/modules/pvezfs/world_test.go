package pvezfs

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/host"
	"github.com/gopve/proxmox/modules-src/host/hosttest"
)

// fakePool is a pool in the fake node.
type fakePool struct {
	layout    string // "" (disks), mirror, raidz1…
	devices   []string
	ashift    int
	props     map[string]string
	unmounted bool // its mount failed
}

// world is a fake node with disks in /dev, by-id links, and zpool/zfs/blkid/
// systemctl/wipefs answering in their real formats.
type world struct {
	t     *testing.T
	root  host.Root
	fake  *hosttest.Runner
	pools map[string]*fakePool
	sigs  map[string]string // kernel dev → blkid output
	units map[string]bool   // enabled+active

	mountFails bool // zpool create creates the pool but cannot mount it
	// after, when set, runs after each command the module ran, with what
	// it ran (a test's side effect of a change on the node)
	after func(c host.Command)
}

// afterRunner is the fake node with world.after called after each command.
type afterRunner struct{ w *world }

func (r afterRunner) Run(ctx context.Context, c host.Command) (host.Result, error) {
	res, err := r.w.fake.Run(ctx, c)
	if r.w.after != nil {
		r.w.after(c)
	}
	return res, err
}

func newWorld(t *testing.T) *world {
	w := &world{t: t, root: host.Root(t.TempDir()), fake: hosttest.New(), pools: map[string]*fakePool{},
		sigs: map[string]string{}, units: map[string]bool{}}
	byid := w.root.Path("/dev/disk/by-id")
	if err := os.MkdirAll(byid, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"nvme0n1", "nvme0n1p1", "nvme1n1", "sda", "sdb", "sdc"} {
		os.WriteFile(w.root.Path("/dev/"+d), nil, 0o600)
	}
	for name, target := range map[string]string{
		"nvme-eui.0000000624aabbcc":       "nvme0n1",
		"nvme-eui.0000000624aabbcc_1":     "nvme0n1",
		"nvme-eui.0000000624aabbcc-part1": "nvme0n1p1",
		"nvme-Samsung_SSD_980_S64A":       "nvme0n1",
		"nvme-eui.0000000624ddeeff":       "nvme1n1",
		"wwn-0x5000000000000001":          "sda",
		"wwn-0x5000000000000002":          "sdb",
		"wwn-0x5000000000000003":          "sdc",
	} {
		os.Symlink("../../"+target, filepath.Join(byid, name))
	}
	w.fake.OnFunc("zpool *", w.zpool)
	w.fake.OnFunc("zfs *", w.zfs)
	w.fake.OnFunc("blkid *", w.blkid)
	w.fake.OnFunc("systemctl *", w.systemctl)
	w.fake.OnFunc("wipefs -a *", func(c host.Command) hosttest.Reply {
		delete(w.sigs, w.kernel(c.Args[1]))
		return hosttest.Reply{}
	})
	return w
}

func (w *world) kernel(dev string) string {
	real, err := filepath.EvalSymlinks(w.root.Path(dev))
	if err != nil {
		return dev
	}
	l, _ := w.root.Logical(real)
	return l
}

func (w *world) zpool(c host.Command) hosttest.Reply {
	a := c.Args
	switch {
	case a[0] == "list" && len(a) == 4: // list -H -o name
		names := slices.Sorted(maps.Keys(w.pools))
		return hosttest.Reply{Stdout: strings.Join(names, "\n") + "\n"}
	case a[0] == "list": // list -v -P -p -o COLUMNS POOL
		name := a[len(a)-1]
		p := w.pools[name]
		if p == nil {
			return hosttest.Reply{Exit: 1, Stderr: fmt.Sprintf("cannot open '%s': no such pool\n", name)}
		}
		if !contains(a, "-v") || !contains(a, "-P") || !contains(a, "-p") || contains(a, "-H") {
			return hosttest.Reply{Exit: 2, Stderr: "world: only list -v -P -p: " + c.String()}
		}
		var head, cols []string
		for _, f := range strings.Split(a[len(a)-2], ",") {
			v, ok := map[string]string{"name": name, "size": "511101108224", "alloc": "470220800", "free": "510630887424",
				"health": "ONLINE", "ashift": fmt.Sprint(p.ashift)}[f]
			if !ok {
				return hosttest.Reply{Exit: 2, Stderr: "world: unsupported column " + f}
			}
			head, cols = append(head, strings.ToUpper(f)), append(cols, v)
		}
		// print_list_stats: each vdev with the fixed columns SIZE ALLOC
		// FREE CKPOINT EXPANDSZ FRAG CAP DEDUP HEALTH
		var b strings.Builder
		fmt.Fprintf(&b, "%s\n%s\n", strings.Join(head, "  "), strings.Join(cols, "  "))
		indent := "  "
		if p.layout != "" {
			fmt.Fprintf(&b, "  %s-0  511101108224  470220800  510630887424  -  -  0  0  -  ONLINE\n", p.layout)
			indent = "    "
		}
		for _, d := range p.devices {
			// real ZFS partitions whole disks: -P shows the -part1 path
			fmt.Fprintf(&b, "%s%s-part1  512110190592  -  -  -  -  -  -  -  ONLINE\n", indent, d)
		}
		return hosttest.Reply{Stdout: b.String()}
	case a[0] == "get": // get -H -p -o value ashift POOL
		p := w.pools[a[len(a)-1]]
		return hosttest.Reply{Stdout: fmt.Sprintf("%d\n", p.ashift)}
	case a[0] == "create":
		p := &fakePool{props: map[string]string{"atime": "on", "compression": "off", "xattr": "on", "acltype": "off"}}
		var rest []string
		for i := 1; i < len(a); i++ {
			switch a[i] {
			case "-o":
				fmt.Sscanf(strings.TrimPrefix(a[i+1], "ashift="), "%d", &p.ashift)
				i++
			case "-O":
				k, v, _ := strings.Cut(a[i+1], "=")
				if msg := setProp(p, k, v); msg != "" {
					return hosttest.Reply{Exit: 1, Stderr: fmt.Sprintf("cannot create '%s': %s\n", a[len(a)-1], msg)}
				}
				i++
			case "-m":
				p.props["mountpoint"] = a[i+1]
				i++
			default:
				rest = append(rest, a[i])
			}
		}
		name := rest[0]
		if _, ok := w.pools[name]; ok {
			return hosttest.Reply{Exit: 1, Stderr: fmt.Sprintf("cannot create '%s': pool already exists\n", name)}
		}
		rest = rest[1:]
		if len(rest) > 0 && (rest[0] == "mirror" || strings.HasPrefix(rest[0], "raidz")) {
			p.layout, rest = rest[0], rest[1:]
		}
		for _, d := range rest {
			if s := w.sigs[w.kernel(d)]; s != "" {
				return hosttest.Reply{Exit: 1, Stderr: "invalid vdev specification\nuse '-f' to override the following errors:\n" + d + " contains a filesystem\n"}
			}
			w.sigs[w.kernel(d)] = fmt.Sprintf(`%s: LABEL="%s" UUID="1" VERSION="5000" TYPE="zfs_member" USAGE="filesystem"`, d, name)
		}
		p.devices = rest
		w.pools[name] = p
		if w.mountFails {
			// the pool exists, its mount failed: real zpool exits 1
			p.unmounted = true
			return hosttest.Reply{Exit: 1, Stderr: fmt.Sprintf("cannot mount '%s': directory is not empty\n", p.props["mountpoint"])}
		}
		return hosttest.Reply{}
	case a[0] == "destroy":
		delete(w.pools, a[1])
		return hosttest.Reply{}
	}
	return hosttest.Reply{Exit: 2, Stderr: "world: unsupported " + c.String()}
}

// numericProps are stored as bytes and printed as zfs does: bytes with -p,
// a short binary unit without ("1M"); unset quotas read "none", or 0 with -p.
var numericProps = map[string]bool{"recordsize": true, "quota": true, "reservation": true, "refquota": true,
	"refreservation": true, "volblocksize": true, "special_small_blocks": true}

// toBytes reads "1M", "10G", "131072" (the fake's own parser, not the
// module's).
func toBytes(v string) (uint64, bool) {
	if v == "none" {
		return 0, true
	}
	mult := uint64(1)
	if i := strings.IndexByte("KMGT", v[len(v)-1]); i >= 0 {
		mult, v = 1<<(10*(i+1)), v[:len(v)-1]
	}
	var n uint64
	if _, err := fmt.Sscanf(v, "%d", &n); err != nil || fmt.Sprint(n) != v {
		return 0, false
	}
	return n * mult, true
}

func human(n uint64) string {
	if n == 0 {
		return "none"
	}
	for i := 3; i >= 1; i-- {
		if u := uint64(1) << (10 * i); n%u == 0 {
			return fmt.Sprintf("%d%c", n/u, "KMGT"[i-1])
		}
	}
	return fmt.Sprint(n)
}

// setProp validates like zfs set does for the values the tests use.
func setProp(p *fakePool, k, v string) string {
	switch k {
	case "compression":
		if !strings.HasPrefix(v, "lz4") && !strings.HasPrefix(v, "zstd") && v != "on" && v != "off" && !strings.HasPrefix(v, "gzip") {
			return "'compression' must be one of 'on | off | lzjb | gzip | gzip-[1-9] | zle | lz4 | zstd | zstd-[1-19] | zstd-fast | zstd-fast-[1-10,20,30,40,50,60,70,80,90,100,500,1000]'"
		}
	case "atime", "xattr", "acltype", "mountpoint", "canmount", "sync", "dedup":
	default:
		if !numericProps[k] && !strings.Contains(k, ":") {
			return fmt.Sprintf("invalid property '%s'", k)
		}
	}
	if v == "posixacl" {
		v = "posix" // as current OpenZFS reads it back
	}
	if numericProps[k] {
		n, ok := toBytes(v)
		if !ok {
			return fmt.Sprintf("bad numeric value '%s'", v)
		}
		v = fmt.Sprint(n)
	}
	p.props[k] = v
	return ""
}

func (w *world) zfs(c host.Command) hosttest.Reply {
	a := c.Args
	switch a[0] {
	case "get": // get -H [-p] -o property,value,source PROPS POOL
		parsable := contains(a, "-p")
		p := w.pools[a[len(a)-1]]
		if p == nil {
			return hosttest.Reply{Exit: 1, Stderr: "cannot open: dataset does not exist"}
		}
		var b strings.Builder
		for _, k := range strings.Split(a[len(a)-2], ",") {
			v, ok := p.props[k]
			src := "local"
			switch {
			case k == "mounted":
				v, src = "yes", "-"
				if p.unmounted || p.props["mountpoint"] == "none" || p.props["mountpoint"] == "legacy" || p.props["canmount"] == "off" {
					v = "no"
				}
			case k == "canmount" && !ok:
				v, src = "on", "default"
			case !ok && k == "recordsize":
				v, src = "131072", "default"
			case !ok && numericProps[k]:
				v, src = "0", "default"
			case !ok:
				v, src = "-", "default"
			}
			if numericProps[k] && !parsable {
				n, _ := toBytes(v)
				v = human(n)
			}
			fmt.Fprintf(&b, "%s\t%s\t%s\n", k, v, src)
		}
		return hosttest.Reply{Stdout: b.String()}
	case "set":
		k, v, _ := strings.Cut(a[1], "=")
		p := w.pools[a[2]]
		if msg := setProp(p, k, v); msg != "" {
			return hosttest.Reply{Exit: 1, Stderr: fmt.Sprintf("cannot set property for '%s': %s\n", a[2], msg)}
		}
		if k == "mountpoint" && p.props["canmount"] != "off" {
			p.unmounted = false // zfs mounts the filesystem at its new mountpoint
		}
		return hosttest.Reply{}
	case "mount":
		p := w.pools[a[1]]
		if p == nil {
			return hosttest.Reply{Exit: 1, Stderr: fmt.Sprintf("cannot open '%s': dataset does not exist\n", a[1])}
		}
		p.unmounted = false
		return hosttest.Reply{}
	}
	return hosttest.Reply{Exit: 2, Stderr: "world: unsupported " + c.String()}
}

func (w *world) blkid(c host.Command) hosttest.Reply {
	dev := c.Args[len(c.Args)-1]
	s := w.sigs[w.kernel(dev)]
	if s == "" {
		return hosttest.Reply{Exit: 2}
	}
	if strings.Contains(c.String(), "BLOCK_SIZE") {
		return hosttest.Reply{Stdout: "4096\n"}
	}
	return hosttest.Reply{Stdout: s + "\n"}
}

func (w *world) systemctl(c host.Command) hosttest.Reply {
	a := c.Args
	switch a[0] {
	case "is-enabled":
		if w.units[a[1]] {
			return hosttest.Reply{Stdout: "enabled\n"}
		}
		return hosttest.Reply{Exit: 1, Stdout: "disabled\n"}
	case "is-active":
		if w.units[a[1]] {
			return hosttest.Reply{Stdout: "active\n"}
		}
		return hosttest.Reply{Exit: 3, Stdout: "inactive\n"}
	case "show": // show -p LoadState,UnitFileState,ActiveState UNIT...
		if a[1] != "-p" || a[2] != "LoadState,UnitFileState,ActiveState" {
			break
		}
		var blocks []string
		for _, u := range a[3:] {
			en, act := "disabled", "inactive"
			if w.units[u] {
				en, act = "enabled", "active"
			}
			// systemd's own order of the properties, not the order asked
			blocks = append(blocks, fmt.Sprintf("LoadState=loaded\nActiveState=%s\nUnitFileState=%s\n", act, en))
		}
		return hosttest.Reply{Stdout: strings.Join(blocks, "\n")}
	case "enable":
		w.units[a[2]] = true
		return hosttest.Reply{}
	case "disable":
		w.units[a[2]] = false
		return hosttest.Reply{}
	}
	return hosttest.Reply{Exit: 1, Stderr: "world: unsupported " + c.String()}
}

func (w *world) run(args map[string]any, check bool) map[string]any {
	w.t.Helper()
	var r host.Runner = w.fake
	if w.after != nil {
		r = afterRunner{w}
	}
	m := New(func(*ansible.Run) Env { return Env{Root: w.root, Runner: r} })
	inv := &ansible.Invocation{Params: args, CheckMode: check, Diff: true}
	return ansible.Execute(context.Background(), &m, inv, func(string) (string, bool) { return "", false }, io.Discard)
}

// state is everything the fake node holds, to prove check mode changes nothing.
func (w *world) state() string {
	var b strings.Builder
	names := slices.Sorted(maps.Keys(w.pools))
	for _, n := range names {
		fmt.Fprintf(&b, "%s %+v\n", n, *w.pools[n])
	}
	fmt.Fprintf(&b, "%v %v\n", w.sigs, w.units)
	filepath.WalkDir(string(w.root), func(p string, d fs.DirEntry, err error) error {
		b.WriteString(p + "\n")
		return nil
	})
	return b.String()
}

func changes(res map[string]any) []string {
	var out []string
	for _, c := range res["changes"].([]any) {
		out = append(out, c.(string))
	}
	return out
}

func failed(res map[string]any) bool { f, _ := res["failed"].(bool); return f }
