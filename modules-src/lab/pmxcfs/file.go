package pmxcfs

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

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
