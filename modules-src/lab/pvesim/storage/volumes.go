package storage

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi/storagetype"
)

// GuestVolume is one guest disk on a storage. Local storages keep their
// volumes on the node, shared ones in the cluster, so a volume on
// local-lvm of pve01 is not on pve02's; its JSON is what state.json holds.
type GuestVolume struct {
	Size   int64  `json:"size"` // bytes
	Format string `json:"format"`
	// Parent is the base volume a linked clone depends on (its volid).
	Parent string `json:"parent,omitempty"`
	// Owner is a container volume's root directory owner, "uid:gid" (an
	// unprivileged CT's root maps to 100000).
	Owner string `json:"owner,omitempty"`
}

// ParseVolumeID splits "store:volname" (parse_volume_id); "none" and
// absolute paths have no storage.
func ParseVolumeID(file string) (store, volname string, ok bool) {
	store, volname, ok = strings.Cut(file, ":")
	if !ok || store == "" || strings.HasPrefix(file, "/") {
		return "", "", false
	}
	return store, volname, true
}

var ownerRe = regexp.MustCompile(`^(?:vm|base|subvol|basevol)-(\d+)-`)

// Owner returns the VMID a volume name belongs to (vm-101-disk-0,
// base-100-disk-0/vm-101-disk-0, 100/vm-100-disk-0.qcow2); 0 for none.
func Owner(volname string) int {
	// ZFSPoolPlugin.pm parse_volname: (base|basevol|vm|subvol)-<vmid>-….
	m := ownerRe.FindStringSubmatch(path.Base(volname))
	if m == nil {
		return 0
	}
	id, _ := strconv.Atoi(m[1])
	return id
}

// HasPath: a storage with a path (dir, nfs, cifs) keeps volumes as files
// in <vmid>/ with an extension (storagetype).
func HasPath(st *Section) bool { return storagetype.Of(st.Type).Path }

// DefaultFormat is storage_default_format (get_formats): the storage's
// format where its type has formats, else raw; qcow2 on LVM with
// snapshot-as-volume-chain.
func DefaultFormat(st *Section) string {
	return storagetype.Of(st.Type).DefaultFormat(st.Opt("format"), st.Opt("snapshot-as-volume-chain") == "1")
}

// VolName builds a volume name the way each plugin names it
// (Plugin.pm / LVMPlugin.pm / LvmThinPlugin.pm / ZFSPoolPlugin.pm
// alloc_image): the format's suffix and the <vmid>/ directory where
// storagetype says.
func VolName(st *Section, vmid int, name, format string) string {
	t := storagetype.Of(st.Type)
	if t.FormatSuffix(format) {
		name += "." + format
	}
	return t.VolumeName(vmid, name)
}

// FreeDiskName is find_free_diskname (pve-storage Plugin.pm
// get_next_vm_diskname) among vols, the volumes st holds as one node sees
// them: the first n of <prefix>-<vmid>-disk-<n> that no volume of vmid on
// st takes, as storagetype counts them ($get_vm_disk_number: an unanchored
// match, so a linked clone's <base>/<vmid>/vm-… counts; suffix-sensitive on
// nfs/cifs, where a vm-N-disk-0.raw does not take n=0 for a qcow2, while on
// dir and zfspool, whose formats include subvol, every vm/base/subvol/
// basevol name counts whatever its suffix).
func FreeDiskName(st *Section, vols map[string]*GuestVolume, vmid int, prefix, format string) string {
	t := storagetype.Of(st.Type)
	taken := map[int]bool{}
	for volid := range vols {
		store, vn, _ := ParseVolumeID(volid)
		if store != st.ID || Owner(vn) != vmid { // list_images($vmid): the VMID's own volumes
			continue
		}
		if n, ok := t.DiskNumber(vmid, vn, format); ok {
			taken[n] = true
		}
	}
	for i := 0; ; i++ {
		if !taken[i] {
			return fmt.Sprintf("%s-%d-disk-%d", prefix, vmid, i)
		}
	}
}

// CloudinitExists is alloc_image's refusal of a cloud-init volume name
// that is taken: ZFSPoolPlugin runs `zfs create`, which refuses ("zfs
// error: cannot create '<pool>/vm-<vmid>-cloudinit': dataset already
// exists", from the node's zfs where the lab has one, else worded the same
// here); Plugin.pm (dir, nfs) dies "disk image '<path>' already exists";
// LVM's lvcreate refuses (reconstruction of its stderr).
func CloudinitExists(st *Section, name, volid string) error {
	_, vn, _ := ParseVolumeID(volid)
	switch {
	case st.Type == "zfspool":
		return fmt.Errorf("zfs error: cannot create '%s': dataset already exists", Dataset(st, vn))
	case HasPath(st):
		return fmt.Errorf("disk image '%s/images/%s' already exists", basePath(st), vn)
	case st.Type == "lvmthin" || st.Type == "lvm":
		vg := st.Opt("vgname")
		return fmt.Errorf("lvcreate '%s/%s' error:   Logical Volume \"%s\" already exists in volume group \"%s\"", vg, name, name, vg)
	}
	return fmt.Errorf("volume '%s' already exists", volid) // reconstruction
}

// basePath is a storage's path, with check_config's /mnt/pve/<id> for the
// types that default it.
func basePath(st *Section) string {
	base := st.Opt("path")
	if storagetype.Of(st.Type).DefaultPath && base == "" {
		base = "/mnt/pve/" + st.ID
	}
	return base
}

// BaseVolid is the name a template's volume takes (create_base): vm- → base-.
func BaseVolid(volid string) string {
	store, vn, _ := ParseVolumeID(volid)
	return store + ":" + strings.Replace(vn, "vm-", "base-", 1)
}

// IsBase tells a template's base volume.
func IsBase(volid string) bool {
	_, vn, _ := ParseVolumeID(volid)
	return strings.HasPrefix(path.Base(vn), "base-")
}

// CanLink is volume_has_feature(clone) without a snapshot: only a base
// volume on a storage with thin clones (storagetype: lvmthin, zfspool and
// the file storages).
func CanLink(st *Section, volid string) bool {
	return storagetype.Of(st.Type).LinkedClone && IsBase(volid)
}

// LinkedClone names the linked clone of base for newid (clone_image):
// base-100-disk-0/vm-101-disk-0 on lvmthin/zfspool,
// 100/base-100-disk-0.qcow2/101/vm-101-disk-0.qcow2 on a directory (a
// linked clone on a file storage is qcow2). name is the new disk's own
// name (vm-101-disk-0), the dataset on zfspool.
func LinkedClone(st *Section, vols map[string]*GuestVolume, base string, newid int) (volid, name string) {
	_, bvn, _ := ParseVolumeID(base)
	name = FreeDiskName(st, vols, newid, "vm", "qcow2")
	if HasPath(st) {
		return fmt.Sprintf("%s:%s/%d/%s.qcow2", st.ID, bvn, newid, name), name
	}
	return st.ID + ":" + bvn + "/" + name, name
}

// ImageContent lists the guest images of storage store among vols for
// GET /nodes/{node}/storage/{storage}/content.
func ImageContent(store string, vols map[string]*GuestVolume) []map[string]any {
	var ids []string
	for volid := range vols {
		if s, _, _ := ParseVolumeID(volid); s == store {
			ids = append(ids, volid)
		}
	}
	slices.Sort(ids)
	out := []map[string]any{}
	for _, volid := range ids {
		v := vols[volid]
		_, vn, _ := ParseVolumeID(volid)
		e := map[string]any{"volid": volid, "format": v.Format, "size": v.Size, "content": "images",
			"vmid": Owner(vn)}
		if v.Parent != "" {
			_, pvn, _ := ParseVolumeID(v.Parent)
			e["parent"] = pvn
		}
		out = append(out, e)
	}
	return out
}

// SizeKiB parses Content.pm create's size: KiB, or M/G.
func SizeKiB(s string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimRight(s, "MG"), 10, 64)
	if err != nil {
		return 0, false
	}
	switch {
	case strings.HasSuffix(s, "G"):
		return n * 1024 * 1024, true
	case strings.HasSuffix(s, "M"):
		return n * 1024, true
	}
	return n, true
}

var allocFormatRe = regexp.MustCompile(`\.(raw|qcow2|vmdk)$`)

// AllocFormat is Content.pm create's format: the file name's extension,
// which a `format` given must match (a ParamError on format).
func AllocFormat(name, format string) (string, error) {
	if m := allocFormatRe.FindStringSubmatch(name); m != nil {
		if format != "" && format != m[1] {
			return "", &ParamError{Param: "format", Msg: fmt.Sprintf("different storage formats (%s != %s)", format, m[1])}
		}
		return m[1], nil
	}
	return format, nil
}

// AllocBase is the name create allocates without its format's suffix,
// which must be vm-<vmid>-….
func AllocBase(vmid int, name, format string) (string, error) {
	base := strings.TrimSuffix(name, "."+format)
	if !strings.HasPrefix(base, fmt.Sprintf("vm-%d-", vmid)) {
		return "", fmt.Errorf("illegal name '%s' - should be 'vm-%d-*'", name, vmid)
	}
	return base, nil
}
