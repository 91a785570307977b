// Package systool finds the host programs the lab runs (losetup, unshare,
// sshd, mkfs.ext4, gpg, …) in the system directories rather than through
// PATH: `lab up` from a cron job, sudo with secure_path, or a shell whose
// PATH lacks /usr/sbin must still find losetup, and a missing tool must be
// named with the Debian package that brings it.
package systool

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Dirs are searched in order; PATH is not.
var Dirs = []string{"/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// packages names the Debian package of each tool the lab runs.
var packages = map[string]string{
	"losetup": "mount", "mount": "mount", "umount": "mount",
	"mkfs.ext4": "e2fsprogs",
	"unshare":   "util-linux", "nsenter": "util-linux",
	"sshd": "openssh-server", "ssh": "openssh-client",
	"dpkg-deb": "dpkg", "apt-ftparchive": "apt-utils",
	"gpg": "gpg", "gpgconf": "gpgconf",
	"chroot": "coreutils", "awk": "mawk",
}

// Package is the Debian package that installs tool ("" if unknown).
func Package(tool string) string { return packages[tool] }

// Path returns the absolute path of tool.
func Path(tool string) (string, error) { return find(tool, Dirs) }

func find(tool string, dirs []string) (string, error) {
	for _, d := range dirs {
		p := filepath.Join(d, tool)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	pkg := ""
	if p := packages[tool]; p != "" {
		pkg = fmt.Sprintf(" (Debian package %s: apt-get install %s)", p, p)
	}
	return "", fmt.Errorf("the lab needs %s%s: not found in %s", tool, pkg, strings.Join(dirs, ", "))
}

// Env is the environment for the lab's host programs: the process's own,
// with PATH led by the system directories, so that what they run in turn
// (dpkg-deb runs tar, gpg its agent) is found as well.
func Env(extra ...string) []string {
	path := strings.Join(Dirs, ":")
	var env []string
	for _, kv := range os.Environ() {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			if v != "" {
				path += ":" + v
			}
			continue
		}
		env = append(env, kv)
	}
	return append(append(env, "PATH="+path), extra...)
}

// Command is exec.CommandContext for tool found by Path, with Env.
func Command(ctx context.Context, tool string, args ...string) (*exec.Cmd, error) {
	p, err := Path(tool)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, p, args...)
	cmd.Env = Env()
	return cmd, nil
}
