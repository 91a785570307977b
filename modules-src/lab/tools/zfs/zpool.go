package zfs

import (
	"fmt"
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
