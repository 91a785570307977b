package pmxcfs

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

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
	if vm, ok := ParseVMConfigPath(rel); ok && otherVMConfig(d.m.b.Dir(d.m.node), vm) {
		return nil, nil, 0, syscall.EEXIST // the VMID is taken elsewhere in the cluster
	}
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
	if vm, ok := ParseVMConfigPath(to); ok {
		// Moving a guest's config to another node (migration) is allowed
		// for the same VMID; anything else must not take a used VMID.
		src, fromVM := ParseVMConfigPath(from)
		if !(fromVM && src.VMID == vm.VMID) && otherVMConfig(d.m.b.Dir(d.m.node), vm) {
			return syscall.EEXIST
		}
	}
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
