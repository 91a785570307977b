package labctl

import (
	"fmt"
	"path/filepath"

	"github.com/gopve/proxmox/modules-src/lab/systool"
)

// MaxSocketPath is the longest path a Unix socket can be bound at on
// Linux: sun_path in struct sockaddr_un is 108 bytes, and the path needs
// its terminating NUL.
const MaxSocketPath = 107

// socketPaths are the Unix sockets a lab in dir binds: its control socket
// and its own socket (gpg-agent's, while the apt repositories are signed,
// are in a short temporary directory: aptrepo.Build).
func socketPaths(dir string) []string {
	return []string{filepath.Join(dir, "control.sock"), filepath.Join(dir, SocketFile)}
}

// CheckDir refuses a lab directory (absolute) whose sockets would not fit
// a socket address: binding them later fails with a bare "invalid
// argument".
func CheckDir(dir string) error {
	for _, p := range socketPaths(dir) {
		if len(p) > MaxSocketPath {
			return fmt.Errorf("the lab directory %s is too long: the lab's socket %s would be %d bytes, "+
				"over the %d a Unix socket path may have on Linux (sun_path is 108 bytes with its NUL); "+
				"use a directory of at most %d bytes", dir, p, len(p), MaxSocketPath, len(dir)-(len(p)-MaxSocketPath))
		}
	}
	return nil
}

// hostTools are the host programs a lab runs: checked before anything
// starts so that a missing one is named up front.
var hostTools = []string{"unshare", "nsenter", "chroot", "losetup", "mkfs.ext4", "mount", "awk",
	"dpkg-deb", "apt-ftparchive", "gpg", "gpgconf"}

// CheckHostTools names the first missing host tool and its Debian package.
func CheckHostTools() error {
	for _, t := range hostTools {
		if _, err := systool.Path(t); err != nil {
			return err
		}
	}
	return nil
}
