package host

import (
	"path/filepath"
	"strings"
)

// Root is the filesystem prefix every path is resolved against: "/" on a real
// node, a temporary directory in tests. Paths handed to Root methods and
// stored in results are always the node's own ("logical") absolute paths;
// only the file access goes through the prefix. Commands run by a Runner see
// logical paths too, because they run on the node itself.
type Root string

// Path maps a logical absolute path to the path to open on this machine.
func (r Root) Path(logical string) string {
	if r == "" || r == "/" {
		return filepath.Clean("/" + logical)
	}
	return filepath.Join(string(r), filepath.Clean("/"+logical))
}

// Logical maps a real path under the root back to the node's own path, for
// symlink targets resolved on this machine. ok is false when real lies outside
// the root.
func (r Root) Logical(real string) (logical string, ok bool) {
	real = filepath.Clean(real)
	if r == "" || r == "/" {
		return real, true
	}
	base := filepath.Clean(string(r))
	if real == base {
		return "/", true
	}
	if !strings.HasPrefix(real, base+string(filepath.Separator)) {
		return "", false
	}
	return real[len(base):], true
}
