package pvesim

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi/storagetype"
)

// GuestVolume is one guest disk on a storage. Local storages keep their volumes
// on the node (Node.Volumes), shared ones in the cluster (ConfigDB.
// SharedVolumes), so a volume on local-lvm of pve01 is not on pve02's.
type GuestVolume struct {
	Size   int64  `json:"size"` // bytes
	Format string `json:"format"`
	// Parent is the base volume a linked clone depends on (its volid).
	Parent string `json:"parent,omitempty"`
	// Owner is a container volume's root directory owner, "uid:gid" (an
	// unprivileged CT's root maps to 100000).
	Owner string `json:"owner,omitempty"`
}

// volumesFor returns the map holding st's volumes as node sees them.
func (s *Sim) volumesFor(node string, st *Storage) map[string]*GuestVolume {
	if st.shared() {
		db := s.dbOf(node)
		if db.SharedVolumes == nil {
			db.SharedVolumes = map[string]*GuestVolume{}
		}
		return db.SharedVolumes
	}
	n := s.st.Nodes[node]
	if n.Volumes == nil {
		n.Volumes = map[string]*GuestVolume{}
	}
	return n.Volumes
}

// volumeLocked returns a volume as node sees it.
func (s *Sim) volumeLocked(node, volid string) (*GuestVolume, *Storage, error) {
	store, _, ok := volumeID(volid)
	if !ok {
		return nil, nil, fmt.Errorf("unable to parse volume ID '%s'", volid)
	}
	st := s.dbOf(node).Storage[store]
	if st == nil {
		return nil, nil, fmt.Errorf("storage '%s' does not exist", store)
	}
	v := s.volumesFor(node, st)[volid]
	if v == nil {
		return nil, st, fmt.Errorf("volume '%s' does not exist", volid)
	}
	return v, st, nil
}

// fileStorage: a storage with a path (dir, nfs, cifs) keeps volumes as
// files in <vmid>/ with an extension (storagetype).
func fileStorage(st *Storage) bool { return storagetype.Of(st.Type).Path }

// defaultFormat is storage_default_format (get_formats): the storage's
// format where its type has formats, else raw; qcow2 on LVM with
// snapshot-as-volume-chain.
func defaultFormat(st *Storage) string {
	return storagetype.Of(st.Type).DefaultFormat(st.opt("format"), st.opt("snapshot-as-volume-chain") == "1")
}

// volName builds a volume name the way each plugin names it
// (Plugin.pm / LVMPlugin.pm / LvmThinPlugin.pm / ZFSPoolPlugin.pm
// alloc_image): the format's suffix and the <vmid>/ directory where
// storagetype says.
func volName(st *Storage, vmid int, name, format string) string {
	t := storagetype.Of(st.Type)
	if t.FormatSuffix(format) {
		name += "." + format
	}
	return t.VolumeName(vmid, name)
}

// freeDiskName is find_free_diskname (pve-storage Plugin.pm
// get_next_vm_diskname): the first n of <prefix>-<vmid>-disk-<n> that no
// volume of vmid on st takes, as storagetype counts them
// ($get_vm_disk_number: an unanchored match, so a linked clone's
// <base>/<vmid>/vm-… counts; suffix-sensitive on nfs/cifs, where a
// vm-N-disk-0.raw does not take n=0 for a qcow2, while on dir and zfspool,
// whose formats include subvol, every vm/base/subvol/basevol name counts
// whatever its suffix).
func (s *Sim) freeDiskName(node string, st *Storage, vmid int, prefix, format string) string {
	t := storagetype.Of(st.Type)
	taken := map[int]bool{}
	for volid := range s.volumesFor(node, st) {
		store, vn, _ := volumeID(volid)
		if store != st.ID || volOwner(vn) != vmid { // list_images($vmid): the VMID's own volumes
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

// allocVolumeLocked creates a volume of size bytes for vmid on st.
// On zfspool it is a zvol in the node's ZFS (zvols.go).
func (s *Sim) allocVolumeLocked(node string, st *Storage, vmid int, size int64, format string) (string, error) {
	if format == "" {
		format = defaultFormat(st)
	}
	name := s.freeDiskName(node, st, vmid, "vm", format)
	volid := st.ID + ":" + volName(st, vmid, name, format)
	if err := s.zfsCreateVolume(node, st, name, size); err != nil {
		return "", err
	}
	s.volumesFor(node, st)[volid] = &GuestVolume{Size: size, Format: format}
	return volid, nil
}

// allocCloudinitLocked creates vm-<vmid>-cloudinit (4 MiB, as PVE):
// qemu-server's create_disks names it itself (API2/Qemu.pm, the cloudinit
// branch: the format given, else qcow2 with the suffix on a storage with a
// path, raw elsewhere), so a second allocation for the VMID meets the
// first, and fails as the storage plugin's alloc_image does: ZFSPoolPlugin
// runs `zfs create`, which refuses ("zfs error: cannot create
// '<pool>/vm-<vmid>-cloudinit': dataset already exists", from the node's
// zfs where the lab has one, else worded the same here); Plugin.pm (dir,
// nfs) dies "disk image '<path>' already exists"; LVM's lvcreate refuses
// (reconstruction of its stderr).
func (s *Sim) allocCloudinitLocked(node string, st *Storage, vmid int, format string) (string, error) {
	if format == "" {
		format = defaultFormat(st)
		if fileStorage(st) {
			format = "qcow2"
		}
	}
	name := fmt.Sprintf("vm-%d-cloudinit", vmid)
	volid := st.ID + ":" + volName(st, vmid, name, format)
	if s.volumesFor(node, st)[volid] != nil {
		return "", cloudinitExists(st, vmid, name, volid)
	}
	if err := s.zfsCreateVolume(node, st, name, 4<<20); err != nil {
		return "", err
	}
	s.volumesFor(node, st)[volid] = &GuestVolume{Size: 4 << 20, Format: format}
	return volid, nil
}

// cloudinitExists is alloc_image's refusal of a name that is taken.
func cloudinitExists(st *Storage, vmid int, name, volid string) error {
	_, vn, _ := volumeID(volid)
	switch {
	case st.Type == "zfspool":
		return fmt.Errorf("zfs error: cannot create '%s': dataset already exists", zfsDataset(st, vn))
	case fileStorage(st):
		base := st.opt("path")
		if storagetype.Of(st.Type).DefaultPath && base == "" {
			base = "/mnt/pve/" + st.ID
		}
		return fmt.Errorf("disk image '%s/images/%s' already exists", base, vn)
	case st.Type == "lvmthin" || st.Type == "lvm":
		vg := st.opt("vgname")
		return fmt.Errorf("lvcreate '%s/%s' error:   Logical Volume \"%s\" already exists in volume group \"%s\"", vg, name, name, vg)
	}
	return fmt.Errorf("volume '%s' already exists", volid) // reconstruction
}

// freeVolumeLocked is vdisk_free: a base volume still used by a linked
// clone stays (Storage.pm: "base volume '…' is still in use by linked
// cloned"); on zfspool the dataset goes with `zfs destroy -r` (free_image),
// and a failure keeps the volume. Callers that only warn, as PVE's
// destroy_vm does, may ignore the error.
func (s *Sim) freeVolumeLocked(node, volid string) error {
	_, st, err := s.volumeLocked(node, volid)
	if err != nil {
		return err
	}
	vols := s.volumesFor(node, st)
	if isBase(volid) {
		for _, v := range vols {
			if v.Parent == volid {
				_, vn, _ := volumeID(volid)
				return fmt.Errorf("base volume '%s' is still in use by linked cloned", vn)
			}
		}
	}
	_, vn, _ := volumeID(volid)
	if err := s.zfsOn(node, st, "destroy", "-r", zfsDataset(st, vn)); err != nil {
		return err
	}
	delete(vols, volid)
	return nil
}

// baseName is the name a template's volume takes (create_base): vm- → base-.
func baseVolid(volid string) string {
	store, vn, _ := volumeID(volid)
	return store + ":" + strings.Replace(vn, "vm-", "base-", 1)
}

// isBase tells a template's base volume.
func isBase(volid string) bool {
	_, vn, _ := volumeID(volid)
	return strings.HasPrefix(path.Base(vn), "base-")
}

// linkedCloneLocked creates a linked clone of base for newid (clone_image):
// base-100-disk-0/vm-101-disk-0 on lvmthin/zfspool, 100/base-100-disk-0.qcow2/
// 101/vm-101-disk-0.qcow2 on a directory.
func (s *Sim) linkedCloneLocked(node string, st *Storage, base string, newid int) (string, error) {
	src, _, err := s.volumeLocked(node, base)
	if err != nil {
		return "", err
	}
	_, bvn, _ := volumeID(base)
	name := s.freeDiskName(node, st, newid, "vm", "qcow2") // a linked clone on a file storage is qcow2
	var vn string
	if fileStorage(st) {
		vn = fmt.Sprintf("%s/%d/%s.qcow2", bvn, newid, name)
	} else {
		vn = bvn + "/" + name
	}
	volid := st.ID + ":" + vn
	// clone_image: zfs clone of the base's __base__ snapshot.
	if err := s.zfsOn(node, st, "clone", zfsDataset(st, bvn)+"@__base__", zfsDataset(st, name)); err != nil {
		return "", err
	}
	format := src.Format
	if fileStorage(st) {
		format = "qcow2"
	}
	s.volumesFor(node, st)[volid] = &GuestVolume{Size: src.Size, Format: format, Parent: base}
	return volid, nil
}

// canLink is volume_has_feature(clone) without a snapshot: only a base
// volume on a storage with thin clones (storagetype: lvmthin, zfspool and
// the file storages).
func canLink(st *Storage, volid string) bool {
	return storagetype.Of(st.Type).LinkedClone && isBase(volid)
}

// ---- sizes ----

// sizeRe is the drive size syntax (pve-qm-drive size, "32G", "512M").
var sizeRe = regexp.MustCompile(`^(\d+(?:\.\d+)?)([KMGT])?$`)

var unitShift = map[string]uint{"": 0, "K": 10, "M": 20, "G": 30, "T": 40}

func parseSize(s string) (int64, bool) {
	m := sizeRe.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	return int64(f * float64(int64(1)<<unitShift[m[2]])), true
}

// formatSize is PVE's format_size: the largest unit that divides exactly.
func formatSize(b int64) string {
	for _, u := range []string{"T", "G", "M", "K"} {
		sh := unitShift[u]
		if b >= 1<<sh && b%(1<<sh) == 0 {
			return strconv.FormatInt(b>>sh, 10) + u
		}
	}
	return strconv.FormatInt(b, 10)
}

// volumeContentLocked lists a storage's volumes on node for
// GET /nodes/{node}/storage/{storage}/content.
func (s *Sim) volumeContentLocked(node string, st *Storage) []map[string]any {
	vols := s.volumesFor(node, st)
	var ids []string
	for volid := range vols {
		if store, _, _ := volumeID(volid); store == st.ID {
			ids = append(ids, volid)
		}
	}
	slices.Sort(ids)
	out := []map[string]any{}
	for _, volid := range ids {
		v := vols[volid]
		_, vn, _ := volumeID(volid)
		e := map[string]any{"volid": volid, "format": v.Format, "size": v.Size, "content": "images",
			"vmid": volOwner(vn)}
		if v.Parent != "" {
			_, pvn, _ := volumeID(v.Parent)
			e["parent"] = pvn
		}
		out = append(out, e)
	}
	return out
}
