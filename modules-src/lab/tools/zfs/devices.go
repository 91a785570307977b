package zfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/tools/zfslabel"
	"golang.org/x/sys/unix"
)

// leaf is a device argument of zpool create after resolution.
type leaf struct {
	arg      string // path as recorded (Z2: the path the user gave)
	resolved string
	size     int64
	file     bool
	ashift   int // what ZFS would auto-detect: log2 of the physical sector size
}

// resolveLeaf mirrors make_leaf_vdev: absolute paths are used as given, bare
// names are looked up under /dev and /dev/disk/by-*.
func resolveLeaf(arg string) (*leaf, error) {
	p := arg
	if !strings.HasPrefix(arg, "/") {
		p = ""
		for _, dir := range []string{"/dev", "/dev/disk/by-id", "/dev/disk/by-path", "/dev/disk/by-uuid", "/dev/disk/by-partuuid", "/dev/mapper"} {
			if _, err := os.Stat(filepath.Join(dir, arg)); err == nil {
				p = filepath.Join(dir, arg)
				break
			}
		}
		if p == "" {
			return nil, fmt.Errorf("cannot resolve path '%s'", arg)
		}
	}
	st, err := os.Stat(p)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("cannot open '%s': %s", p, capitalize(err.Error()))
	}
	l := &leaf{arg: p}
	switch {
	case st.Mode()&os.ModeDevice != 0 && st.Mode()&os.ModeCharDevice == 0:
	case st.Mode().IsRegular():
		l.file = true
	default:
		return nil, fmt.Errorf("cannot use '%s': must be a block device or regular file", p)
	}
	if l.resolved, err = filepath.EvalSymlinks(p); err != nil {
		return nil, fmt.Errorf("cannot open '%s': %w", p, err)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("cannot open '%s': %w", p, err)
	}
	defer f.Close()
	if l.size, err = zfslabel.Size(f); err != nil {
		return nil, err
	}
	l.ashift = 9 // files, and disks with 512-byte physical sectors
	if !l.file {
		if pbs, err := unix.IoctlGetInt(int(f.Fd()), unix.BLKPBSZGET); err == nil && pbs > 512 {
			for l.ashift = 9; 1<<l.ashift < pbs && l.ashift < 16; l.ashift++ {
			}
		}
	}
	return l, nil
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// signature asks the real blkid, as libzfs does through libblkid, which
// filesystem type the device carries ("" when none or blkid is missing).
func signature(path string) string {
	bin, err := exec.LookPath("blkid")
	if err != nil {
		for _, p := range []string{"/usr/sbin/blkid", "/sbin/blkid"} {
			if _, err := os.Stat(p); err == nil {
				bin = p
			}
		}
	}
	if bin == "" {
		return ""
	}
	out, err := exec.Command(bin, "-p", "-o", "value", "-s", "TYPE", path).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
