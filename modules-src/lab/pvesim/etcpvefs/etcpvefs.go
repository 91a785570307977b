// Package etcpvefs is the simulator's side of /etc/pve: the files of one
// pmxcfs database kept in a plain directory, <Dir>/pvesim/etc-pve/<db id>/,
// which the lab mounts as each member's /etc/pve (modules-src/lab/pmxcfs is
// that mount, the FUSE filesystem with pmxcfs's rules; this package is what
// the simulator itself does to the directory underneath). It works on
// directories, byte slices and plain values only: pvesim/core keeps the
// databases, decides what to write and when, and calls it.
//
// It follows pve-cluster's src/pmxcfs:
//   - memdb.c: memdb_read and memdb_write run under the database's mutex,
//     so a reader on any node sees the old or the new content of a file,
//     never a mix; WriteFile gets that from a rename over the old file. The
//     directories pve-cluster creates at start are PVE/Cluster.pm's
//     prepare_observed_file_basedirs plus priv/lock, where cfs_lock_file
//     takes its locks (Dirs), and nodes/<node>/ holds a member's guests and
//     keys (MakeNodeDirs);
//   - status.c: the generated root files .members (cfs_create_memberlist_msg
//     as pmxcfs.c's create_dot_members_cb shows it), .version
//     (cfs_create_version_msg) and .vmlist (cfs_create_vmlist_msg), and
//     logger.c's .clusterlog (clog_dump_json; the lab logs nothing there).
//
// The rest is the lab's own: CopyTree gives a node removed from a cluster
// its stale copy of /etc/pve (pvecm delnode leaves it one), CleanPath
// checks a path the control API was given.
package etcpvefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/renameio/v2"

	"github.com/gopve/proxmox/modules-src/lab/pmxcfs"
)

// Dirs are the directories pve-cluster creates at start
// (prepare_observed_file_basedirs) plus priv/lock, where cfs_lock_file
// takes its locks.
var Dirs = []string{"firewall", "ha", "mapping", "nodes", "priv", "priv/acme", "priv/lock", "sdn", "virtual-guest"}

// MakeDirs creates Dirs under dir.
func MakeDirs(dir string) error {
	for _, d := range Dirs {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return fmt.Errorf("creating /etc/pve/%s: %w", d, err)
		}
	}
	return nil
}

// MakeNodeDirs creates nodes/<node>/ and its guest and key directories
// under dir: node is a member whose /etc/pve this is.
func MakeNodeDirs(dir, node string) error {
	for _, sub := range []string{"qemu-server", "lxc", "openvz", "priv"} {
		if err := os.MkdirAll(filepath.Join(dir, "nodes", node, sub), 0o755); err != nil {
			return fmt.Errorf("creating /etc/pve/nodes/%s/%s: %w", node, sub, err)
		}
	}
	return nil
}

// WriteFile replaces the file rel (slash-separated, relative to /etc/pve)
// under dir atomically: a reader on any node sees the old or the new
// content, never a mix.
func WriteFile(dir, rel string, data []byte) error {
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("creating the directory of /etc/pve/%s: %w", rel, err)
	}
	if err := renameio.WriteFile(p, data, 0o600); err != nil {
		return fmt.Errorf("writing /etc/pve/%s: %w", rel, err)
	}
	return nil
}

// Exists tells whether rel under dir may exist: only a "does not exist"
// answer counts as absent, so a file the simulator cannot stat is never
// overwritten as if it were missing.
func Exists(dir, rel string) bool {
	_, err := os.Stat(filepath.Join(dir, rel))
	return !errors.Is(err, fs.ErrNotExist)
}

// ReadFile is the content of rel under dir; false, without error, when it
// does not exist.
func ReadFile(dir, rel string) ([]byte, bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("reading /etc/pve/%s: %w", rel, err)
	}
	return b, true, nil
}

// Remove deletes rel under dir; a file already gone is no error.
func Remove(dir, rel string) error {
	if err := os.Remove(filepath.Join(dir, filepath.FromSlash(rel))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// CopyTree copies the directory from to to (delnode leaves the removed
// node a stale copy of /etc/pve, C9).
func CopyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if e.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
}

// CleanPath is p relative to /etc/pve without its outer slashes, or ""
// when p is empty or has an empty, "." or ".." segment (a path that could
// leave /etc/pve or name it whole).
func CleanPath(p string) string {
	p = strings.Trim(p, "/")
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return ""
		}
	}
	return p
}

// VMEntry is one line of pmxcfs's .vmlist: which node holds which guest.
type VMEntry struct {
	VMID int
	Node string
	Kind string // qemu-server or lxc
}

// Guests is the .vmlist of the database in dir, sorted by VMID (pmxcfs's
// scan of nodes/<node>/{qemu-server,lxc}; openvz configurations are left
// out, PVE runs none).
func Guests(dir string) []VMEntry {
	var out []VMEntry
	for _, c := range pmxcfs.ScanVMConfigs(dir) {
		kind := "qemu-server"
		switch c.Type {
		case "lxc":
			kind = "lxc"
		case "openvz":
			continue
		}
		out = append(out, VMEntry{VMID: int(c.VMID), Node: c.Node, Kind: kind})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].VMID < out[j].VMID })
	return out
}
