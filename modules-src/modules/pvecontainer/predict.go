package pvecontainer

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/guest"
	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
	"github.com/gopve/proxmox/modules-src/pveapi/storages"
)

type storageInfo = storages.Info

// notYetType is the type of a storage check mode assumes an earlier task
// defines (created_earlier).
const notYetType = "(not yet defined)"

// createDefaults are the values create_vm sets once the archive is
// unpacked, for a create from a template and a restore alike
// (pve-container API2/LXC.pm: hostname ||= "CT$vmid", memory ||= 512,
// swap //= 512); hostname is a required option of this module.
func createDefaults(cfg map[string]string) {
	if cfg["memory"] == "" || cfg["memory"] == "0" {
		cfg["memory"] = "512"
	}
	if _, ok := cfg["swap"]; !ok {
		cfg["swap"] = "512"
	}
}

// nameVolume predicts the volume PVE allocates for key on a storage, as
// alloc_image names it for a container (PVE::LXC create_disks; pve-storage
// find_free_diskname, counting per storage from disk-0 in valid_volume_keys
// order; the format PVE::LXC alloc_disk picks and the name, storagetype):
// subvol-<vmid>-disk-N on zfspool, <vmid>/vm-<vmid>-disk-N.raw on
// a file storage, vm-<vmid>-disk-N on the block storages (lvm, lvmthin,
// rbd, zfs over iSCSI). used counts the disks already named per storage.
//
// Reconstruction: volumes of this VMID left behind on the storage by an
// earlier, destroyed guest would shift N; they are not listed.
func (v *ct) nameVolume(used map[string]int) newVolume {
	return func(key, storage string) string {
		n := used[storage]
		used[storage] = n + 1
		t := v.storages[storage].Kind()
		// A mount point here always has a size (alloc_disk's sized case).
		name := t.DiskName(v.p.VMID, n, t.CTFormat(true, false))
		return storage + ":" + t.VolumeName(v.p.VMID, name)
	}
}

// usedDisks counts, per storage, the disk numbers a CT's config already
// names, so that a new mount point gets the next one.
func usedDisks(values map[string]string) map[string]int {
	used := map[string]int{}
	for k, val := range values {
		if k != "rootfs" && !mountKeyRe.MatchString(k) && !strings.HasPrefix(k, "unused") {
			continue
		}
		p, err := pveformat.Parse(val, volumeShape)
		if err != nil {
			continue
		}
		vol, _ := p.Get("volume")
		store, name, _ := strings.Cut(vol, ":")
		if i := strings.LastIndex(name, "-disk-"); i >= 0 {
			n, err := strconv.Atoi(strings.TrimSuffix(name[i+len("-disk-"):], ".raw"))
			if err == nil && n+1 > used[store] {
				used[store] = n + 1
			}
		}
	}
	return used
}

// nodeReady: the node is a member and online, or (check mode) one
// created_earlier says an earlier task joins.
func (v *ct) nodeReady(ctx context.Context, node string) (assumed bool, err error) {
	missing, err := guest.CheckNode(ctx, v.c, node)
	if err != nil || missing == nil {
		return false, err
	}
	if err := v.r.NotYet(ansible.Prerequisite{Option: "node", Kind: ansible.CreatedNode, Name: node, Object: "cluster node " + node,
		Predicts: "the container and its configuration on it"}, missing); err != nil {
		return false, err
	}
	return true, nil
}

// checkStorage is create_vm's $check_and_activate_storage for one volume:
// the storage exists, is enabled on the node and takes rootdir (PVE's 400
// on `storage`).
func (v *ct) checkStorage(node, key string, vw volWant, nodeAssumed bool) error {
	option := "rootfs.storage"
	if key != "rootfs" {
		option = "mounts." + key + ".storage"
	}
	st, ok := v.storages[vw.storage]
	switch {
	case !ok:
		// The volumes' names depend on the storage's type: the one
		// created_earlier.storage_types says the defining task declares,
		// else they are named as on a block storage (never guessed).
		typ := v.r.CreatedEarlierStorageType(vw.storage)
		if typ == "" {
			typ = notYetType
		}
		assumed := storageInfo{Type: typ, Content: []string{"rootdir"}}
		probe := *v
		probe.storages = map[string]storageInfo{vw.storage: assumed}
		named := probe.nameVolume(map[string]int{})(key, vw.storage)
		kind := "a block storage"
		if typ != notYetType {
			kind = "a " + typ + " storage, as created_earlier.storage_types declares it"
		}
		err := v.r.NotYet(ansible.Prerequisite{Option: option, Kind: ansible.CreatedStorage, Name: vw.storage, Object: "storage " + vw.storage,
			Predicts: fmt.Sprintf("the container's volumes on it, named as on %s (%s)", kind, strings.Replace(named, "-disk-0", "-disk-N", 1))},
			// K19: GET /storage leaves out what the token may not see.
			fmt.Errorf("%s: storage '%s' does not exist or the API user may not see it (PVE lists a storage only with Datastore.Audit on /storage/%s or Datastore.AllocateSpace on /storage/%s, which a volume on it needs)", option, vw.storage, vw.storage, vw.storage))
		if err != nil {
			return err
		}
		v.storages[vw.storage] = assumed
	case st.Disabled:
		return fmt.Errorf("%s: storage '%s' is disabled", option, vw.storage)
	case !nodeAssumed && !st.OnNode(node):
		return fmt.Errorf("%s: storage '%s' is not available on node '%s'", option, vw.storage, node)
	case !st.Holds("rootdir"):
		return fmt.Errorf("%s: storage '%s' does not support container directories (content rootdir)", option, vw.storage)
	}
	return nil
}

// checkTemplate: the template volume is a vztmpl file on its storage as
// the node lists it (restore_archive dies "can't find file" otherwise).
func (v *ct) checkTemplate(ctx context.Context, node string, nodeAssumed bool) error {
	store, name, ok := strings.Cut(v.p.OSTemplate, ":")
	if !ok || !strings.HasPrefix(name, "vztmpl/") {
		return fmt.Errorf("ostemplate: %q is not a CT template volume (storage:vztmpl/name.tar.zst)", v.p.OSTemplate)
	}
	st, known := v.storages[store]
	switch {
	case !known:
		return fmt.Errorf("ostemplate: storage '%s' does not exist", store)
	case nodeAssumed:
		return nil // nothing can be listed on a node that is not there yet
	case !st.Holds("vztmpl"):
		return fmt.Errorf("ostemplate: storage '%s' does not hold CT templates (content vztmpl)", store)
	}
	var list []struct {
		VolID string `json:"volid"`
	}
	if err := v.c.Get(ctx, pveapi.Path("/nodes/%s/storage/%s/content", node, store), map[string][]string{"content": {"vztmpl"}}, &list); err != nil {
		return fmt.Errorf("ostemplate: cannot list the CT templates of storage '%s' on %s: %w", store, node, err)
	}
	for _, e := range list {
		if e.VolID == v.p.OSTemplate {
			return nil
		}
	}
	return fmt.Errorf("ostemplate: %s is not on storage '%s' of node %s (pveam download %s %s first); nothing was changed", v.p.OSTemplate, store, node, store, strings.TrimPrefix(name, "vztmpl/"))
}

// checkPool: PVE takes pool only at creation and refuses a missing one.
func (v *ct) checkPool(ctx context.Context) error {
	if v.p.Pool == "" {
		return nil
	}
	var pools []struct {
		PoolID string `json:"poolid"`
	}
	if err := v.c.Get(ctx, "/pools", nil, &pools); err != nil {
		return fmt.Errorf("pool: cannot list the pools: %w", err)
	}
	for _, p := range pools {
		if p.PoolID == v.p.Pool {
			return nil
		}
	}
	return v.r.NotYet(ansible.Prerequisite{Option: "pool", Kind: ansible.CreatedPool, Name: v.p.Pool, Object: "pool " + v.p.Pool,
		Predicts: "the container as its member"}, fmt.Errorf("pool: pool '%s' does not exist", v.p.Pool))
}

// after is the poll interval's timer.
func (v *ct) after() <-chan time.Time { return time.After(v.poll) }

func readStorages(ctx context.Context, g pveapi.Getter) (map[string]storageInfo, error) {
	return storages.Read(ctx, g)
}
