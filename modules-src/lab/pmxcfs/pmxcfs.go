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
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

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
	return &Server{srv: srv, mountpoint: mountpoint}, nil
}

// Unmount unmounts the filesystem (lazily if a process still uses it) and
// waits for the server to stop.
func (s *Server) Unmount() error {
	if err := s.srv.Unmount(); err != nil {
		if lerr := syscall.Unmount(s.mountpoint, syscall.MNT_DETACH); lerr != nil {
			return fmt.Errorf("unmounting %s: %w", s.mountpoint, errors.Join(err, lerr))
		}
	}
	s.srv.Wait()
	return nil
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

// dirNode is a backed directory (or the root).
type dirNode struct {
	fs.Inode
	m     *mounted
	found string // path at lookup, for nodePath
}

func (d *dirNode) rel() string { return nodePath(&d.Inode, d.found) }

var (
	_ fs.NodeLookuper  = (*dirNode)(nil)
	_ fs.NodeGetattrer = (*dirNode)(nil)
	_ fs.NodeSetattrer = (*dirNode)(nil)
	_ fs.NodeReaddirer = (*dirNode)(nil)
	_ fs.NodeCreater   = (*dirNode)(nil)
	_ fs.NodeMkdirer   = (*dirNode)(nil)
	_ fs.NodeRmdirer   = (*dirNode)(nil)
	_ fs.NodeUnlinker  = (*dirNode)(nil)
	_ fs.NodeRenamer   = (*dirNode)(nil)
	_ fs.NodeSymlinker = (*dirNode)(nil)
	_ fs.NodeLinker    = (*dirNode)(nil)
	_ fs.NodeMknoder   = (*dirNode)(nil)
	_ fs.NodeStatfser  = (*dirNode)(nil)
)

func (d *dirNode) isRoot() bool { return d.rel() == "" }

func (d *dirNode) child(name string) string {
	if d.isRoot() {
		return name
	}
	return d.rel() + "/" + name
}

func (d *dirNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if d.isRoot() {
		if gen := d.generated(name); gen != nil {
			return d.NewInode(ctx, gen, stableID(name, syscall.S_IFREG)), gen.attr(&out.Attr)
		}
		if target, ok := linkTarget(d.m.node, name); ok {
			ln := &linkNode{m: d.m, target: target}
			ln.attr(&out.Attr)
			return d.NewInode(ctx, ln, stableID(name, syscall.S_IFLNK)), 0
		}
	}
	rel := d.child(name)
	var st syscall.Stat_t
	if err := syscall.Lstat(d.m.backing(rel), &st); err != nil {
		return nil, errno(err)
	}
	typ := st.Mode & syscall.S_IFMT
	if typ != syscall.S_IFDIR && typ != syscall.S_IFREG {
		return nil, syscall.ENOENT // pmxcfs holds nothing else
	}
	d.m.fillAttr(&out.Attr, &st, rel)
	var node fs.InodeEmbedder = &fileNode{m: d.m, found: rel}
	if typ == syscall.S_IFDIR {
		node = &dirNode{m: d.m, found: rel}
	}
	return d.NewInode(ctx, node, stableID(rel, st.Mode)), 0
}

func (d *dirNode) generated(name string) *genNode {
	for _, g := range generatedFiles {
		if g == name {
			return &genNode{m: d.m, name: name}
		}
	}
	return nil
}

func (d *dirNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	var st syscall.Stat_t
	if err := syscall.Stat(d.m.backing(d.rel()), &st); err != nil {
		return errno(err)
	}
	d.m.fillAttr(&out.Attr, &st, d.rel())
	return 0
}

func (d *dirNode) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if e := setattrRules(d.m, d.rel(), in); e != 0 {
		return e
	}
	return d.Getattr(ctx, f, out)
}

// setattrRules is cfs_fuse_chmod/chown/utimens for both files and dirs; the
// size is the file's business.
func setattrRules(m *mounted, rel string, in *fuse.SetAttrIn) syscall.Errno {
	if mode, ok := in.GetMode(); ok {
		want := uint32(0o640)
		if isPrivate(rel) {
			want = 0o600
		}
		if mode&0o7777 != want {
			return syscall.EPERM
		}
	}
	uid, uok := in.GetUID()
	gid, gok := in.GetGID()
	if uok && uid != 0 || gok && gid != WWWDataGID {
		return syscall.EPERM
	}
	mtime, mok := in.GetMTime()
	if mok {
		if e := m.writable(); e != 0 {
			return e
		}
		if err := os.Chtimes(m.backing(rel), time.Time{}, mtime); err != nil {
			return errno(err)
		}
	}
	return 0
}

func (d *dirNode) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	entries, err := os.ReadDir(d.m.backing(d.rel()))
	if err != nil {
		return nil, errno(err)
	}
	var out []fuse.DirEntry
	if d.isRoot() {
		for _, g := range generatedFiles {
			out = append(out, fuse.DirEntry{Name: g, Mode: syscall.S_IFREG, Ino: stableID(g, syscall.S_IFREG).Ino})
		}
		for _, l := range []string{"local", "lxc", "openvz", "qemu-server"} {
			out = append(out, fuse.DirEntry{Name: l, Mode: syscall.S_IFLNK, Ino: stableID(l, syscall.S_IFLNK).Ino})
		}
	}
	for _, e := range entries {
		var mode uint32
		switch {
		case e.IsDir():
			mode = syscall.S_IFDIR
		case e.Type().IsRegular():
			mode = syscall.S_IFREG
		default:
			continue
		}
		if d.isRoot() && (d.generated(e.Name()) != nil || isLinkName(e.Name())) {
			continue
		}
		out = append(out, fuse.DirEntry{Name: e.Name(), Mode: mode, Ino: stableID(d.child(e.Name()), mode).Ino})
	}
	return fs.NewListDirStream(out), 0
}

func isLinkName(name string) bool {
	_, ok := linkTarget("x", name)
	return ok
}

// reserved: the root's generated names cannot be created, removed or renamed.
func (d *dirNode) reserved(name string) bool {
	return d.isRoot() && (d.generated(name) != nil || isLinkName(name))
}

func (d *dirNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if d.reserved(name) {
		return nil, nil, 0, syscall.EACCES
	}
	if e := d.m.writable(); e != 0 {
		return nil, nil, 0, e
	}
	rel := d.child(name)
	flags &^= syscall.O_APPEND | syscall.O_DIRECT
	f, err := os.OpenFile(d.m.backing(rel), int(flags)|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, nil, 0, errno(err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, nil, 0, errno(err)
	}
	d.m.fillAttr(&out.Attr, &st, rel)
	d.m.b.Changed(d.m.node, rel)
	ch := d.NewInode(ctx, &fileNode{m: d.m, found: rel}, stableID(rel, st.Mode))
	return ch, &handle{m: d.m, rel: rel, f: f}, fuse.FOPEN_DIRECT_IO, 0
}

func (d *dirNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if d.reserved(name) {
		return nil, syscall.EEXIST
	}
	if e := d.m.writable(); e != 0 {
		return nil, e
	}
	rel := d.child(name)
	if err := os.Mkdir(d.m.backing(rel), 0o755); err != nil {
		return nil, errno(err)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(d.m.backing(rel), &st); err != nil {
		return nil, errno(err)
	}
	d.m.fillAttr(&out.Attr, &st, rel)
	d.m.b.Changed(d.m.node, rel)
	return d.NewInode(ctx, &dirNode{m: d.m, found: rel}, stableID(rel, st.Mode)), 0
}

func (d *dirNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	return d.remove(name, syscall.Rmdir)
}

func (d *dirNode) Unlink(ctx context.Context, name string) syscall.Errno {
	return d.remove(name, syscall.Unlink)
}

func (d *dirNode) remove(name string, op func(string) error) syscall.Errno {
	if d.reserved(name) {
		return syscall.EACCES
	}
	if e := d.m.writable(); e != 0 {
		return e
	}
	rel := d.child(name)
	if err := op(d.m.backing(rel)); err != nil {
		return errno(err)
	}
	d.m.b.Changed(d.m.node, rel)
	return 0
}

func (d *dirNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*dirNode)
	if !ok || d.reserved(name) || np.reserved(newName) {
		return syscall.EACCES
	}
	if flags != 0 {
		return syscall.EINVAL // libfuse 2 (pmxcfs) has no rename flags
	}
	if e := d.m.writable(); e != 0 {
		return e
	}
	from, to := d.child(name), np.child(newName)
	if isLockDir(from) {
		if fi, err := os.Lstat(d.m.backing(from)); err == nil && fi.IsDir() {
			return syscall.EACCES // "we do not allow rename for locks"
		}
	}
	if err := os.Rename(d.m.backing(from), d.m.backing(to)); err != nil {
		return errno(err)
	}
	d.m.b.Changed(d.m.node, from)
	d.m.b.Changed(d.m.node, to)
	return 0
}

// pmxcfs implements none of these: libfuse answers ENOSYS.
func (d *dirNode) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.ENOSYS
}

func (d *dirNode) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.ENOSYS
}

func (d *dirNode) Mknod(ctx context.Context, name string, mode, dev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.ENOSYS
}

// Statfs is memdb_statfs: a 128 MiB filesystem of 4 KiB blocks and at most
// 256k inodes.
func (d *dirNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	const blocks, inodes = 128 * 1024 * 1024 / 4096, 256 * 1024
	var usedBlocks, usedInodes uint64
	_ = filepath.WalkDir(d.m.backing(""), func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		usedInodes++
		if fi, err := e.Info(); err == nil && !e.IsDir() {
			usedBlocks += uint64(fi.Size()+4095) / 4096
		}
		return nil
	})
	free := blocks - min(usedBlocks, blocks)
	*out = fuse.StatfsOut{Blocks: blocks, Bfree: free, Bavail: free, Files: inodes,
		Ffree: inodes - min(usedInodes, inodes), Bsize: 4096, NameLen: 255, Frsize: 4096}
	return 0
}

// fileNode is a backed regular file.
type fileNode struct {
	fs.Inode
	m     *mounted
	found string // path at lookup, for nodePath
}

var (
	_ fs.NodeGetattrer = (*fileNode)(nil)
	_ fs.NodeSetattrer = (*fileNode)(nil)
	_ fs.NodeOpener    = (*fileNode)(nil)
)

func (n *fileNode) rel() string { return nodePath(&n.Inode, n.found) }

func (n *fileNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	var st syscall.Stat_t
	if err := syscall.Lstat(n.m.backing(n.rel()), &st); err != nil {
		if h, ok := f.(*handle); ok { // removed or renamed away while open
			if err := syscall.Fstat(int(h.f.Fd()), &st); err != nil {
				return errno(err)
			}
		} else {
			return errno(err)
		}
	}
	n.m.fillAttr(&out.Attr, &st, n.rel())
	return 0
}

func (n *fileNode) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if e := setattrRules(n.m, n.rel(), in); e != 0 {
		return e
	}
	if size, ok := in.GetSize(); ok {
		if e := n.m.writable(); e != 0 {
			return e
		}
		if size > MaxFileSize {
			return syscall.EFBIG
		}
		var err error
		if h, ok := f.(*handle); ok {
			err = h.f.Truncate(int64(size))
			h.wrote = true
		} else {
			err = os.Truncate(n.m.backing(n.rel()), int64(size))
			n.m.b.Changed(n.m.node, n.rel())
		}
		if err != nil {
			return errno(err)
		}
	}
	return n.Getattr(ctx, f, out)
}

func (n *fileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_TRUNC != 0 {
		if e := n.m.writable(); e != 0 {
			return nil, 0, e
		}
	}
	flags &^= syscall.O_APPEND | syscall.O_DIRECT | syscall.O_CREAT | syscall.O_EXCL
	f, err := os.OpenFile(n.m.backing(n.rel()), int(flags), 0)
	if err != nil {
		return nil, 0, errno(err)
	}
	h := &handle{m: n.m, rel: n.rel(), f: f, wrote: flags&syscall.O_TRUNC != 0}
	return h, fuse.FOPEN_DIRECT_IO, 0
}

// handle is an open backed file.
type handle struct {
	m     *mounted
	rel   string
	f     *os.File
	wrote bool
}

var (
	_ fs.FileReader   = (*handle)(nil)
	_ fs.FileWriter   = (*handle)(nil)
	_ fs.FileFlusher  = (*handle)(nil)
	_ fs.FileFsyncer  = (*handle)(nil)
	_ fs.FileReleaser = (*handle)(nil)
)

func (h *handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := h.f.ReadAt(dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, errno(err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if e := h.m.writable(); e != 0 {
		return 0, e
	}
	if off+int64(len(data)) > MaxFileSize {
		return 0, syscall.EFBIG
	}
	n, err := h.f.WriteAt(data, off)
	h.wrote = true
	if err != nil {
		return uint32(n), errno(err)
	}
	return uint32(n), 0
}

func (h *handle) Flush(ctx context.Context) syscall.Errno {
	if h.wrote {
		h.m.b.Changed(h.m.node, h.rel)
	}
	return 0
}

func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno { return 0 }

func (h *handle) Release(ctx context.Context) syscall.Errno {
	return errno(h.f.Close())
}

// genNode is a generated read-only root file (cfs_plug_func, mode 0440).
type genNode struct {
	fs.Inode
	m    *mounted
	name string
}

var (
	_ fs.NodeGetattrer = (*genNode)(nil)
	_ fs.NodeOpener    = (*genNode)(nil)
	_ fs.NodeReader    = (*genNode)(nil)
)

func (g *genNode) attr(out *fuse.Attr) syscall.Errno {
	now := time.Now()
	out.Mode = syscall.S_IFREG | 0o440
	out.Size = uint64(len(g.m.b.Generated(g.m.node, g.name)))
	out.Owner = fuse.Owner{Uid: 0, Gid: WWWDataGID}
	out.Nlink = 1
	out.SetTimes(&now, &now, &now)
	return 0
}

func (g *genNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	return g.attr(&out.Attr)
}

func (g *genNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC) != 0 {
		return nil, 0, syscall.EACCES
	}
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

func (g *genNode) Read(ctx context.Context, f fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	data := g.m.b.Generated(g.m.node, g.name)
	if off >= int64(len(data)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(data[off:min(int64(len(data)), off+int64(len(dest)))]), 0
}

// linkNode is one of the root's links into nodes/<this node>/.
type linkNode struct {
	fs.Inode
	m      *mounted
	target string
}

var (
	_ fs.NodeGetattrer  = (*linkNode)(nil)
	_ fs.NodeReadlinker = (*linkNode)(nil)
)

func (l *linkNode) attr(out *fuse.Attr) {
	now := time.Now()
	out.Mode = attrMode(syscall.S_IFLNK, "", l.m.b.Quorate(l.m.node))
	out.Size = uint64(len(l.target))
	out.Owner = fuse.Owner{Uid: 0, Gid: WWWDataGID}
	out.Nlink = 1
	out.SetTimes(&now, &now, &now)
}

func (l *linkNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	l.attr(&out.Attr)
	return 0
}

func (l *linkNode) Readlink(ctx context.Context) ([]byte, syscall.Errno) { return []byte(l.target), 0 }
