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

// namesFor is a qemu.DiskNames for the VMID seeded with what cfg names and
// what the storages of the new disks already hold for it on node.
func (v *vm) namesFor(ctx context.Context, node string, cfg map[string]string, newStores []string, stores map[string]storageInfo) (*qemu.DiskNames, error) {
	n := qemu.NewDiskNames(v.p.VMID, stores)
	n.TakeConfig(cfg)
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
			n.Take(vol)
		}
	}
	return n, nil
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
		if _, ok := qemu.CloudInitStore(d.File); ok {
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
		if a, ok := qemu.Allocated(k, plan.set[k], names); ok {
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
func (v *vm) cloneNames(ctx context.Context, src qemu.Config, node, storage string, stores map[string]storageInfo) (*qemu.DiskNames, error) {
	disks, err := src.Disks()
	if err != nil {
		return nil, err
	}
	var dst []string
	for _, d := range disks {
		store, _, ok := qemu.CutVolume(d.File)
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
