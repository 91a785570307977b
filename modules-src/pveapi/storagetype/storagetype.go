// Package storagetype is what PVE knows about each storage type, written
// once for the modules and the lab: which types are shared by default,
// which keep their volumes as files under a path, which content types and
// disk formats they take and default to, how a new guest disk is named,
// whether a base volume can be linked and a volume replicated, and (for
// the types gopve manages) the options each plugin's options() takes.
//
// It follows proxmox/pve-storage: each plugin's plugindata() (content,
// format, sensitive-properties), options() and check_config, and
// PVE::Storage::Plugin's @SHARED_STORAGE, get_formats,
// get_next_vm_diskname and volume_has_feature, read at 8.3.6 (PVE 8) and
// at the 9.1 head (PVE 9); and PVE::LXC alloc_disk (pve-container) for a
// container's volume format. The module side imports it, and so does the
// lab (lab/pvesim), so the two cannot drift; its table test checks it
// against those sources (storagetype_test.go).
package storagetype

import (
	"fmt"
	"regexp"
	"slices"
)

// Type is one storage plugin.
type Type struct {
	Name   string
	Plugin string // the pve-storage source, src/PVE/Storage/<Plugin>.pm

	// Content is plugindata content->[0] (what the type can hold);
	// DefaultContent is content->[1] (what a storage without `content`
	// holds).
	Content, DefaultContent []string
	// Formats is plugindata format->[0] (nil: raw only, get_formats);
	// the default, format->[1], is raw for every type that has one.
	Formats []string
	// Path: the storage has a path and keeps volumes as files,
	// images/<vmid>/<name>.<format> (Plugin.pm alloc_image; dir, nfs,
	// cifs, glusterfs, cephfs, btrfs).
	Path bool
	// LinkedClone is volume_has_feature(clone) on a base volume: a
	// template's disk can be linked (Plugin.pm for file storages, its
	// base formats qcow2/raw/vmdk; LvmThinPlugin, ZFSPoolPlugin,
	// RBDPlugin, ZFSPlugin). LVM (thick) cannot.
	LinkedClone bool
	// Replicates is volume_has_feature(replicate): only ZFSPoolPlugin.
	Replicates bool
	// DefaultPath: check_config sets path to /mnt/pve/<storeid> on create
	// when none is given (NFSPlugin, CIFSPlugin, CephFSPlugin).
	DefaultPath bool

	// The options() of the types gopve manages (nil for the others):
	// Options lists every key of both versions, Required the ones
	// without `optional`, Fixed the `fixed` ones (PVE refuses to change
	// them), V8Only/V9Only the keys of one version's plugin only.
	Options, Required, Fixed, V8Only, V9Only []string
	// Sensitive is plugindata 'sensitive-properties': taken out of the
	// request before check_config, kept under /etc/pve/priv, never in
	// storage.cfg (API2/Storage/Config.pm).
	Sensitive []string
	// Since is the first PVE major the type exists in, Until the last (0:
	// still there): GlusterFS was dropped in PVE 9.
	Since, Until int
}

// fileContent is DirPlugin's and BTRFSPlugin's plugindata content.
var fileContent = []string{"images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import", "none"}

// mountedContent is NFSPlugin's and CIFSPlugin's: no "none".
var mountedContent = []string{"images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import"}

var fileFormats = []string{"raw", "qcow2", "vmdk"}

var table = []Type{
	{Name: "dir", Plugin: "DirPlugin",
		Content: fileContent, DefaultContent: []string{"images", "rootdir"},
		Formats: []string{"raw", "qcow2", "vmdk", "subvol"}, Path: true, LinkedClone: true,
		Options: []string{"path", "content-dirs", "nodes", "shared", "disable", "prune-backups", "max-protected-backups",
			"content", "format", "mkdir", "create-base-path", "create-subdirs", "is_mountpoint", "bwlimit", "preallocation"},
		Required: []string{"path"},
		Fixed:    []string{"path", "snapshot-as-volume-chain"},
		V8Only:   []string{"maxfiles"},
		V9Only:   []string{"snapshot-as-volume-chain"},
	},
	// path is not optional, but check_config defaults it.
	{Name: "nfs", Plugin: "NFSPlugin",
		Content: mountedContent, DefaultContent: []string{"images"},
		Formats: fileFormats, Path: true, LinkedClone: true, DefaultPath: true,
		Options: []string{"path", "server", "export", "options", "content-dirs", "nodes", "disable", "prune-backups",
			"max-protected-backups", "content", "format", "mkdir", "create-base-path", "create-subdirs", "bwlimit", "preallocation"},
		Required: []string{"path", "server", "export"},
		Fixed:    []string{"path", "server", "export", "snapshot-as-volume-chain"},
		V8Only:   []string{"maxfiles"},
		V9Only:   []string{"snapshot-as-volume-chain"},
	},
	{Name: "cifs", Plugin: "CIFSPlugin",
		Content: mountedContent, DefaultContent: []string{"images"},
		Formats: fileFormats, Path: true, LinkedClone: true, DefaultPath: true,
		Options: []string{"path", "content-dirs", "server", "share", "subdir", "nodes", "disable", "prune-backups",
			"max-protected-backups", "content", "format", "username", "password", "domain", "smbversion", "mkdir",
			"create-base-path", "create-subdirs", "bwlimit", "preallocation", "options"},
		Required:  []string{"path", "server", "share"},
		Fixed:     []string{"path", "server", "share", "snapshot-as-volume-chain"},
		V8Only:    []string{"maxfiles"},
		V9Only:    []string{"snapshot-as-volume-chain"},
		Sensitive: []string{"password"},
	},
	{Name: "glusterfs", Plugin: "GlusterfsPlugin", Until: 8,
		Content:        []string{"images", "vztmpl", "iso", "backup", "snippets", "import"},
		DefaultContent: []string{"images"}, Formats: fileFormats, Path: true, LinkedClone: true,
	},
	{Name: "cephfs", Plugin: "CephFSPlugin",
		Content:        []string{"vztmpl", "iso", "backup", "snippets", "import"},
		DefaultContent: []string{"backup"}, Path: true, LinkedClone: true, DefaultPath: true,
		Sensitive: []string{"keyring"},
	},
	{Name: "btrfs", Plugin: "BTRFSPlugin",
		Content: fileContent, DefaultContent: []string{"images", "rootdir"},
		Formats: []string{"raw", "subvol"}, Path: true, LinkedClone: true,
	},
	{Name: "zfspool", Plugin: "ZFSPoolPlugin",
		Content: []string{"images", "rootdir"}, DefaultContent: []string{"images", "rootdir"},
		Formats: []string{"raw", "subvol"}, LinkedClone: true, Replicates: true,
		Options:  []string{"pool", "blocksize", "sparse", "nodes", "disable", "content", "bwlimit", "mountpoint"},
		Required: []string{"pool"},
		Fixed:    []string{"pool"},
	},
	// ZFS over iSCSI.
	{Name: "zfs", Plugin: "ZFSPlugin",
		Content: []string{"images"}, DefaultContent: []string{"images"}, LinkedClone: true,
	},
	{Name: "lvmthin", Plugin: "LvmThinPlugin",
		Content: []string{"images", "rootdir"}, DefaultContent: []string{"images", "rootdir"}, LinkedClone: true,
		Options:  []string{"thinpool", "vgname", "nodes", "disable", "content", "bwlimit"},
		Required: []string{"thinpool", "vgname"},
		Fixed:    []string{"thinpool", "vgname"},
	},
	// base is fixed but optional; snapshot-as-volume-chain (PVE 9) is
	// optional and, unlike on dir/nfs/cifs, not fixed. Its plugindata
	// formats on PVE 9 are raw and qcow2, but get_formats offers qcow2
	// only with snapshot-as-volume-chain (Formats is raw: see
	// ValidFormats).
	{Name: "lvm", Plugin: "LVMPlugin",
		Content: []string{"images", "rootdir"}, DefaultContent: []string{"images"},
		Options:  []string{"vgname", "base", "saferemove", "saferemove_throughput", "shared", "tagged_only", "nodes", "disable", "content", "bwlimit"},
		Required: []string{"vgname"},
		Fixed:    []string{"vgname", "base"},
		V9Only:   []string{"snapshot-as-volume-chain", "saferemove-stepsize"},
	},
	{Name: "rbd", Plugin: "RBDPlugin",
		Content: []string{"images", "rootdir"}, DefaultContent: []string{"images"}, LinkedClone: true,
		Sensitive: []string{"keyring"},
	},
	{Name: "iscsi", Plugin: "ISCSIPlugin", Content: []string{"images", "none"}, DefaultContent: []string{"images"}},
	{Name: "iscsidirect", Plugin: "ISCSIDirectPlugin", Content: []string{"images", "none"}, DefaultContent: []string{"images"}},
	// password, encryption-key and master-pubkey are sensitive;
	// storage.cfg keeps the key's fingerprint and a "master-pubkey 1"
	// marker (on_add_hook).
	{Name: "pbs", Plugin: "PBSPlugin",
		Content: []string{"backup", "none"}, DefaultContent: []string{"backup"},
		Options: []string{"server", "datastore", "namespace", "port", "nodes", "disable", "content", "username", "password",
			"encryption-key", "master-pubkey", "prune-backups", "max-protected-backups", "fingerprint"},
		Required:  []string{"server", "datastore"},
		Fixed:     []string{"server", "datastore"},
		V8Only:    []string{"maxfiles"},
		Sensitive: []string{"encryption-key", "master-pubkey", "password"},
	},
	{Name: "esxi", Plugin: "ESXiPlugin",
		Content: []string{"import"}, DefaultContent: []string{"import"}, Formats: fileFormats,
		Sensitive: []string{"password"},
	},
}

// sharedStorage is Plugin.pm's @SHARED_STORAGE per PVE major: parse_config
// sets `shared` on every storage of these types. GlusterFS left with its
// plugin in PVE 9 ("drop support for using GlusterFS directly"); drbd is
// an out-of-tree plugin's type.
var sharedStorage = map[int][]string{
	8: {"iscsi", "nfs", "cifs", "rbd", "cephfs", "iscsidirect", "glusterfs", "zfs", "drbd", "pbs"},
	9: {"iscsi", "nfs", "cifs", "rbd", "cephfs", "iscsidirect", "zfs", "drbd", "pbs"},
}

// Lookup is the type named name.
func Lookup(name string) (Type, bool) {
	i := slices.IndexFunc(table, func(t Type) bool { return t.Name == name })
	if i < 0 {
		return Type{}, false
	}
	return table[i], true
}

// Of is the type named name; an unknown type is a zero Type named name
// (nothing shared, no path, raw only), as a storage of a type this
// package does not know is treated.
func Of(name string) Type {
	if t, ok := Lookup(name); ok {
		return t
	}
	return Type{Name: name}
}

// Names is every type the table knows, in table order.
func Names() []string {
	var out []string
	for _, t := range table {
		out = append(out, t.Name)
	}
	return out
}

// Shared tells whether every storage of type typ is shared on PVE version
// (@SHARED_STORAGE); version 0 is any supported version, for a reader that
// does not know it (a type exists only where PVE has it).
func Shared(typ string, version int) bool {
	if version == 0 {
		return Shared(typ, 8) || Shared(typ, 9)
	}
	if version > 9 {
		version = 9
	}
	return slices.Contains(sharedStorage[version], typ)
}

// Managed tells whether the table holds the type's options() (the types
// pve_storage creates and the lab simulates).
func (t Type) Managed() bool { return t.Options != nil }

// Allows tells whether options() of PVE version takes key.
func (t Type) Allows(key string, version int) bool {
	if slices.Contains(t.Options, key) {
		return true
	}
	if version >= 9 {
		return slices.Contains(t.V9Only, key)
	}
	return slices.Contains(t.V8Only, key)
}

// MustGive is what a create must name: the required options but a path
// check_config defaults.
func (t Type) MustGive() []string {
	if !t.DefaultPath {
		return t.Required
	}
	return slices.DeleteFunc(slices.Clone(t.Required), func(k string) bool { return k == "path" })
}

// Holds tells whether the type can hold content.
func (t Type) Holds(content string) bool { return slices.Contains(t.Content, content) }

// ValidFormats is get_formats' valid set for a storage of this type
// (LVMPlugin: qcow2 only with snapshot-as-volume-chain).
func (t Type) ValidFormats(volumeChain bool) []string {
	if t.Name == "lvm" && volumeChain {
		return []string{"raw", "qcow2"}
	}
	if t.Formats == nil {
		return []string{"raw"}
	}
	return t.Formats
}

// DefaultFormat is get_formats' default (storage_default_format) for a
// storage of this type whose `format` option is format ("" = unset):
// that option where the type has formats, else raw; LVM with
// snapshot-as-volume-chain defaults to qcow2.
func (t Type) DefaultFormat(format string, volumeChain bool) string {
	switch {
	case t.Name == "lvm" && volumeChain:
		return "qcow2"
	case t.Formats == nil:
		return "raw"
	case format != "":
		return format
	}
	return "raw"
}

// FormatSuffix tells whether alloc_image names a new volume of format
// with the ".<format>" suffix: on a storage with a path (Plugin.pm
// alloc_image, $add_fmt_suffix = 1), and qcow2 on LVM (LVMPlugin
// find_free_diskname).
func (t Type) FormatSuffix(format string) bool {
	return t.Path || t.Name == "lvm" && format == "qcow2"
}

// DiskNumber is Plugin.pm's $get_vm_disk_number: the n that volname (a
// volume of vmid, as list_images lists it) takes from a new disk of
// format. Its match is unanchored, so a linked clone's
// <base>/vm-<vmid>-disk-n counts. On a type whose formats include subvol
// (dir, btrfs, zfspool) every (vm|base|subvol|basevol)-<vmid>-disk-n
// counts whatever its suffix; elsewhere only (vm|base)-<vmid>-disk-n with
// the new disk's suffix (a .raw does not take n from a .qcow2 on nfs).
func (t Type) DiskNumber(vmid int, volname, format string) (int, bool) {
	m := t.diskRegexp(vmid, format).FindStringSubmatch(volname)
	if m == nil {
		return 0, false
	}
	var n int
	if _, err := fmt.Sscan(m[2], &n); err != nil {
		return 0, false
	}
	return n, true
}

func (t Type) diskRegexp(vmid int, format string) *regexp.Regexp {
	if slices.Contains(t.Formats, "subvol") {
		return regexp.MustCompile(fmt.Sprintf(`(vm|base|subvol|basevol)-%d-disk-(\d+)`, vmid))
	}
	suffix := ""
	if t.FormatSuffix(format) {
		suffix = regexp.QuoteMeta("." + format)
	}
	return regexp.MustCompile(fmt.Sprintf(`(vm|base)-%d-disk-(\d+)%s`, vmid, suffix))
}

// DiskName is get_next_vm_diskname's name for disk n of vmid in format:
// subvol-… for a subvol, vm-… else, with the format's suffix where
// FormatSuffix says.
func (t Type) DiskName(vmid, n int, format string) string {
	prefix := "vm"
	if format == "subvol" {
		prefix = "subvol"
	}
	name := fmt.Sprintf("%s-%d-disk-%d", prefix, vmid, n)
	if t.FormatSuffix(format) {
		name += "." + format
	}
	return name
}

// FirstFreeDisk is get_next_vm_diskname: the first disk name of vmid in
// format that none of volnames (the VMID's volumes on the storage) takes.
func (t Type) FirstFreeDisk(vmid int, format string, volnames []string) (name string, n int) {
	taken := map[int]bool{}
	for _, v := range volnames {
		if i, ok := t.DiskNumber(vmid, v, format); ok {
			taken[i] = true
		}
	}
	for taken[n] {
		n++
	}
	return t.DiskName(vmid, n, format), n
}

// VolumeName is alloc_image's volume name (after "storage:") for a new
// disk name of vmid: <vmid>/<name> on a storage with a path, the name
// elsewhere.
func (t Type) VolumeName(vmid int, name string) string {
	if t.Path {
		return fmt.Sprintf("%d/%s", vmid, name)
	}
	return name
}

// CTFormat is the format PVE::LXC alloc_disk asks for a container volume
// of a size > 0 (sized is false for size 0): on a storage with a path,
// raw (a subvol directory when unsized, or on btrfs with quotas); on
// zfspool, a subvol (a dataset); elsewhere raw.
func (t Type) CTFormat(sized, btrfsQuotas bool) string {
	switch {
	case t.Path:
		if sized && !(t.Name == "btrfs" && btrfsQuotas) {
			return "raw"
		}
		return "subvol"
	case t.Name == "zfspool":
		return "subvol"
	}
	return "raw"
}

// ContentTypes is every content type a plugin can hold, the union of the
// table's (what a pve-storage-content-list value may name).
func ContentTypes() []string {
	var out []string
	for _, t := range table {
		for _, c := range t.Content {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}
