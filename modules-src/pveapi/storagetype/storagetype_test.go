package storagetype

import (
	"slices"
	"strings"
	"testing"
)

// plugindata() of each plugin as proxmox/pve-storage writes it, copied from
// src/PVE/Storage/<Plugin>.pm at 9.1.7 (and 8.3.6, where it differs):
// content->[0] | content->[1] | format->[0] ("-": no format key, raw
// only). Sets, so their order is not checked.
var plugindata = map[string]string{
	"dir":         "images rootdir vztmpl iso backup snippets none import | images rootdir | raw qcow2 vmdk subvol", // DirPlugin.pm
	"nfs":         "images rootdir vztmpl iso backup snippets import | images | raw qcow2 vmdk",                     // NFSPlugin.pm
	"cifs":        "images rootdir vztmpl iso backup snippets import | images | raw qcow2 vmdk",                     // CIFSPlugin.pm
	"glusterfs":   "images vztmpl iso backup snippets import | images | raw qcow2 vmdk",                             // GlusterfsPlugin.pm (8.3.6 only)
	"cephfs":      "vztmpl iso backup snippets import | backup | -",                                                 // CephFSPlugin.pm
	"btrfs":       "images rootdir vztmpl iso backup snippets none import | images rootdir | raw subvol",            // BTRFSPlugin.pm
	"zfspool":     "images rootdir | images rootdir | raw subvol",                                                   // ZFSPoolPlugin.pm
	"zfs":         "images | images | -",                                                                            // ZFSPlugin.pm
	"lvmthin":     "images rootdir | images rootdir | -",                                                            // LvmThinPlugin.pm
	"lvm":         "images rootdir | images | -",                                                                    // LVMPlugin.pm (9.x: raw qcow2, see get_formats)
	"rbd":         "images rootdir | images | -",                                                                    // RBDPlugin.pm
	"iscsi":       "images none | images | -",                                                                       // ISCSIPlugin.pm
	"iscsidirect": "images none | images | -",                                                                       // ISCSIDirectPlugin.pm
	"pbs":         "backup none | backup | -",                                                                       // PBSPlugin.pm
	"esxi":        "import | import | raw qcow2 vmdk",                                                               // ESXiPlugin.pm
}

// sensitive is plugindata 'sensitive-properties', same files.
var sensitive = map[string]string{
	"cifs": "password", "cephfs": "keyring", "rbd": "keyring", "esxi": "password",
	"pbs": "encryption-key master-pubkey password",
}

// options() of the managed types, from the same files: key:f (fixed),
// key:o (optional), key:fo (both); a key without o is required.
var options = map[int]map[string]string{
	8: { // pve-storage 8.3.6
		"dir":     "path:f content-dirs:o nodes:o shared:o disable:o maxfiles:o prune-backups:o max-protected-backups:o content:o format:o mkdir:o create-base-path:o create-subdirs:o is_mountpoint:o bwlimit:o preallocation:o",
		"nfs":     "path:f content-dirs:o server:f export:f nodes:o disable:o maxfiles:o prune-backups:o max-protected-backups:o options:o content:o format:o mkdir:o create-base-path:o create-subdirs:o bwlimit:o preallocation:o",
		"cifs":    "path:f content-dirs:o server:f share:f subdir:o nodes:o disable:o maxfiles:o prune-backups:o max-protected-backups:o content:o format:o username:o password:o domain:o smbversion:o mkdir:o create-base-path:o create-subdirs:o bwlimit:o preallocation:o options:o",
		"zfspool": "pool:f blocksize:o sparse:o nodes:o disable:o content:o bwlimit:o mountpoint:o",
		"lvmthin": "thinpool:f vgname:f nodes:o disable:o content:o bwlimit:o",
		"lvm":     "vgname:f nodes:o shared:o disable:o saferemove:o saferemove_throughput:o content:o base:fo tagged_only:o bwlimit:o",
		"pbs":     "server:f datastore:f namespace:o port:o nodes:o disable:o content:o username:o password:o encryption-key:o master-pubkey:o maxfiles:o prune-backups:o max-protected-backups:o fingerprint:o",
	},
	9: { // pve-storage 9.1.7
		"dir":     "path:f content-dirs:o nodes:o shared:o disable:o prune-backups:o max-protected-backups:o content:o format:o mkdir:o create-base-path:o create-subdirs:o is_mountpoint:o bwlimit:o preallocation:o snapshot-as-volume-chain:fo",
		"nfs":     "path:f content-dirs:o server:f export:f nodes:o disable:o prune-backups:o max-protected-backups:o options:o content:o format:o mkdir:o create-base-path:o create-subdirs:o bwlimit:o preallocation:o snapshot-as-volume-chain:fo",
		"cifs":    "path:f content-dirs:o server:f share:f subdir:o nodes:o disable:o prune-backups:o max-protected-backups:o content:o format:o username:o password:o domain:o smbversion:o mkdir:o create-base-path:o create-subdirs:o bwlimit:o preallocation:o options:o snapshot-as-volume-chain:fo",
		"zfspool": "pool:f blocksize:o sparse:o nodes:o disable:o content:o bwlimit:o mountpoint:o",
		"lvmthin": "thinpool:f vgname:f nodes:o disable:o content:o bwlimit:o",
		"lvm":     "vgname:f nodes:o shared:o disable:o saferemove:o saferemove-stepsize:o saferemove_throughput:o content:o base:fo tagged_only:o bwlimit:o snapshot-as-volume-chain:o",
		"pbs":     "server:f datastore:f namespace:o port:o nodes:o disable:o content:o username:o password:o encryption-key:o master-pubkey:o prune-backups:o max-protected-backups:o fingerprint:o",
	},
}

func set(s string) []string {
	f := strings.Fields(s)
	if len(f) == 1 && f[0] == "-" {
		return nil
	}
	slices.Sort(f)
	return f
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestPlugindata(t *testing.T) {
	if got, want := sorted(Names()), sorted(func() []string {
		var n []string
		for k := range plugindata {
			n = append(n, k)
		}
		return n
	}()); !slices.Equal(got, want) {
		t.Fatalf("types: %v, pve-storage's plugins: %v", got, want)
	}
	for name, data := range plugindata {
		typ := Of(name)
		parts := strings.Split(data, "|")
		if got := sorted(typ.Content); !slices.Equal(got, set(parts[0])) {
			t.Errorf("%s content: %v, plugindata %v", name, got, set(parts[0]))
		}
		if got := sorted(typ.DefaultContent); !slices.Equal(got, set(parts[1])) {
			t.Errorf("%s default content: %v, plugindata %v", name, got, set(parts[1]))
		}
		if got := sorted(typ.Formats); !slices.Equal(got, set(parts[2])) {
			t.Errorf("%s formats: %v, plugindata %v", name, got, set(parts[2]))
		}
		if got := sorted(typ.Sensitive); !slices.Equal(got, set(sensitive[name])) {
			t.Errorf("%s sensitive-properties: %v, plugindata %v", name, got, set(sensitive[name]))
		}
	}
}

// TestContentTypes: Plugin.pm verify_content checks a content type
// against valid_content_types('dir'), "dir includes all other types".
func TestContentTypes(t *testing.T) {
	if got, want := sorted(ContentTypes()), sorted(Of("dir").Content); !slices.Equal(got, want) {
		t.Errorf("content types %v, dir's %v", got, want)
	}
}

func TestOptions(t *testing.T) {
	for _, name := range Names() {
		typ := Of(name)
		_, managed := options[8][name]
		if typ.Managed() != managed {
			t.Errorf("%s: Managed %v, options() copied %v", name, typ.Managed(), managed)
		}
	}
	for v, types := range options {
		for name, list := range types {
			typ := Of(name)
			var keys, required, fixed []string
			for _, kf := range strings.Fields(list) {
				k, flags, _ := strings.Cut(kf, ":")
				keys = append(keys, k)
				if !strings.Contains(flags, "o") {
					required = append(required, k)
				}
				if strings.Contains(flags, "f") {
					fixed = append(fixed, k)
				}
			}
			var allowed []string
			for _, k := range append(append(slices.Clone(typ.Options), typ.V8Only...), typ.V9Only...) {
				if typ.Allows(k, v) && !slices.Contains(allowed, k) {
					allowed = append(allowed, k)
				}
			}
			if got, want := sorted(allowed), sorted(keys); !slices.Equal(got, want) {
				t.Errorf("PVE %d %s options: %v, options() %v", v, name, got, want)
			}
			if got, want := sorted(typ.Required), sorted(required); !slices.Equal(got, want) {
				t.Errorf("PVE %d %s required: %v, options() %v", v, name, got, want)
			}
			// Fixed holds the fixed keys of both versions; those of this one
			// must all be there, and none that this version has unfixed.
			for _, k := range fixed {
				if !slices.Contains(typ.Fixed, k) {
					t.Errorf("PVE %d %s: options() fixes %s, the table does not", v, name, k)
				}
			}
			for _, k := range typ.Fixed {
				if slices.Contains(keys, k) && !slices.Contains(fixed, k) {
					t.Errorf("PVE %d %s: the table fixes %s, options() does not", v, name, k)
				}
			}
		}
	}
}

// TestShared is @SHARED_STORAGE, src/PVE/Storage/Plugin.pm: 8.3.6 lists
// iscsi nfs cifs rbd cephfs iscsidirect glusterfs zfs drbd pbs; 9.1.7 the
// same without glusterfs (commit "drop support for using GlusterFS
// directly").
func TestShared(t *testing.T) {
	for _, tc := range []struct {
		typ        string
		v8, v9, v0 bool
	}{
		{"nfs", true, true, true}, {"cifs", true, true, true}, {"pbs", true, true, true}, {"rbd", true, true, true},
		{"cephfs", true, true, true}, {"iscsi", true, true, true}, {"iscsidirect", true, true, true}, {"zfs", true, true, true},
		{"glusterfs", true, false, true},
		{"dir", false, false, false}, {"zfspool", false, false, false}, {"lvm", false, false, false},
		{"lvmthin", false, false, false}, {"btrfs", false, false, false}, {"esxi", false, false, false},
	} {
		if Shared(tc.typ, 8) != tc.v8 || Shared(tc.typ, 9) != tc.v9 || Shared(tc.typ, 0) != tc.v0 {
			t.Errorf("%s: shared on 8 %v, 9 %v, any %v; want %v %v %v", tc.typ,
				Shared(tc.typ, 8), Shared(tc.typ, 9), Shared(tc.typ, 0), tc.v8, tc.v9, tc.v0)
		}
	}
}

// TestPathAndFeatures: the types with a path in options() (Dir, NFS,
// CIFS, Glusterfs, CephFS, BTRFS plugins); volume_has_feature(clone) of a
// base volume (Plugin.pm, LvmThinPlugin, ZFSPoolPlugin, RBDPlugin,
// ZFSPlugin, BTRFSPlugin: yes; LVMPlugin, ISCSI*, PBS: no); replicate
// (ZFSPoolPlugin only); check_config's default path (NFS, CIFS, CephFS).
func TestPathAndFeatures(t *testing.T) {
	path := "dir nfs cifs glusterfs cephfs btrfs"
	link := "dir nfs cifs glusterfs cephfs btrfs zfspool zfs lvmthin rbd"
	for _, name := range Names() {
		typ := Of(name)
		if want := slices.Contains(strings.Fields(path), name); typ.Path != want {
			t.Errorf("%s: Path %v", name, typ.Path)
		}
		if want := slices.Contains(strings.Fields(link), name); typ.LinkedClone != want {
			t.Errorf("%s: LinkedClone %v", name, typ.LinkedClone)
		}
		if want := name == "zfspool"; typ.Replicates != want {
			t.Errorf("%s: Replicates %v", name, typ.Replicates)
		}
		if want := slices.Contains([]string{"nfs", "cifs", "cephfs"}, name); typ.DefaultPath != want {
			t.Errorf("%s: DefaultPath %v", name, typ.DefaultPath)
		}
	}
	if got := Of("nfs").MustGive(); !slices.Equal(sorted(got), []string{"export", "server"}) {
		t.Errorf("nfs MustGive %v", got)
	}
	if got := Of("dir").MustGive(); !slices.Equal(got, []string{"path"}) {
		t.Errorf("dir MustGive %v", got)
	}
}

// TestFormats: get_formats (Plugin.pm: the storage's format option, else
// plugindata's default raw; raw only without a format key) and
// LVMPlugin.pm get_formats (qcow2, the default, only with
// snapshot-as-volume-chain).
func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		typ, option string
		chain       bool
		want        string
		valid       string
	}{
		{"dir", "", false, "raw", "raw qcow2 vmdk subvol"},
		{"dir", "qcow2", false, "qcow2", "raw qcow2 vmdk subvol"},
		{"nfs", "vmdk", false, "vmdk", "raw qcow2 vmdk"},
		{"zfspool", "", false, "raw", "raw subvol"},
		{"lvmthin", "qcow2", false, "raw", "raw"},
		{"lvm", "", false, "raw", "raw"},
		{"lvm", "", true, "qcow2", "raw qcow2"},
		{"rbd", "", false, "raw", "raw"},
	} {
		typ := Of(tc.typ)
		if got := typ.DefaultFormat(tc.option, tc.chain); got != tc.want {
			t.Errorf("%s format=%q chain=%v: default %s, want %s", tc.typ, tc.option, tc.chain, got, tc.want)
		}
		if got := sorted(typ.ValidFormats(tc.chain)); !slices.Equal(got, set(tc.valid)) {
			t.Errorf("%s chain=%v: valid %v, want %v", tc.typ, tc.chain, got, set(tc.valid))
		}
	}
}

// TestDiskNames: get_next_vm_diskname and $get_vm_disk_number (Plugin.pm),
// alloc_image's "<vmid>/<name>" on a path (Plugin.pm), LVMPlugin's
// find_free_diskname (suffix only for qcow2).
func TestDiskNames(t *testing.T) {
	for _, tc := range []struct {
		name, typ, format string
		have              []string
		want              string
	}{
		{"empty block storage", "lvmthin", "raw", nil, "vm-100-disk-0"},
		{"next free number", "lvmthin", "raw", []string{"vm-100-disk-0", "vm-100-disk-2"}, "vm-100-disk-1"},
		{"a base volume takes its number", "zfspool", "raw", []string{"base-100-disk-0"}, "vm-100-disk-1"},
		{"zfspool counts subvols", "zfspool", "raw", []string{"subvol-100-disk-0"}, "vm-100-disk-1"},
		{"a subvol on zfspool", "zfspool", "subvol", []string{"vm-100-disk-0"}, "subvol-100-disk-1"},
		{"a linked clone counts, unanchored", "lvmthin", "raw", []string{"base-9000-disk-0/vm-100-disk-0"}, "vm-100-disk-1"},
		{"other VMIDs do not", "lvmthin", "raw", []string{"vm-1000-disk-0", "vm-10-disk-0"}, "vm-100-disk-0"},
		{"file suffix", "nfs", "qcow2", nil, "vm-100-disk-0.qcow2"},
		{"nfs: a .raw does not take a qcow2's number", "nfs", "qcow2", []string{"100/vm-100-disk-0.raw"}, "vm-100-disk-0.qcow2"},
		{"nfs: the same suffix does", "nfs", "raw", []string{"100/vm-100-disk-0.raw"}, "vm-100-disk-1.raw"},
		// dir's plugindata formats include subvol, so its regex is the
		// subvol one: any suffix counts.
		{"dir: any suffix counts", "dir", "qcow2", []string{"100/vm-100-disk-0.raw"}, "vm-100-disk-1.qcow2"},
		{"lvm qcow2 is suffixed", "lvm", "qcow2", []string{"vm-100-disk-0"}, "vm-100-disk-0.qcow2"},
		// Unsuffixed, the unanchored match takes the qcow2's number too.
		{"lvm raw is not", "lvm", "raw", []string{"vm-100-disk-0.qcow2"}, "vm-100-disk-1"},
	} {
		if got, _ := Of(tc.typ).FirstFreeDisk(100, tc.format, tc.have); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if got := Of("dir").VolumeName(100, "vm-100-disk-0.raw"); got != "100/vm-100-disk-0.raw" {
		t.Errorf("dir volume name %s", got)
	}
	if got := Of("zfspool").VolumeName(100, "subvol-100-disk-0"); got != "subvol-100-disk-0" {
		t.Errorf("zfspool volume name %s", got)
	}
}

// TestCTFormat: PVE::LXC alloc_disk (pve-container src/PVE/LXC.pm).
func TestCTFormat(t *testing.T) {
	for _, tc := range []struct {
		typ          string
		sized, quota bool
		want         string
	}{
		{"dir", true, false, "raw"}, {"dir", false, false, "subvol"}, {"nfs", true, false, "raw"},
		{"btrfs", true, true, "subvol"}, {"btrfs", true, false, "raw"},
		{"zfspool", true, false, "subvol"}, {"lvmthin", true, false, "raw"}, {"rbd", true, false, "raw"},
	} {
		if got := Of(tc.typ).CTFormat(tc.sized, tc.quota); got != tc.want {
			t.Errorf("%s sized=%v quotas=%v: %s, want %s", tc.typ, tc.sized, tc.quota, got, tc.want)
		}
	}
}
