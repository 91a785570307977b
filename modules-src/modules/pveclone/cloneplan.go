package pveclone

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// Cloning from a template: PVE's pre-clone checks read-only, the clone
// request, the move after it, and the clone's change.

// planClone runs PVE's pre-clone checks read-only (clone_vm's
// $load_and_check) and plans the clone with its predicted config.
func (v *vm) planClone(ctx context.Context, guests []clusterguests.Guest) ([]ansible.Change, error) {
	tpl, err := v.findTemplate(ctx, guests)
	if errors.Is(err, errTemplateNotYet) {
		return v.planCloneNotYet(ctx)
	}
	if err != nil {
		return nil, err
	}
	target, err := v.cloneTarget(ctx, tpl)
	if err != nil {
		return nil, err
	}
	src, err := v.readCloneSource(ctx, tpl)
	if err != nil {
		return nil, err
	}
	stores, err := v.readStorages(ctx)
	if err != nil {
		return nil, err
	}
	cloneNode, cloneStorage, why, err := v.cloneWhere(src, tpl, target, stores)
	if err != nil {
		return nil, err
	}
	if err := v.checkCloneStorage(src, tpl, cloneNode, cloneStorage, stores); err != nil {
		return nil, err
	}
	if err := v.checkAddedDiskStorages(src, target, stores); err != nil {
		return nil, err
	}
	pool, err := v.poolReady(ctx)
	if err != nil {
		return nil, err
	}
	clone, err := v.cloneRequest(tpl, cloneNode, cloneStorage)
	if err != nil {
		return nil, err
	}
	names, err := v.cloneNames(ctx, src, tpl.Node, cloneStorage, stores)
	if err != nil {
		return nil, err
	}
	predicted, err := qemu.PredictClone(src, tpl.VMID, qemu.CloneOpts{NewID: v.p.VMID, Name: v.p.Name, Description: clone.Description,
		Storage: cloneStorage, Format: v.p.Format, Full: v.p.Full}, stores, names)
	if err != nil {
		return nil, err
	}
	cloned := qemu.State{Node: cloneNode, Next: predicted, Live: predicted}
	moves, final, err := v.planMoveAfterClone(ctx, cloned, target, why, stores)
	if err != nil {
		return nil, err // refused before the clone is sent
	}
	if _, _, _, err := v.settings(ctx, final, false); err != nil {
		return nil, err // refused before the clone is sent
	}
	v.node = cloneNode
	where := cloneNode
	if cloneNode != tpl.Node {
		where = fmt.Sprintf("%s → %s", tpl.Node, cloneNode)
	}
	if cloneNode == target {
		where += why
	}
	return append(append(pool, v.cloneChange(tpl, clone, cloned, where)), moves...), nil
}

// cloneTarget is the node the VM is to end on: the asked node, else the
// template's (which must exist when it is another node).
func (v *vm) cloneTarget(ctx context.Context, tpl clusterguests.Guest) (string, error) {
	target := v.p.Node
	if target == "" {
		target = tpl.Node
	}
	if target != tpl.Node {
		if err := v.nodeExists(ctx, target); err != nil {
			return "", err
		}
	}
	return target, nil
}

// readCloneSource reads the template's config to clone from, refusing a
// locked one as clone_vm would.
func (v *vm) readCloneSource(ctx context.Context, tpl clusterguests.Guest) (qemu.Config, error) {
	// current=1: clone_vm copies the template's stored values and discards
	// its pending section (with a warning), so the prediction must too.
	src, err := qemu.GetConfig(ctx, v.c, tpl.Node, tpl.VMID, true)
	if err != nil {
		return qemu.Config{}, fmt.Errorf("template: cannot read VM %d on %s: %w", tpl.VMID, tpl.Node, err)
	}
	if l := src.Lock(); l != "" {
		return qemu.Config{}, fmt.Errorf("template: VM %d is locked (%s); PVE refuses to clone it now", tpl.VMID, l)
	}
	return src, nil
}

// cloneRequest is the clone call as planned, checked against the schema
// before anything is sent.
func (v *vm) cloneRequest(tpl clusterguests.Guest, cloneNode, cloneStorage string) (qemu.Clone, error) {
	full := v.p.Full
	clone := qemu.Clone{Node: tpl.Node, VMID: tpl.VMID, NewID: v.p.VMID, Name: v.p.Name, Target: cloneNode, Full: &full,
		Storage: cloneStorage, Format: v.p.Format, Pool: v.p.Pool, BWLimit: v.p.BWLimit}
	if v.p.Description != nil {
		clone.Description = *v.p.Description
	}
	req := clone.Request()
	if err := req.Validate(v.version); err != nil {
		return qemu.Clone{}, v.schemaError(err)
	}
	return clone, nil
}

// planMoveAfterClone plans the migration of a VM cloned on another node
// than target (clone_then_migrate), and returns the state it ends in.
func (v *vm) planMoveAfterClone(ctx context.Context, cloned qemu.State, target, why string, stores map[string]storageInfo) ([]ansible.Change, qemu.State, error) {
	if cloned.Node == target {
		return nil, cloned, nil
	}
	m, err := v.planMigration(ctx, cloned, target, v.p.Storage, stores)
	if err != nil {
		return nil, qemu.State{}, err
	}
	ch, err := v.migrateChange(m, why)
	if err != nil {
		return nil, qemu.State{}, err
	}
	return []ansible.Change{ch}, m.after, nil
}

// cloneChange sends the clone (under the VMID vmid: auto claims) and
// waits for the new VM's config on the node it was cloned to.
func (v *vm) cloneChange(tpl clusterguests.Guest, clone qemu.Clone, cloned qemu.State, where string) ansible.Change {
	kind := map[bool]string{true: "full", false: "linked"}[*clone.Full]
	return ansible.Change{
		ID:      "vm:clone",
		Summary: fmt.Sprintf("%s clone of template %d (%s) into VM %d on %s", kind, tpl.VMID, tpl.Name, v.p.VMID, where),
		Diff:    ansible.TextDiff(confHeader(cloned.Node, v.p.VMID), "", renderConf(cloned.Next.Values)),
		Apply: func(ctx context.Context) error {
			mk := func(id int) (write, error) {
				c := clone
				c.NewID = id // vmid: auto may claim another VMID than planned
				req := c.Request()
				if err := req.Validate(v.version); err != nil {
					return write{}, v.schemaError(err)
				}
				return write{req: req, what: fmt.Sprintf("clone template %d into VM %d", tpl.VMID, id),
					settle: func(ctx context.Context) (bool, error) { return v.exists(ctx) }, creates: true,
					proof: qemu.NameProof(v.c, id, qemu.CloneName(v.p.Name, tpl.Name, tpl.VMID))}, nil
			}
			if err := v.claim(ctx, mk, func(res *pveapi.TaskResult) {
				if res != nil {
					v.cloneWarnings = res.Warnings
				}
			}); err != nil {
				return err
			}
			v.created = true
			return v.waitConfig(ctx, cloned.Node)
		},
		Verify: func(ctx context.Context) error { return v.verifyPresent(ctx, cloned.Node) },
		Predict: func(w *ansible.World) {
			vmKey(v.p.VMID).Predict(w, cloned)
		},
	}
}

// checkCloneStorage is clone_vm's storage checks, read-only: the target
// storage exists on the node and holds images, is shared when the clone
// crosses nodes, and a cross-node clone needs every disk on shared
// storage; a linked clone needs storages that can link.
func (v *vm) checkCloneStorage(src qemu.Config, tpl clusterguests.Guest, target, storage string, stores map[string]storageInfo) error {
	if s := storage; s != "" {
		st, ok := stores[s]
		switch {
		case !ok:
			if err := v.storageNotYet("storage", s, stores); err != nil {
				return err
			}
		case !st.OnNode(tpl.Node):
			return fmt.Errorf("storage: storage '%s' is not available on node '%s'", s, tpl.Node)
		case !st.OnNode(target):
			return fmt.Errorf("storage: storage '%s' is not available on node '%s'", s, target)
		case !slices.Contains(st.Content, "images"):
			return fmt.Errorf("storage: storage '%s' does not support vm images", s)
		case target != tpl.Node && !st.Shared:
			return fmt.Errorf("storage: can't clone to non-shared storage '%s' (the clone goes to node %s, the template is on %s)", s, target, tpl.Node)
		}
	}
	disks, err := src.Disks()
	if err != nil {
		return fmt.Errorf("template %d: %w", tpl.VMID, err)
	}
	for _, k := range slices.Sorted(maps.Keys(disks)) {
		d := disks[k]
		store, _, ok := strings.Cut(d.File, ":")
		if !ok {
			continue // none, a host drive (cdrom) or a path
		}
		st, known := stores[store]
		if !known {
			// K19: PVE's storage list leaves out what the token may not
			// see, so a missing storage may only be hidden.
			return fmt.Errorf("template %d: %s is on storage '%s', which does not exist or which the API user may not see "+
				"(PVE lists a storage only with Datastore.Audit on /storage/%s or Datastore.AllocateSpace on /storage/%s; a clone "+
				"needs Datastore.AllocateSpace there, or on the clone's target storage)", tpl.VMID, k, store, store, store)
		}
		if target != tpl.Node && !st.Shared {
			// check_storage_access_clone counts every volume, an ISO in a
			// CD-ROM and the cloud-init drive included.
			return crossNodeLocal(target, tpl, k, d, st, store)
		}
		if d.IsCDROM() && !d.IsCloudInit() {
			continue
		}
		if !v.p.Full && !d.IsCloudInit() && k != "tpmstate0" && !st.Kind().LinkedClone {
			// volume_has_feature('clone') of a base volume (storagetype):
			// thin storages and file storages link; LVM (thick) cannot.
			return fmt.Errorf("full: Linked clone feature is not supported for '%s' (%s): %s storage cannot link; use a full clone", d.File, k, st.Type)
		}
	}
	return nil
}
