package labctl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
)

// What the storage plugins of pve-storage do on a node, done on the lab's
// node (its own filesystem, its zpool/zfs stand-ins) for the simulator:
// activation (DirPlugin/Plugin activate_storage, ZFSPoolPlugin's pool
// check), status sizes (df, zfs get available,used), content listing
// (Plugin list_volumes / get_subdir_files) and the node's pveversion. Other
// storage types (lvmthin, lvm, nfs) have nothing behind them in a lab node:
// they stay active with the simulator's fixed sizes and no content.

// storageHooks fills cfg's storage and version hooks.
func (l *Lab) storageHooks(cfg *pvesim.Config) {
	cfg.StorageCheck = l.storageCheck
	cfg.StorageActivate = l.storageActivate
	cfg.StorageUsage = l.storageUsage
	cfg.StorageContent = l.storageContent
	cfg.StorageRemove = l.storageRemove
	cfg.StorageUpload = l.storageUpload
	cfg.BackupArchive = l.backupArchive
	cfg.NodeVersion = l.nodeVersion
	cfg.ZFS = l.zfs
}

// zfs runs the node's zfs (the stand-in) for the simulator's guest
// volumes on a zfspool storage; its error is what zfs printed.
func (l *Lab) zfs(node string, args ...string) error {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shq(a)
	}
	out, err := l.onNode(node, "zfs "+strings.Join(q, " ")+" 2>&1")
	if err != nil {
		if msg := strings.TrimSpace(out); msg != "" {
			return errors.New(msg)
		}
		return err
	}
	return nil
}

// onNode runs a script in node's filesystem (not over SSH: this is the
// node's own daemon at work). The hooks run under the simulator's lock, so
// they must never touch the node's /etc/pve (served by the simulator).
func (l *Lab) onNode(node, script string) (string, error) {
	n := l.node(node)
	if n == nil {
		return "", fmt.Errorf("the lab has no node %q", node)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return n.node.Exec(ctx, script)
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// underEtcPve: a path the hooks must not touch (see onNode).
func underEtcPve(p string) bool { return p == "/etc/pve" || strings.HasPrefix(p, "/etc/pve/") }

func errNoDir(st pvesim.StorageInfo) error {
	return fmt.Errorf("unable to activate storage '%s' - directory '%s' does not exist or is unreachable", st.ID, st.Options["path"])
}

// zpoolOf is the pool of a zfspool storage's "pool" (which may be a dataset).
func zpoolOf(st pvesim.StorageInfo) string { p, _, _ := strings.Cut(st.Options["pool"], "/"); return p }

// errNoPool is ZFSPoolPlugin's activate_storage failing to import the pool
// (read-only check: the pool is not imported). Reconstruction: the text
// after the comma is what `zpool import` prints.
func errNoPool(st pvesim.StorageInfo) error {
	return fmt.Errorf("could not activate storage '%s', zfs error: cannot import '%s': no such pool available", st.ID, zpoolOf(st))
}

// storageCheck: is the storage usable on node right now (read-only)?
func (l *Lab) storageCheck(node string, st pvesim.StorageInfo) error {
	switch st.Type {
	case "dir":
		p := st.Options["path"]
		if underEtcPve(p) {
			return nil
		}
		if _, err := l.onNode(node, "test -d "+shq(p)); err != nil {
			return errNoDir(st)
		}
	case "zfspool":
		if _, err := l.onNode(node, "zpool list -H -o name "+shq(zpoolOf(st))); err != nil {
			return errNoPool(st)
		}
	}
	return nil
}

// vtypeSubdirs is Plugin.pm's $vtype_subdirs.
var vtypeSubdirs = map[string]string{"images": "images", "rootdir": "private", "iso": "template/iso",
	"vztmpl": "template/cache", "backup": "dump", "snippets": "snippets", "import": "import"}

// optTrue reads a boolean option with a default, as `$scfg->{x} // 1` does.
func optTrue(st pvesim.StorageInfo, def bool, keys ...string) bool {
	for _, k := range keys {
		if v, ok := st.Options[k]; ok {
			return v == "1"
		}
	}
	return def
}

// storageActivate is activate_storage: a dir storage creates its path
// (create-base-path, default yes) and its content subdirectories
// (create-subdirs, default yes), and fails when the path is still missing;
// a zfspool storage imports its pool when it is not imported.
func (l *Lab) storageActivate(node string, st pvesim.StorageInfo) error {
	if st.Type == "zfspool" {
		pool := shq(zpoolOf(st))
		if _, err := l.onNode(node, "zpool list -H -o name "+pool+" >/dev/null 2>&1 || zpool import -d /dev/disk/by-id/ -o cachefile=none "+pool); err != nil {
			// Reconstruction: "could not activate storage '<id>', " + zfs_request's error.
			msg := err.Error()
			if i := strings.Index(msg, " exit status"); i > 0 {
				msg = strings.TrimSpace(msg[:i])
			}
			return fmt.Errorf("could not activate storage '%s', zfs error: %s", st.ID, msg)
		}
		return nil
	}
	if st.Type != "dir" {
		return l.storageCheck(node, st)
	}
	p := st.Options["path"]
	if underEtcPve(p) {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "p=%s\n", shq(p))
	if optTrue(st, true, "create-base-path", "mkdir") {
		b.WriteString(`[ -d "$p" ] || mkdir -p "$p" 2>/dev/null` + "\n")
	}
	b.WriteString(`[ -d "$p" ] || exit 3` + "\n")
	content := pveschema.SplitList(st.Options["content"])
	if len(content) > 0 && optTrue(st, true, "create-subdirs") && optTrue(st, true, "mkdir") {
		var subs []string
		for vtype, sub := range vtypeSubdirs {
			if slices.Contains(content, vtype) || vtype == "backup" && slices.Contains(content, "rootdir") {
				subs = append(subs, sub)
			}
		}
		slices.Sort(subs)
		for _, sub := range subs {
			fmt.Fprintf(&b, "mkdir -p \"$p\"/%s || { echo %s; exit 4; }\n", shq(sub), shq(sub))
		}
	}
	out, err := l.onNode(node, b.String())
	if err != nil {
		if strings.TrimSpace(out) != "" {
			// Reconstruction of $try_create_subdir's message.
			return fmt.Errorf("failed to create content directory '%s/%s': %v", p, strings.TrimSpace(out), err)
		}
		return errNoDir(st)
	}
	return nil
}

// storageUsage is the plugin's status: df of a directory, the pool's
// available + used for ZFS. Zero means "the simulator's fixed sizes".
func (l *Lab) storageUsage(node string, st pvesim.StorageInfo) (pvesim.StorageUsage, error) {
	switch st.Type {
	case "dir":
		if underEtcPve(st.Options["path"]) {
			return pvesim.StorageUsage{}, nil
		}
		out, err := l.onNode(node, "df -P -B1 "+shq(st.Options["path"])+" | tail -n 1")
		if err != nil {
			return pvesim.StorageUsage{}, err
		}
		f := strings.Fields(out)
		if len(f) < 4 {
			return pvesim.StorageUsage{}, fmt.Errorf("unexpected df output %q", out)
		}
		total, err1 := strconv.ParseInt(f[1], 10, 64)
		used, err2 := strconv.ParseInt(f[2], 10, 64)
		avail, err3 := strconv.ParseInt(f[3], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return pvesim.StorageUsage{}, fmt.Errorf("unexpected df output %q: %w", out, err)
		}
		return pvesim.StorageUsage{Total: total, Used: used, Avail: avail}, nil
	case "zfspool":
		// zfs_get_pool_stats: available and used of the storage's dataset.
		out, err := l.onNode(node, "zfs get -Hp -o value available,used "+shq(st.Options["pool"]))
		if err != nil {
			return pvesim.StorageUsage{}, err
		}
		f := strings.Fields(out)
		if len(f) != 2 {
			return pvesim.StorageUsage{}, fmt.Errorf("unexpected zfs get output %q", out)
		}
		avail, err1 := strconv.ParseInt(f[0], 10, 64)
		used, err2 := strconv.ParseInt(f[1], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return pvesim.StorageUsage{}, fmt.Errorf("unexpected zfs get output %q: %w", out, err)
		}
		return pvesim.StorageUsage{Total: avail + used, Used: used, Avail: avail}, nil
	}
	return pvesim.StorageUsage{}, nil
}

// File name rules of get_subdir_files (PVE::Storage's *_EXT_RE).
var (
	isoRE    = regexp.MustCompile(`(?i)^.+\.(?:iso|img)$`)
	vztmplRE = regexp.MustCompile(`^.+\.(?:(tar)|tar\.(gz|xz|zst|bz2))$`)
	backupRE = regexp.MustCompile(`^.+\.(tgz|(?:tar|vma)(?:\.(?:gz|lzo|zst|bz2))?)$`)
	importRE = regexp.MustCompile(`^[a-zA-Z0-9\-.+=_]+\.(ova|ovf|qcow2|raw|vmdk)$`)
	vzdumpRE = regexp.MustCompile(`^vzdump-(qemu|lxc|openvz)-([1-9][0-9]{2,8})-`)
)

// storageContent is list_volumes for a dir storage: the files really in its
// content subdirectories. Guest images arrive with guests (not yet).
func (l *Lab) storageContent(node string, st pvesim.StorageInfo) ([]pvesim.Volume, error) {
	if st.Type != "dir" || underEtcPve(st.Options["path"]) {
		return nil, nil
	}
	script := "cd " + shq(st.Options["path"]) + " || exit 0\n" +
		"for d in template/iso template/cache dump snippets import; do [ -d \"$d\" ] && find \"$d\" -mindepth 1 -maxdepth 1 -type f -printf '%h\\t%f\\t%s\\t%C@\\n'; done; true"
	out, err := l.onNode(node, script)
	if err != nil {
		return nil, err
	}
	var vols []pvesim.Volume
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			continue
		}
		size, _ := strconv.ParseInt(f[2], 10, 64)
		ctimeF, _ := strconv.ParseFloat(f[3], 64)
		v := pvesim.Volume{Size: size, CTime: int64(ctimeF)}
		name := f[1]
		switch f[0] {
		case "template/iso":
			if !isoRE.MatchString(name) {
				continue
			}
			v.Content, v.Format, v.VolID = "iso", "iso", st.ID+":iso/"+name
		case "template/cache":
			m := vztmplRE.FindStringSubmatch(name)
			if m == nil {
				continue
			}
			v.Content, v.VolID, v.Format = "vztmpl", st.ID+":vztmpl/"+name, "tar"
			if m[2] != "" {
				v.Format = "t" + m[2]
			}
		case "dump":
			m := backupRE.FindStringSubmatch(name)
			if m == nil {
				continue
			}
			v.Content, v.Format, v.VolID, v.Subtype = "backup", m[1], st.ID+":backup/"+name, "unknown"
			if d := vzdumpRE.FindStringSubmatch(name); d != nil {
				v.Subtype = map[string]string{"qemu": "qemu", "lxc": "lxc", "openvz": "openvz"}[d[1]]
				v.VMID, _ = strconv.Atoi(d[2])
			}
		case "snippets":
			v.Content, v.Format, v.VolID = "snippets", "snippet", st.ID+":snippets/"+name
		case "import":
			m := importRE.FindStringSubmatch(name)
			if m == nil {
				continue
			}
			v.Content, v.Format, v.VolID = "import", m[1], st.ID+":import/"+name
		default:
			continue
		}
		vols = append(vols, v)
	}
	slices.SortFunc(vols, func(a, b pvesim.Volume) int { return strings.Compare(a.VolID, b.VolID) })
	return vols, nil
}

// storageRemove is Plugin.pm free_image for a file volume of a dir
// storage: unlink <path>/<subdir>/<name>.
func (l *Lab) storageRemove(node string, st pvesim.StorageInfo, volname string) error {
	vtype, name, ok := strings.Cut(volname, "/")
	sub := vtypeSubdirs[vtype]
	if !ok || sub == "" || strings.Contains(name, "/") || st.Type != "dir" || underEtcPve(st.Options["path"]) {
		return fmt.Errorf("unable to remove volume '%s:%s'", st.ID, volname)
	}
	p := st.Options["path"] + "/" + sub + "/" + name
	if out, err := l.onNode(node, "rm -- "+shq(p)+" 2>&1"); err != nil {
		return fmt.Errorf("unlink '%s' failed - %s", p, strings.TrimSpace(out))
	}
	return nil
}

// storageUpload is the upload task's cp (or scp) into a node: dest's
// directory made as File::Path::make_path does, the file written in place
// as cp writes it (mode 0644: Status.pm chmods the temporary file 0644
// first; an existing file is overwritten). The time limit is generous: an
// ISO can be large.
func (l *Lab) storageUpload(node string, st pvesim.StorageInfo, dest, src string) error {
	n := l.node(node)
	if n == nil {
		return fmt.Errorf("the lab has no node %q", node)
	}
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	d := shq(dest)
	script := "umask 022 && mkdir -p -- \"$(dirname -- " + d + ")\" && cat > " + d
	if out, err := n.node.ExecInput(ctx, script, f); err != nil {
		return fmt.Errorf("%s %v", strings.TrimSpace(out), err)
	}
	return nil
}

var pveversionRE = regexp.MustCompile(`^pve-manager/([^/\s]+)/([0-9a-f]+) \(running kernel: (\S+)\)`)

// nodeVersion is what the node's pveversion prints (its installed
// pve-manager and the kernel it booted), before and after an upgrade.
func (l *Lab) nodeVersion(node string) (pvesim.NodeVersion, error) {
	out, err := l.onNode(node, "pveversion")
	if err != nil {
		return pvesim.NodeVersion{}, err
	}
	m := pveversionRE.FindStringSubmatch(strings.TrimSpace(out))
	if m == nil {
		return pvesim.NodeVersion{}, fmt.Errorf("unexpected pveversion output %q", out)
	}
	return pvesim.NodeVersion{Version: m[1], RepoID: m[2], Kernel: m[3]}, nil
}
