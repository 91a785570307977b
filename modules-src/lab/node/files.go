package node

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
)

// prepare writes the node's own files into its upper layer, once. Writing the
// upper directory before the overlay is mounted is how files "appear" in the
// node without the host's copies being touched.
func (n *Node) prepare() error {
	marker := filepath.Join(n.cfg.Dir, ".prepared")
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	for _, d := range []string{n.upper(), n.work(), n.merged(), filepath.Join(n.cfg.Dir, "disks")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("node %s: %w", n.cfg.Name, err)
		}
	}
	if err := n.writeBase(); err != nil {
		return fmt.Errorf("node %s: preparing its filesystem: %w", n.cfg.Name, err)
	}
	names := slices.Sorted(maps.Keys(n.cfg.Files))
	// Links last: their targets must exist.
	sort.SliceStable(names, func(i, j int) bool {
		return n.cfg.Files[names[i]].Link == "" && n.cfg.Files[names[j]].Link != ""
	})
	for _, p := range names {
		if err := n.writeFile(p, n.cfg.Files[p]); err != nil {
			return fmt.Errorf("node %s: writing %s: %w", n.cfg.Name, p, err)
		}
	}
	return os.WriteFile(marker, nil, 0o600)
}

// writeBase lays down what a freshly installed PVE host has and what must not
// leak from the host when the lower layer is this machine's own root.
func (n *Node) writeBase() error {
	c := n.cfg
	// Directories whose lower content must not show through: the host's
	// home, apt sources, apt settings and apt cache are not the node's.
	for _, d := range []string{"/root", "/etc/apt/sources.list.d", "/etc/apt/apt.conf.d",
		"/var/lib/apt/lists", "/var/cache/apt", "/etc/pve", "/var/lib/gopve-lab", "/etc/gopve-lab"} {
		if err := n.opaqueDir(d); err != nil {
			return err
		}
	}
	for _, d := range []string{"/var/lib/apt/lists/partial", "/var/cache/apt/archives/partial"} {
		if err := n.mkdirLike(d, "/var/lib/apt/lists/partial"); err != nil {
			return err
		}
	}
	// Keep the distribution's stock apt settings, not this machine's extras.
	for _, f := range []string{"01autoremove", "70debconf"} {
		src := filepath.Join(c.Lower, "etc/apt/apt.conf.d", f)
		if _, err := os.Stat(src); err == nil {
			if err := n.writeFile("/etc/apt/apt.conf.d/"+f, File{Source: src}); err != nil {
				return err
			}
		}
	}
	for _, f := range []string{".bashrc", ".profile"} {
		src := filepath.Join(c.Lower, "etc/skel", f)
		if _, err := os.Stat(src); err == nil {
			if err := n.writeFile("/root/"+f, File{Source: src}); err != nil {
				return err
			}
		}
	}
	// The node's apt files come from the lab (aptrepo.FreshFiles); the
	// lower root's sources.list names real mirrors.
	if err := n.whiteout("/etc/apt/sources.list"); err != nil {
		return err
	}
	// One host key per node; the lower root's other keys must not be offered.
	for _, k := range []string{"rsa", "ecdsa", "dsa"} {
		for _, suffix := range []string{"", ".pub"} {
			if err := n.whiteout("/etc/ssh/ssh_host_" + k + "_key" + suffix); err != nil {
				return err
			}
		}
	}
	machineID := make([]byte, 16)
	if _, err := rand.Read(machineID); err != nil {
		return err
	}
	hostPub := strings.TrimSpace(string(c.HostKeyPub))
	files := map[string]File{
		"/etc/hostname":                     {Data: []byte(c.Name + "\n")},
		"/etc/hosts":                        {Data: []byte(FreshHosts(c.Name, c.Domain, c.Addr))},
		"/etc/machine-id":                   {Data: []byte(hex.EncodeToString(machineID) + "\n"), Mode: 0o444},
		"/etc/modprobe.d/zfs.conf":          {Data: []byte(fmt.Sprintf("options zfs zfs_arc_max=%d\n", c.MemBytes/10))},
		"/etc/ssh/ssh_host_ed25519_key":     {Data: c.HostKey, Mode: 0o600},
		"/etc/ssh/ssh_host_ed25519_key.pub": {Data: []byte(hostPub + " root@" + c.Name + "\n")},
		"/etc/gopve-lab/sshd_config":        {Data: []byte(sshdConfig)},
		"/var/lib/gopve-lab/pve-version":    {Data: []byte(fmt.Sprintf("%d\n", c.PVE))},
	}
	if c.EtcPve == "" {
		files["/etc/pve/priv/authorized_keys"] = File{Data: c.AuthorizedKeys, Mode: 0o600}
		files["/etc/pve/priv/known_hosts"] = File{Data: []byte(fmt.Sprintf("%s %s\n%s %s\n", c.Name, hostPub, c.Addr, hostPub))}
		if err := n.mkdir("/etc/pve/priv", 0o700); err != nil {
			return err
		}
	}
	if err := n.mkdir("/root/.ssh", 0o700); err != nil {
		return err
	}
	keys := make([]string, 0, len(files))
	for p := range files {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	for _, p := range keys {
		if err := n.writeFile(p, files[p]); err != nil {
			return err
		}
	}
	// As on PVE: root's authorized_keys and the system known_hosts live in
	// the cluster filesystem, reached through symlinks (C7).
	links := map[string]string{
		"/root/.ssh/authorized_keys": "/etc/pve/priv/authorized_keys",
		"/etc/ssh/ssh_known_hosts":   "/etc/pve/priv/known_hosts",
	}
	if c.EtcPve == "" { // pmxcfs provides these itself
		for _, sub := range []string{"qemu-server", "lxc", "openvz", "priv"} {
			if err := n.mkdir("/etc/pve/nodes/"+c.Name+"/"+sub, 0o755); err != nil {
				return err
			}
		}
		links["/etc/pve/local"] = "nodes/" + c.Name
		links["/etc/pve/qemu-server"] = "nodes/" + c.Name + "/qemu-server"
		links["/etc/pve/lxc"] = "nodes/" + c.Name + "/lxc"
		links["/etc/pve/openvz"] = "nodes/" + c.Name + "/openvz"
	}
	for from, to := range links {
		if err := n.symlink(to, from); err != nil {
			return err
		}
	}
	return nil
}

// sshdConfig is the node's sshd configuration, kept out of /etc/ssh so that
// a role editing sshd_config edits the distribution's file as on a real node.
const sshdConfig = `# gopve lab node sshd (ListenAddress comes from the command line)
Port 22
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM yes
X11Forwarding no
PrintMotd no
PidFile /run/sshd.pid
AcceptEnv LANG LC_*
Subsystem sftp /usr/lib/openssh/sftp-server
MaxStartups 50:30:100
`

// FreshHosts is /etc/hosts as the PVE installer writes it: the node's own
// address with FQDN and short name, and no other cluster member (C1 is the
// modules' job).
func FreshHosts(name, domain, addr string) string {
	return fmt.Sprintf(`127.0.0.1 localhost.localdomain localhost
%s %s.%s %s

# The following lines are desirable for IPv6 capable hosts

::1     ip6-localhost ip6-loopback
fe00::0 ip6-localnet
ff00::0 ip6-mcastprefix
ff02::1 ip6-allnodes
ff02::2 ip6-allrouters
ff02::3 ip6-allhosts
`, addr, name, domain, name)
}

// inUpper maps a node path into the upper layer, refusing escapes.
func (n *Node) inUpper(p string) (string, error) {
	if !strings.HasPrefix(p, "/") || strings.Contains(p, "..") {
		return "", fmt.Errorf("node path %q must be absolute and clean", p)
	}
	clean := path.Clean(p)
	return filepath.Join(n.upper(), filepath.FromSlash(clean)), nil
}

// mkdirLike creates node directory p (and its parents) with the mode and
// owner the lower root gives it, or of model when the lower root lacks it.
func (n *Node) mkdirLike(p, model string) error {
	parent := path.Dir(p)
	if parent != "/" {
		if err := n.mkdirLike(parent, ""); err != nil {
			return err
		}
	}
	dst, err := n.inUpper(p)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(dst); err == nil {
		return nil
	}
	mode, uid, gid := os.FileMode(0o755), 0, 0
	for _, ref := range []string{p, model} {
		if ref == "" {
			continue
		}
		if fi, err := os.Stat(filepath.Join(n.cfg.Lower, ref)); err == nil && fi.IsDir() {
			mode = fi.Mode().Perm() | fi.Mode()&os.ModeSticky
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				uid, gid = int(st.Uid), int(st.Gid)
			}
			break
		}
	}
	if err := os.Mkdir(dst, mode); err != nil {
		return err
	}
	if err := os.Chmod(dst, mode); err != nil { // umask-proof
		return err
	}
	return os.Lchown(dst, uid, gid)
}

func (n *Node) mkdir(p string, mode os.FileMode) error {
	if err := n.mkdirLike(path.Dir(p), ""); err != nil {
		return err
	}
	dst, err := n.inUpper(p)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, mode); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}

// opaqueDir creates p in the upper layer marked opaque: the lower root's
// entries below it are hidden from the node.
func (n *Node) opaqueDir(p string) error {
	if err := n.mkdirLike(p, ""); err != nil {
		return err
	}
	dst, _ := n.inUpper(p)
	if err := syscall.Setxattr(dst, "trusted.overlay.opaque", []byte("y"), 0); err != nil {
		return fmt.Errorf("marking %s opaque (needs root and an xattr-capable filesystem): %w", dst, err)
	}
	return nil
}

// whiteout hides lower file p from the node (an overlayfs whiteout: a 0/0
// character device in the upper layer), if the lower root has it.
func (n *Node) whiteout(p string) error {
	if _, err := os.Lstat(filepath.Join(n.cfg.Lower, p)); err != nil {
		return nil
	}
	if err := n.mkdirLike(path.Dir(p), ""); err != nil {
		return err
	}
	dst, _ := n.inUpper(p)
	if err := syscall.Mknod(dst, syscall.S_IFCHR, 0); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("hiding %s: %w", p, err)
	}
	return nil
}

func (n *Node) symlink(target, p string) error {
	if err := n.mkdirLike(path.Dir(p), ""); err != nil {
		return err
	}
	dst, _ := n.inUpper(p)
	_ = os.Remove(dst)
	return os.Symlink(target, dst)
}

func (n *Node) writeFile(p string, f File) error {
	if err := n.mkdirLike(path.Dir(p), ""); err != nil {
		return err
	}
	dst, err := n.inUpper(p)
	if err != nil {
		return err
	}
	if f.Link != "" {
		src, err := n.inUpper(f.Link)
		if err != nil {
			return err
		}
		_ = os.Remove(dst)
		return os.Link(src, dst)
	}
	mode := f.Mode
	if mode == 0 {
		mode = 0o644
	}
	data := f.Data
	if f.Source != "" {
		src, err := os.Open(f.Source)
		if err != nil {
			return err
		}
		defer src.Close()
		if fi, err := src.Stat(); err == nil && f.Mode == 0 {
			mode = fi.Mode().Perm()
		}
		if data, err = io.ReadAll(src); err != nil {
			return err
		}
	}
	_ = os.Remove(dst)
	if err := os.WriteFile(dst, data, mode); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}
