package host

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Root is the filesystem prefix every path is resolved against: "/" on a real
// node, a temporary directory in tests. Paths handed to Root methods and
// stored in results are always the node's own ("logical") absolute paths;
// only the file access goes through the prefix. Commands run by a Runner see
// logical paths too, because they run on the node itself.
//
// A Root made with ReadOnly refuses every write (ApplyFile, Remove,
// WriteInPlace, WriteThenAct) with a *WriteAttempt panic: check mode hands
// modules such a root, so a write in check mode is a loud bug, not a
// convention a module might forget.
type Root string

// readOnlyMark prefixes the directory of a read-only Root. A NUL byte never
// occurs in a path, so no real directory carries it by accident, and the
// mark travels with the value wherever the Root is copied.
const readOnlyMark = "\x00read-only\x00"

// ReadOnly returns the same root, refusing writes.
func (r Root) ReadOnly() Root {
	if r.IsReadOnly() {
		return r
	}
	return Root(readOnlyMark + string(r))
}

// IsReadOnly reports whether writes through r are refused.
func (r Root) IsReadOnly() bool { return strings.HasPrefix(string(r), readOnlyMark) }

// dir is the directory the root stands for.
func (r Root) dir() string { return strings.TrimPrefix(string(r), readOnlyMark) }

// String shows the directory, and whether it is read-only.
func (r Root) String() string {
	if r.IsReadOnly() {
		return r.dir() + " (read-only)"
	}
	return r.dir()
}

// Path maps a logical absolute path to the path to open on this machine.
func (r Root) Path(logical string) string {
	d := r.dir()
	if d == "" || d == "/" {
		return filepath.Clean("/" + logical)
	}
	return filepath.Join(d, filepath.Clean("/"+logical))
}

// Logical maps a real path under the root back to the node's own path, for
// symlink targets resolved on this machine. ok is false when real lies outside
// the root.
func (r Root) Logical(real string) (logical string, ok bool) {
	real = filepath.Clean(real)
	d := r.dir()
	if d == "" || d == "/" {
		return real, true
	}
	base := filepath.Clean(d)
	if real == base {
		return "/", true
	}
	if !strings.HasPrefix(real, base+string(filepath.Separator)) {
		return "", false
	}
	return real[len(base):], true
}

// WriteAttempt is the panic value of a write in check mode: a file write
// through a read-only Root, or a command a ReadOnly runner does not allow.
// It is always a bug in the module; the runtime reports the panic as such.
type WriteAttempt struct {
	What string // "write /etc/x", "run `apt-get install vim`"
}

func (w *WriteAttempt) Error() string {
	return fmt.Sprintf("check mode must not change the node, but the module tried to %s; this is a bug in gopve", w.What)
}

// mustWrite panics when r is read-only.
func (r Root) mustWrite(what string) {
	if r.IsReadOnly() {
		panic(&WriteAttempt{What: what})
	}
}
