package pmxcfs

import (
	"context"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

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
