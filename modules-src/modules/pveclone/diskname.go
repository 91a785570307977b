package pveclone

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// diskNames predicts the names PVE gives the volumes it allocates for one
// VMID, as the storage plugin's find_free_diskname does: the first free
// vm-<vmid>-disk-<n> among the VMID's volumes on that storage, counted and
// named by storagetype (get_next_vm_diskname, $get_vm_disk_number:
// suffix-sensitive on nfs/cifs, any suffix and subvols counting on
// dir/btrfs/zfspool; <vmid>/<name>.<format> on a file storage).
type diskNames struct {
	vmid   int
	stores map[string]storageInfo
	taken  map[string][]string // storage → volume names of the VMID
}

func newDiskNames(vmid int, stores map[string]storageInfo) *diskNames {
	return &diskNames{vmid: vmid, stores: stores, taken: map[string][]string{}}
}

// take records a volume of the VMID (from its config or its storage's
// content), so that its number is not predicted again.
func (n *diskNames) take(volid string) {
	if store, volname, ok := cutVolume(volid); ok {
		n.taken[store] = append(n.taken[store], volname)
	}
}

// takeConfig records every volume a config names (disks and unusedN).
func (n *diskNames) takeConfig(values map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if !qemu.IsDisk(k) && !qemu.IsUnused(k) {
			continue
		}
		if d, err := qemu.ParseDrive(k, values[k]); err == nil {
			n.take(d.File)
		} else if u, ok := unusedVolume(values[k]); ok {
			n.take(u)
		}
	}
}

// next is the volume name (after "storage:") PVE allocates next on store
// in format ("" = the storage's default), and takes it.
func (n *diskNames) next(store, format string) string {
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

func cutVolume(volid string) (store, volname string, ok bool) {
	for i := 0; i < len(volid); i++ {
		if volid[i] == ':' {
			return volid[:i], volid[i+1:], i > 0
		}
	}
	return "", "", false
}

// unusedVolume reads unusedN's value (the volume, maybe with keys).
func unusedVolume(v string) (string, bool) {
	for i := 0; i < len(v); i++ {
		if v[i] == ',' {
			v = v[:i]
			break
		}
	}
	_, _, ok := cutVolume(v)
	return v, ok
}

// ownVolumes lists the volumes of the VMID on a storage as the storage
// sees them from node (GET …/storage/<store>/content?vmid=N: pve-storage's
// list_images, what find_free_diskname reads), orphans included. Read once
// per storage and run, only when a disk is to be allocated there.
func (v *vm) ownVolumes(ctx context.Context, node, store string) ([]string, error) {
	key := node + "\x00" + store + "\x00" + strconv.Itoa(v.p.VMID)
	if got, ok := v.volumes[key]; ok {
		return got, nil
	}
	var list []struct {
		VolID string `json:"volid"`
	}
	if err := v.c.Get(ctx, pveapi.Path("/nodes/%s/storage/%s/content", node, store),
		url.Values{"content": {"images"}, "vmid": {strconv.Itoa(v.p.VMID)}}, &list); err != nil {
		return nil, fmt.Errorf("cannot list the volumes of VMID %d on storage %s of %s (to name its new disk as PVE will): %w", v.p.VMID, store, node, err)
	}
	var out []string
	for _, e := range list {
		out = append(out, e.VolID)
	}
	if v.volumes == nil {
		v.volumes = map[string][]string{}
	}
	v.volumes[key] = out
	return out, nil
}

// namesFor is a diskNames for the VMID seeded with what cfg names and
// what the storages of the new disks already hold for it on node.
func (v *vm) namesFor(ctx context.Context, node string, cfg map[string]string, newStores []string, stores map[string]storageInfo) (*diskNames, error) {
	n := newDiskNames(v.p.VMID, stores)
	n.takeConfig(cfg)
	for _, s := range slices.Compact(slices.Sorted(slices.Values(newStores))) {
		if _, known := stores[s]; !known {
			continue // refused elsewhere with the option's name
		}
		if v.assumedMissing(node, s, stores) {
			continue // check mode: nothing to read yet, so no volume of the VMID counted
		}
		vols, err := v.ownVolumes(ctx, node, s)
		if err != nil {
			return nil, err
		}
		for _, vol := range vols {
			n.take(vol)
		}
	}
	return n, nil
}

// allocated is a new drive ("storage:GiB,…") as PVE records it once
// create_disks allocated it: the volume named, the size in bytes, no
// format key (create_disks deletes it).
func allocated(key, value string, names *diskNames) (string, bool) {
	d, err := qemu.ParseDrive(key, value)
	if err != nil {
		return value, false
	}
	if store, ok := cloudInitStore(d.File); ok {
		// create_disks' cloudinit branch: the fixed name, media=cdrom, no
		// size recorded, the format key dropped.
		d.File = store + ":" + cloudInitVolName(names.vmid, names.stores[store], d.Format)
		d.Media, d.Format, d.Size = "cdrom", "", 0
		s, err := d.Render()
		return s, err == nil
	}
	store, gib, ok := d.Allocation()
	if !ok {
		return value, false
	}
	d.File = store + ":" + names.next(store, d.Format)
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
func efiVarsSize(d qemu.Drive, st storageInfo) int64 {
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

// nameNewDisks replaces, in the config the plan predicts, each disk the
// update allocates ("storage:GiB") by the volume PVE will name for it
// (update_vm_api → create_disks, sorted keys), so that check mode shows
// the final volume and equals the real run's read-back.
func (v *vm) nameNewDisks(ctx context.Context, st qemu.State, plan *settingsPlan) error {
	var keys, newStores []string
	for _, k := range slices.Sorted(maps.Keys(plan.set)) {
		if !qemu.IsDisk(k) {
			continue
		}
		d, err := qemu.ParseDrive(k, plan.set[k])
		if err != nil {
			continue
		}
		if _, ok := cloudInitStore(d.File); ok {
			keys = append(keys, k) // its name is fixed: no volume to count
			continue
		}
		if _, had := st.Next.Values[k]; had {
			continue
		}
		if s, _, ok := d.Allocation(); ok {
			keys = append(keys, k)
			newStores = append(newStores, s)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	stores, err := v.storagesOnce(ctx)
	if err != nil {
		return err
	}
	names, err := v.namesFor(ctx, st.Node, st.Next.Values, newStores, stores)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if a, ok := allocated(k, plan.set[k], names); ok {
			plan.after[k] = a
		}
	}
	return nil
}

// storagesOnce is readStorages, read once per run for the disk names.
func (v *vm) storagesOnce(ctx context.Context) (map[string]storageInfo, error) {
	if v.storages != nil {
		return v.storages, nil
	}
	s, err := v.readStorages(ctx)
	if err == nil {
		v.storages = s
	}
	return s, err
}

// cloneNames seeds the clone's disk names with what the new VMID already
// owns on the storages its disks are copied or linked to (seen from the
// template's node, where clone_vm allocates them).
func (v *vm) cloneNames(ctx context.Context, src qemu.Config, node, storage string, stores map[string]storageInfo) (*diskNames, error) {
	disks, err := src.Disks()
	if err != nil {
		return nil, err
	}
	var dst []string
	for _, d := range disks {
		store, _, ok := cutVolume(d.File)
		if !ok || d.IsCDROM() {
			continue // an ISO stays; the cloud-init drive's name is fixed
		}
		if storage != "" {
			store = storage
		}
		dst = append(dst, store)
	}
	return v.namesFor(ctx, node, nil, dst, stores)
}
