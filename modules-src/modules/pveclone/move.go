package pveclone

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// cloneWhere decides where the clone is made. A clone to another node is
// made there directly when PVE can (every volume of the template, and
// storage, shared); with clone_then_migrate and anything local, it is made
// on the template's node (on storage when that node has it) and then
// migrated (K2: what users and the OpenTofu provider do). why says so for
// the summaries.
func (v *vm) cloneWhere(src qemu.Config, tpl clusterguests.Guest, target string, stores map[string]storageInfo) (node, storage, why string, err error) {
	if !v.p.CloneThenMigrate || target == tpl.Node {
		return target, v.p.Storage, "", nil
	}
	local, err := localVolumes(src, v.p.Storage, stores)
	if err != nil {
		return "", "", "", fmt.Errorf("template %d: %w", tpl.VMID, err)
	}
	if len(local) == 0 {
		return target, v.p.Storage, " (clone_then_migrate: the template's disks are all on shared storage, so PVE clones straight to " + target + ", no migration)", nil
	}
	if !v.p.Full {
		return "", "", "", fmt.Errorf("full: a linked clone of template %d would depend on its base volumes on %s's local storage (%s), and PVE refuses to migrate a linked clone off that node (H8); clone_then_migrate needs full: true; nothing was changed", tpl.VMID, tpl.Node, strings.Join(local, ", "))
	}
	storage = v.p.Storage
	if st, ok := stores[storage]; ok && !st.OnNode(tpl.Node) {
		storage = "" // the clone keeps each disk's storage; the migration moves them onto storage
	}
	return tpl.Node, storage, fmt.Sprintf(" (clone_then_migrate: %s is on %s's local storage, so the clone is made there and then migrated)", strings.Join(local, ", "), tpl.Node), nil
}

// localVolumes are the template's volumes (and storage) a cross-node
// clone cannot take: on storage that is not shared.
func localVolumes(src qemu.Config, storage string, stores map[string]storageInfo) ([]string, error) {
	var out []string
	if st, ok := stores[storage]; ok && !st.Shared {
		out = append(out, "storage "+storage)
	}
	disks, err := src.Disks()
	if err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(disks)) {
		store, _, ok := strings.Cut(disks[k].File, ":")
		if st, known := stores[store]; ok && known && !st.Shared {
			out = append(out, k)
		}
	}
	return out, nil
}

// planMoveExisting: the VM exists on another node than the task's. With
// migrate_existing it is migrated (HA's own migrate under HA, H4), else
// only a warning says where it is: nothing moves by surprise (after an HA
// recovery the guest lives elsewhere on purpose, H3).
func (v *vm) planMoveExisting(ctx context.Context, g clusterguests.Guest, st qemu.State) ([]ansible.Change, error) {
	if !v.p.MigrateExisting || st.Next.Template() {
		v.misplaced(g)
		return nil, nil
	}
	if !st.HA {
		managed, err := v.haManaged(ctx) // the guest list's hastate lags the HA config
		if err != nil {
			return nil, err
		}
		st.HA = managed
	}
	stores, err := v.readStorages(ctx)
	if err != nil {
		return nil, err
	}
	m, err := v.planMigration(ctx, st, v.p.Node, "", stores)
	if err != nil {
		return nil, err
	}
	ch, err := v.migrateChange(m, " (migrate_existing)")
	if err != nil {
		return nil, err
	}
	return []ansible.Change{ch}, nil
}
