package node

import (
	"fmt"
	"path/filepath"
	"strings"
)

// script is the shell program unshare runs as the node's first process: it
// builds the node's mounts inside the fresh mount namespace, then becomes
// sshd (PID 1 of the node) chrooted into the overlay.
func (n *Node) script() string {
	c := n.cfg
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	m := q(n.merged())
	w("set -eu")
	// The host tools the script runs are found in the system directories,
	// whatever PATH the lab was started with.
	w("PATH=/usr/sbin:/usr/bin:/sbin:/bin; export PATH")
	w("m=%s", m)
	w("mount -t overlay overlay -o %s \"$m\"", q("lowerdir="+c.Lower+",upperdir="+n.upper()+",workdir="+n.work()))
	w(`mount -t proc -o nosuid,nodev,noexec proc "$m/proc"`)
	// Real sysfs, read-only, so tools that walk /sys work; its /sys/module
	// is covered by a tmpfs holding the one ZFS parameter modules touch.
	// Writable like the real file, and set at "boot" from zfs.conf as the
	// module load would (B4): a restart of the node is a reboot.
	w(`mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$m/sys"`)
	w(`mount -t tmpfs -o mode=755,size=1m,nosuid,nodev gopve-sysmodule "$m/sys/module"`)
	w(`mkdir -p "$m/sys/module/zfs/parameters"`)
	w(`arc=$(sed -n 's/^options zfs.*zfs_arc_max=\([0-9]*\).*/\1/p' "$m/etc/modprobe.d/zfs.conf" 2>/dev/null | tail -n 1)`)
	w(`echo "${arc:-0}" > "$m/sys/module/zfs/parameters/zfs_arc_max"`)
	// /dev: only the device nodes a host needs, plus the node's disks.
	w(`mount -t tmpfs -o mode=755,size=1m,nosuid gopve-dev "$m/dev"`)
	for _, d := range []string{"null 1 3", "zero 1 5", "full 1 7", "random 1 8", "urandom 1 9", "tty 5 0"} {
		f := strings.Fields(d)
		w(`mknod -m 666 "$m/dev/%s" c %s %s`, f[0], f[1], f[2])
	}
	w(`mkdir -p "$m/dev/pts" "$m/dev/shm" "$m/dev/disk/by-id"`)
	w(`mount -t devpts -o newinstance,ptmxmode=0666,mode=620,gid=5 devpts "$m/dev/pts"`)
	w(`mount -t tmpfs -o mode=1777,nosuid,nodev shm "$m/dev/shm"`)
	w(`ln -s pts/ptmx "$m/dev/ptmx"; ln -s /proc/self/fd "$m/dev/fd"`)
	w(`ln -s /proc/self/fd/0 "$m/dev/stdin"; ln -s /proc/self/fd/1 "$m/dev/stdout"; ln -s /proc/self/fd/2 "$m/dev/stderr"`)
	for _, a := range n.disks {
		devNode(w, a.disk.Name, a.dev)
		for _, id := range a.disk.IDs {
			w(`ln -s ../../%s "$m/dev/disk/by-id/%s"`, a.disk.Name, id)
		}
		if a.part != "" {
			devNode(w, a.disk.PartName(), a.part)
			for _, id := range a.disk.IDs {
				w(`ln -s ../../%s "$m/dev/disk/by-id/%s-part1"`, a.disk.PartName(), id)
			}
		}
	}
	w(`mount -t tmpfs -o mode=755,size=64m,nosuid,nodev gopve-run "$m/run"`)
	w(`mkdir -p "$m/run/sshd" "$m/run/lock" "$m/run/gopve-lab"`)
	w(`mount -t tmpfs -o mode=1777,nosuid,nodev gopve-tmp "$m/tmp"`)
	for _, bnd := range c.Binds {
		t := q(filepath.Join(n.merged(), bnd.Target))
		w(`mkdir -p "$(dirname %s)"; touch %s; mount --bind %s %s`, t, t, q(bnd.Source), t)
	}
	if c.EtcPve != "" {
		w(`mkdir -p "$m/etc/pve"; mount --bind %s "$m/etc/pve"`, q(c.EtcPve))
	}
	for _, typ := range c.DropFSTypes {
		w(`for p in $(awk -v t=%s '{for (i = 7; i <= NF; i++) if ($i == "-") {if ($(i+1) == t) print $5; break}}' /proc/self/mountinfo); do`, q(typ))
		w(`  case "$p" in "$m"|"$m"/*) ;; *) umount -l "$p" 2>/dev/null || true ;; esac`)
		w(`done`)
	}
	for _, h := range c.Hide {
		t := q(filepath.Join(n.merged(), h))
		w(`if [ -d %s ]; then mount -t tmpfs -o size=4k,mode=700 gopve-hidden %s; fi`, t, t)
	}
	// The kernel the node "booted": the newest one installed (B5).
	w(`k=$(ls "$m/boot" 2>/dev/null | sed -n 's/^vmlinuz-\(.*-pve\)$/\1/p' | sort -V | tail -n 1)`)
	w(`mkdir -p "$m/var/lib/gopve-lab"`)
	w(`if [ -n "$k" ]; then echo "$k" > "$m/var/lib/gopve-lab/running-kernel"; fi`)
	// The node's uname release, as /proc/sys/kernel/osrelease shows it: the
	// booted kernel, else the host's (a plain Debian node before PVE is
	// installed). Reconstruction: uname(2) itself still returns the host's
	// release (a UTS namespace cannot change it); what reads the file, as
	// pve_base does, sees the node's. install (labctl) rewrites the same
	// file, so a node that gets PVE's kernel installed shows it at once,
	// as the installer's reboot would.
	w(`[ -s "$m/var/lib/gopve-lab/running-kernel" ] || uname -r > "$m/var/lib/gopve-lab/running-kernel"`)
	w(`mount --bind "$m/var/lib/gopve-lab/running-kernel" "$m/proc/sys/kernel/osrelease"`)
	w("hostname %s", q(c.Name))
	w(`exec chroot "$m" /usr/sbin/sshd -D -e -f /etc/gopve-lab/sshd_config -o ListenAddress=%s`, q(c.Addr+":22"))
	return b.String()
}

// devNode creates a block device node from a "major:minor" string.
func devNode(w func(string, ...any), name, majMin string) {
	maj, min, _ := strings.Cut(majMin, ":")
	w(`mknod -m 660 "$m/dev/%s" b %s %s; chgrp disk "$m/dev/%s" 2>/dev/null || true`, name, maj, min, name)
}

// q quotes s for the shell.
func q(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
