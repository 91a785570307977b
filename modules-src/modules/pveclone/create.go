package pveclone

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/modules/pveclone/options"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// planCreate builds a VM bare (seed 002): one create call carrying the
// machine, the disks (allocated by PVE from storage:GiB), the CD-ROM, the
// NICs and every setting, after the ISO, the storages and the node were
// checked read-only.
func (v *vm) planCreate(ctx context.Context) ([]ansible.Change, error) {
	node := v.p.Node
	if node == "" {
		return nil, fmt.Errorf("node: required to build a VM bare (no template given)")
	}
	if err := v.nodeExists(ctx, node); err != nil {
		return nil, err
	}
	stores, err := v.readStorages(ctx)
	if err != nil {
		return nil, err
	}
	cfg, err := v.w.CreateConfig()
	if err != nil {
		return nil, err
	}
	isoSizes, err := v.addNewDisks(ctx, node, stores, cfg)
	if err != nil {
		return nil, err
	}
	pool, err := v.poolReady(ctx)
	if err != nil {
		return nil, err
	}
	params := maps.Clone(cfg)
	if v.p.Pool != "" {
		params["pool"] = v.p.Pool
	}
	req := qemu.Create(node, v.p.VMID, params)
	if err := req.Validate(v.version); err != nil {
		return nil, v.schemaError(err)
	}
	names, err := v.namesFor(ctx, node, nil, allocatedStorages(cfg), stores)
	if err != nil {
		return nil, err
	}
	predicted := qemu.PredictCreate(cfg, names, isoSizes)
	if _, _, _, err := v.settings(ctx, qemu.State{Node: node, Next: predicted, Live: predicted}, false); err != nil {
		return nil, err // refused before the create is sent
	}
	v.node = node
	return append(pool, v.createChange(node, params, predicted)), nil
}

// addNewDisks checks each wanted disk against what node has (an ISO that
// exists, a storage there that holds images) and adds its drive string
// to cfg; it returns the ISOs' sizes, which the predicted config shows.
func (v *vm) addNewDisks(ctx context.Context, node string, stores map[string]storageInfo, cfg map[string]string) (map[string]int64, error) {
	isoSizes := map[string]int64{}
	for _, k := range slices.Sorted(maps.Keys(v.w.Disks)) {
		d := v.w.Disks[k]
		if d.File != "" && d.Media == "cdrom" {
			size, err := v.isoExists(ctx, node, d.File)
			if err != nil {
				return nil, err
			}
			isoSizes[d.File] = size
		} else if d.File == "" {
			if err := v.checkNewDiskStorage(options.Of(k), d.Storage, node, stores); err != nil {
				return nil, err
			}
		}
		s, err := d.DriveString(k)
		if err != nil {
			return nil, err
		}
		cfg[k] = s
	}
	return isoSizes, nil
}

// checkNewDiskStorage refuses, as qm create would, a new disk on a
// storage that node lacks or that holds no VM images.
func (v *vm) checkNewDiskStorage(opt, storage, node string, stores map[string]storageInfo) error {
	st, ok := stores[storage]
	switch {
	case storage == "":
	case !ok:
		return v.storageNotYet(opt, storage, stores)
	case !st.OnNode(node):
		return fmt.Errorf("%s: storage '%s' is not available on node '%s'", opt, storage, node)
	case !slices.Contains(st.Content, "images"):
		return fmt.Errorf("%s: storage '%s' does not support vm images", opt, storage)
	}
	return nil
}

// allocatedStorages are the storages cfg's new disks are allocated on
// (STORAGE:SIZE), whose free volume names the prediction needs.
func allocatedStorages(cfg map[string]string) []string {
	var stores []string
	for k, val := range cfg {
		if d, err := qemu.ParseDrive(k, val); qemu.IsDisk(k) && err == nil {
			if st, _, ok := d.Allocation(); ok {
				stores = append(stores, st)
			}
		}
	}
	return stores
}

// createChange sends the create (under the VMID vmid: auto claims) and
// waits for the new VM's config on node.
func (v *vm) createChange(node string, params map[string]string, predicted qemu.Config) ansible.Change {
	return ansible.Change{
		ID:      "vm:create",
		Summary: fmt.Sprintf("create VM %d (%s) on %s", v.p.VMID, v.p.Name, node),
		Diff:    ansible.TextDiff(confHeader(node, v.p.VMID), "", renderConf(predicted.Values)),
		Apply: func(ctx context.Context) error {
			mk := func(id int) (write, error) {
				req := qemu.Create(node, id, params) // vmid: auto may claim another VMID than planned
				if err := req.Validate(v.version); err != nil {
					return write{}, v.schemaError(err)
				}
				return write{req: req, what: fmt.Sprintf("create VM %d", id),
					settle: func(ctx context.Context) (bool, error) { return v.exists(ctx) }, creates: true,
					proof: qemu.NameProof(v.c, id, v.p.Name)}, nil
			}
			if err := v.claim(ctx, mk, func(*pveapi.TaskResult) {}); err != nil {
				return err
			}
			v.created = true
			return v.waitConfig(ctx, node)
		},
		Verify: func(ctx context.Context) error { return v.verifyPresent(ctx, node) },
		Predict: func(w *ansible.World) {
			vmKey(v.p.VMID).Predict(w, qemu.State{Node: node, Next: predicted, Live: predicted})
		},
	}
}
