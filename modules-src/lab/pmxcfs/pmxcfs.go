// Package pmxcfs mounts a lab node's /etc/pve: a FUSE filesystem that
// behaves like Proxmox's pmxcfs for the programs of the node, over a plain
// directory that the PVE API simulator reads and writes too. One backing
// directory per pmxcfs database: the members of a cluster see the same
// directory, a standalone node its own, and a join switches which directory
// a node's mount shows without remounting anything (Backend.Dir is asked on
// every operation).
//
// The rules are pmxcfs's (pve-cluster src/pmxcfs/pmxcfs.c, cfs-plug-*.c,
// memdb.c, dcdb.c):
//   - every change fails with EACCES ("Permission denied") while the node's
//     cluster is not quorate (dcdb_send_fuse_message), and stat shows the
//     write bits cleared (tree_entry_stat);
//   - owner root, group www-data, mode 0640 for files and 0755 for
//     directories, 0600/0700 under priv/ and nodes/<n>/priv/; chmod only to
//     that mode and chown only to root:www-data succeed (and change nothing),
//     anything else is EPERM;
//   - a guest configuration (nodes/<n>/{qemu-server,lxc,openvz}/<vmid>.conf)
//     whose VMID another node or guest type already has is refused (EEXIST),
//     except a rename of that same guest's configuration (migration);
//   - no symlinks, hard links or special files (pmxcfs has no such
//     operation: libfuse answers ENOSYS); files are at most 1 MiB (EFBIG);
//     a lock directory (priv/lock/<name>) cannot be renamed;
//   - the root holds generated read-only files (.members, .version, .vmlist,
//     .clusterlog, .rrd) and the links local, qemu-server, lxc and openvz
//     pointing into nodes/<this node>/;
//   - reads bypass the page cache (direct_io) and nothing is cached by the
//     kernel, so every node sees another node's rename at once.
//
// Regular file names are not restricted: pmxcfs stores any file (PVE's
// %observed list only tells which ones its Perl code parses).
package pmxcfs

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// FSType is the mounts' filesystem type in /proc/self/mountinfo.
const FSType = "fuse.pmxcfs"

// MaxFileSize is pmxcfs's MEMDB_MAX_FILE_SIZE.
const MaxFileSize = 1024 * 1024

// WWWDataGID is the group of every /etc/pve entry (Debian's www-data).
const WWWDataGID = 33

// Backend is the simulator side of the mount.
type Backend interface {
	// Dir is the backing directory of node's /etc/pve right now.
	Dir(node string) string
	// Quorate tells whether node's /etc/pve is writable.
	Quorate(node string) bool
	// Generated returns the content of a generated root file (".members",
	// ".version", ".vmlist", ".clusterlog", ".rrd") as node sees it.
	Generated(node, name string) []byte
	// Changed is called after a program of node changed rel (a path relative
	// to /etc/pve) so the simulator can read it again.
	Changed(node, rel string)
}

// Generated files and links of the root directory (pmxcfs.c main()).
var generatedFiles = []string{".clusterlog", ".members", ".rrd", ".version", ".vmlist"}

func linkTarget(node, name string) (string, bool) {
	switch name {
	case "local":
		return "nodes/" + node, true
	case "qemu-server", "lxc", "openvz":
		return "nodes/" + node + "/" + name, true
	}
	return "", false
}

// Server is one mounted /etc/pve.
type Server struct {
	srv        *fuse.Server
	mountpoint string
	dev        uint64 // the mount's device: its FUSE connection's id
}

// Mount mounts node's /etc/pve at mountpoint (a directory on the host; the
// node bind-mounts it). Root only.
func Mount(mountpoint, node string, b Backend) (*Server, error) {
	if err := os.MkdirAll(mountpoint, 0o755); err != nil {
		return nil, fmt.Errorf("creating the /etc/pve mount point of %s: %w", node, err)
	}
	root := &dirNode{m: &mounted{node: node, b: b}}
	zero := time.Duration(0)
	srv, err := fs.Mount(mountpoint, root, &fs.Options{
		EntryTimeout: &zero, AttrTimeout: &zero, NegativeTimeout: &zero,
		MountOptions: fuse.MountOptions{
			AllowOther: true, FsName: "/dev/fuse", Name: "pmxcfs", DirectMount: true,
			Options: []string{"default_permissions"}, DisableXAttrs: true,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("mounting /etc/pve of %s at %s: %w", node, mountpoint, err)
	}
	s := &Server{srv: srv, mountpoint: mountpoint}
	var st syscall.Stat_t
	if err := syscall.Stat(mountpoint, &st); err == nil {
		s.dev = st.Dev
	}
	return s, nil
}

// Unmount unmounts the filesystem (lazily if a process still uses it) and
// waits for the server to stop. A copy of the mount that another mount
// namespace still holds (a node of another lab started while this one was
// mounted copies every host mount) would keep the FUSE connection, and so
// the server, alive: after a grace period the connection is aborted
// through fusectl, which leaves such copies failing with ENOTCONN, as a
// dead node's /etc/pve would.
func (s *Server) Unmount() error {
	if err := syscall.Unmount(s.mountpoint, 0); err != nil {
		if lerr := syscall.Unmount(s.mountpoint, syscall.MNT_DETACH); lerr != nil && !errors.Is(lerr, syscall.EINVAL) {
			return fmt.Errorf("unmounting %s: %w", s.mountpoint, errors.Join(err, lerr))
		}
	}
	done := make(chan struct{})
	go func() { s.srv.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-time.After(2 * time.Second):
	}
	if err := abortConnection(s.dev); err != nil {
		return fmt.Errorf("unmounting %s: another mount namespace still holds it, and aborting its FUSE connection failed: %w", s.mountpoint, err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("unmounting %s: its FUSE server did not stop after the connection was aborted", s.mountpoint)
	}
}

// abortConnection writes to the connection's abort file in fusectl
// (Documentation/filesystems/fuse.rst, "Aborting a filesystem connection"),
// mounting fusectl in a scratch directory when the host has not.
func abortConnection(dev uint64) error {
	if dev == 0 {
		return errors.New("the mount's device is unknown")
	}
	// fusectl names a connection by the kernel's dev_t (major<<20 | minor).
	id := fmt.Sprint(uint64(unix.Major(dev))<<20 | uint64(unix.Minor(dev)))
	ctl := "/sys/fs/fuse/connections"
	if _, err := os.Stat(filepath.Join(ctl, id)); err != nil {
		tmp, err := os.MkdirTemp("", "gopve-fusectl-")
		if err != nil {
			return err
		}
		defer os.Remove(tmp)
		if err := syscall.Mount("fusectl", tmp, "fusectl", 0, ""); err != nil {
			return fmt.Errorf("mounting fusectl: %w", err)
		}
		defer func() { _ = syscall.Unmount(tmp, syscall.MNT_DETACH) }()
		ctl = tmp
	}
	return os.WriteFile(filepath.Join(ctl, id, "abort"), []byte("1"), 0o200)
}

type mounted struct {
	node string
	b    Backend
}

func (m *mounted) backing(rel string) string { return filepath.Join(m.b.Dir(m.node), rel) }

// isPrivate is path_is_private: priv/… and nodes/<n>/priv/….
func isPrivate(rel string) bool {
	parts := strings.Split(rel, "/")
	return parts[0] == "priv" || len(parts) >= 3 && parts[0] == "nodes" && parts[2] == "priv"
}

// isLockDir is path_is_lockdir: priv/lock/<name>.
func isLockDir(rel string) bool {
	parts := strings.Split(rel, "/")
	return len(parts) == 3 && parts[0] == "priv" && parts[1] == "lock"
}

// attrMode is the mode pmxcfs reports for a file type at rel.
func attrMode(typ uint32, rel string, quorate bool) uint32 {
	var perm uint32 = 0o666
	if typ == syscall.S_IFDIR || typ == syscall.S_IFLNK {
		perm = 0o777
	}
	if !quorate {
		perm &= 0o555
	}
	switch {
	case isPrivate(rel):
		perm &= 0o700
	case typ == syscall.S_IFDIR || typ == syscall.S_IFLNK:
		perm &= 0o755
	default:
		perm &= 0o750
	}
	return typ | perm
}

func (m *mounted) fillAttr(out *fuse.Attr, st *syscall.Stat_t, rel string) {
	out.FromStat(st)
	out.Mode = attrMode(st.Mode&syscall.S_IFMT, rel, m.b.Quorate(m.node))
	out.Owner = fuse.Owner{Uid: 0, Gid: WWWDataGID}
	out.Nlink = 1
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		out.Nlink = 2
	}
}

// writable is the quorum check every change goes through.
func (m *mounted) writable() syscall.Errno {
	if !m.b.Quorate(m.node) {
		return syscall.EACCES
	}
	return 0
}

func errno(err error) syscall.Errno { return fs.ToErrno(err) }

// stableID keeps one inode number per path, so a node's view survives
// the switch of its backing directory at a join.
func stableID(rel string, mode uint32) fs.StableAttr {
	h := fnv.New64a()
	h.Write([]byte(rel))
	h.Write([]byte{byte(mode >> 12)}) // a path that changes type is another inode
	ino := h.Sum64() | 1<<63
	return fs.StableAttr{Mode: mode & syscall.S_IFMT, Ino: ino, Gen: 1}
}

// nodePath is the node's path relative to /etc/pve. pmxcfs works on paths,
// not inodes: a node the kernel still holds after a rename replaced it (a
// reader that looked up authorized_keys just before another node renamed a
// new copy over it) stands for the path it was found at, as in pmxcfs.
func nodePath(in *fs.Inode, found string) string {
	if in.IsRoot() {
		return ""
	}
	if p := in.Path(nil); p != "" {
		return p
	}
	return found
}
