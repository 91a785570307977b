package qemu

import (
	"maps"
	"slices"

	"github.com/gopve/proxmox/modules-src/pveapi/storages"
)

// DiskNames predicts the names PVE gives the volumes it allocates for one
// VMID, as the storage plugin's find_free_diskname does: the first free
// vm-<vmid>-disk-<n> among the VMID's volumes on that storage, counted and
// named by storagetype (get_next_vm_diskname, $get_vm_disk_number:
// suffix-sensitive on nfs/cifs, any suffix and subvols counting on
// dir/btrfs/zfspool; <vmid>/<name>.<format> on a file storage).
type DiskNames struct {
	vmid   int
	stores map[string]storages.Info
	taken  map[string][]string // storage → volume names of the VMID
}

// NewDiskNames starts the names of vmid on stores, no volume taken yet.
func NewDiskNames(vmid int, stores map[string]storages.Info) *DiskNames {
	return &DiskNames{vmid: vmid, stores: stores, taken: map[string][]string{}}
}

// Take records a volume of the VMID (from its config or its storage's
// content), so that its number is not predicted again.
func (n *DiskNames) Take(volid string) {
	if store, volname, ok := CutVolume(volid); ok {
		n.taken[store] = append(n.taken[store], volname)
	}
}

// TakeConfig records every volume a config names (disks and unusedN).
func (n *DiskNames) TakeConfig(values map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if !IsDisk(k) && !IsUnused(k) {
			continue
		}
		if d, err := ParseDrive(k, values[k]); err == nil {
			n.Take(d.File)
		} else if u, ok := unusedVolume(values[k]); ok {
			n.Take(u)
		}
	}
}

// Next is the volume name (after "storage:") PVE allocates next on store
// in format ("" = the storage's default), and takes it.
func (n *DiskNames) Next(store, format string) string {
	st := n.stores[store]
	if format == "" {
		format = st.DefaultFormat()
	}
	t := st.Kind()
	name, _ := t.FirstFreeDisk(n.vmid, format, n.taken[store])
	vol := t.VolumeName(n.vmid, name)
	n.taken[store] = append(n.taken[store], vol)
	return vol
}

// Allocated is a new drive ("storage:GiB,…") as PVE records it once
// create_disks allocated it: the volume named, the size in bytes, no
// format key (create_disks deletes it).
func Allocated(key, value string, names *DiskNames) (string, bool) {
	d, err := ParseDrive(key, value)
	if err != nil {
		return value, false
	}
	if store, ok := CloudInitStore(d.File); ok {
		// create_disks' cloudinit branch: the fixed name, media=cdrom, no
		// size recorded, the format key dropped.
		d.File = store + ":" + CloudInitVolName(names.vmid, names.stores[store], d.Format)
		d.Media, d.Format, d.Size = "cdrom", "", 0
		s, err := d.Render()
		return s, err == nil
	}
	store, gib, ok := d.Allocation()
	if !ok {
		return value, false
	}
	d.File = store + ":" + names.Next(store, d.Format)
	d.Format = ""
	switch key {
	case "efidisk0":
		d.Size = efiVarsSize(d, names.stores[store])
	case "tpmstate0":
		d.Size = 4 << 20 // TPMSTATE_DISK_SIZE (QemuServer/Drive.pm)
	default:
		d.Size = int64(gib * float64(1<<30))
	}
	s, err := d.Render()
	if err != nil {
		return value, false
	}
	return s, true
}

// efiVarsSize is the size create_efidisk records (QemuServer/OVMF.pm):
// the volume holding the OVMF vars image, as volume_size_info reads it.
// Reconstruction: the images of pve-edk2-firmware are 528 KiB (efitype
// 4m) and 128 KiB (2m, the default); an LVM volume is whole 4 MiB extents.
func efiVarsSize(d Drive, st storages.Info) int64 {
	size := int64(128 << 10)
	if t, _ := d.Other.Get("efitype"); t == "4m" {
		size = 528 << 10
	}
	if st.Type == "lvm" || st.Type == "lvmthin" {
		const extent = 4 << 20
		size = (size + extent - 1) / extent * extent
	}
	return size
}
