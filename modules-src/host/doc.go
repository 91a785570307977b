// Package host is the node-side toolkit every gopve module shares: it reads
// and edits files under a root prefix (so tests run on a temporary directory
// and modules on "/"), and it runs commands through a Runner (real exec with a
// log, or a fake in tests).
//
// The package is split by job:
//
//   - host (this package): Root, atomic file edits with diffs and backups
//     (written through symbolic links, compare-and-swap against what was
//     read: ConflictError), WriteThenAct for a write whose effect needs a
//     second action (undone if the action fails), the command Runner and its
//     log (commands cancelled with SIGTERM to their process group), and
//     check mode's read-only Root and Runner (ReadOnly, ReadOnlyCommand:
//     a write attempt panics with *WriteAttempt, a bug).
//   - host/apt: /etc/os-release, deb822 .sources and one-line .list files,
//     apt-get/apt-cache/dpkg-query wrappers.
//   - host/modprobe: module option files such as /etc/modprobe.d/zfs.conf.
//   - host/size: byte sizes with units ("4G", "4096M").
//   - host/blockdev: /dev/disk/by-id resolution and blkid signature probes.
//   - host/hosttest: a scripted fake Runner for unit tests.
//
// Nothing here decides policy: modules observe with these helpers, plan, and
// then apply the planned FileChange values and commands.
package host
