package storage

import (
	"fmt"
	"path"
)

// The zfs commands ZFSPoolPlugin.pm runs for guest volumes
// (zfs_create_zvol, zfs_create_subvol, create_base, clone_image,
// volume_resize, free_image), as argument lists; pvesim runs them on the
// node's ZFS.

// Dataset is the dataset behind a zfspool volume name; a linked clone's
// name "base-100-disk-0/vm-101-disk-0" is the dataset vm-101-disk-0.
func Dataset(st *Section, volname string) string {
	return st.Opt("pool") + "/" + path.Base(volname)
}

// KiB is a size as ZFSPoolPlugin passes it: "<KiB>k".
func KiB(bytes int64) string { return fmt.Sprintf("%dk", bytes/1024) }

// ZvolCreate is zfs_create_zvol: -s on a sparse storage, -b with the
// storage's blocksize.
func ZvolCreate(st *Section, name string, size int64) []string {
	args := []string{"create"}
	if st.Opt("sparse") == "1" {
		args = append(args, "-s")
	}
	if bs := st.Opt("blocksize"); bs != "" {
		args = append(args, "-b", bs)
	}
	return append(args, "-V", KiB(size), Dataset(st, name))
}

// SubvolCreate is zfs_create_subvol: a filesystem with a refquota, none
// for size 0.
func SubvolCreate(st *Section, name string, size int64) []string {
	quota := "none"
	if size > 0 {
		quota = KiB(size)
	}
	return []string{"create", "-o", "acltype=posixacl", "-o", "xattr=sa", "-o", "refquota=" + quota, Dataset(st, name)}
}

// Resize is volume_resize: zvols get volsize (a raw one rounded up to
// 1 MiB, so it stays a multiple of the block size), subvolumes refquota.
func Resize(st *Section, volname, format string, size int64) []string {
	attr := "volsize"
	if format == "subvol" {
		attr = "refquota"
	}
	k := size / 1024
	if format == "raw" {
		k += (1024 - k%1024) % 1024
	}
	return []string{"set", fmt.Sprintf("%s=%dk", attr, k), Dataset(st, volname)}
}
