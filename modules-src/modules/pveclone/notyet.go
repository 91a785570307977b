package pveclone

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/modules/pveclone/options"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// storageNotYet handles a disk's storage that is not defined: in a real
// run it fails naming option; in a check run of the whole site, when
// created_earlier names it, it is assumed declared by an earlier task
// (pve_storage, after pve_zfs made its pool — ansible.NotYet; not named, it
// fails as in the real run), and stores gets a stand-in so the prediction goes
// on with the disks named on it.
//
// Its disks are named as on the type created_earlier.storage_types says
// the defining task declares (a file storage puts them under <vmid>/ with
// the format's extension); given no type, as PVE names them on a block
// storage (zfspool, lvmthin, rbd: vm-<vmid>-disk-<n>, find_free_diskname in
// pve-storage Plugin.pm) — never a guessed type. The checks that need the
// storage itself (on the node, shared for a cross-node clone, a linked
// clone's base) cannot be made and are left to the real run.
func (v *vm) storageNotYet(option, storage string, stores map[string]storageInfo) error {
	info := storageInfo{Type: notYetType, Shared: true, Content: []string{"images"}}
	kind := "a block storage"
	if typ := v.r.CreatedEarlierStorageType(storage); typ != "" {
		info.Type = typ
		kind = "a " + typ + " storage, as created_earlier.storage_types declares it"
	}
	named := storage + ":" + qemu.NewDiskNames(v.p.VMID, map[string]storageInfo{storage: info}).Next(storage, "")
	err := v.r.NotYet(ansible.Prerequisite{Option: option, Kind: ansible.CreatedStorage, Name: storage, Object: "storage " + storage,
		Predicts: fmt.Sprintf("the VM's disks on it, named as on %s (%s)", kind, strings.Replace(named, "-disk-0", "-disk-N", 1))},
		fmt.Errorf("%s: storage '%s' does not exist", option, storage))
	if err != nil {
		return err
	}
	stores[storage] = info
	if v.assumedStores == nil {
		v.assumedStores = map[string]bool{}
	}
	v.assumedStores[storage] = true
	return nil
}

// notYetType is the type of a storage's stand-in (storageNotYet).
const notYetType = "(not yet defined)"

// nodeNotYet is storageNotYet for the VM's node: in a check run, a node
// created_earlier says an earlier task joins is assumed, and the VM
// predicted on it.
func (v *vm) nodeNotYet(node string, fail error) error {
	if err := v.r.NotYet(ansible.Prerequisite{Option: "node", Kind: ansible.CreatedNode, Name: node, Object: "cluster node " + node,
		Predicts: "the VM and its configuration on it"}, fail); err != nil {
		return err
	}
	if v.notYet == nil {
		v.notYet = map[string]bool{}
	}
	v.notYet[node] = true
	return nil
}

// assumedMissing tells whether the storage on node is one check mode
// assumed (the storage or the node does not exist yet): nothing can be
// read there, and nothing of this VMID is there to count.
func (v *vm) assumedMissing(node, store string, stores map[string]storageInfo) bool {
	return v.notYet[node] || v.assumedStores[store]
}

// errTemplateNotYet is findTemplate's answer for a template check mode
// assumes an earlier task creates (templateNotYet).
var errTemplateNotYet = errors.New("template not yet created")

// templateNotYet handles a template that is not in the cluster: in a check
// run whose created_earlier names it (by VMID or name) among the guests an
// earlier task creates (a bare VM the play then converts, as seed 003
// does), it is assumed and errTemplateNotYet returned; else fail, the real
// run's error.
func (v *vm) templateNotYet(fail error) error {
	if err := v.r.NotYet(ansible.Prerequisite{Option: "template", Kind: ansible.CreatedGuest, Name: v.p.Template,
		Object:   "template " + v.p.Template,
		Predicts: fmt.Sprintf("the clone into VM %d and its configuration as a whole, compared with nothing", v.p.VMID)}, fail); err != nil {
		return err
	}
	return errTemplateNotYet
}

// planCloneNotYet is the check run's plan of a clone from a template that
// an earlier task creates (templateNotYet): nothing of the template can be
// read, so the clone and its configuration are predicted as one change
// (ansible.PredictedOnly). What can be checked without the template still
// is, as the real run checks it, with its messages: the target node, the
// storages named (storage, the disks'), the pool.
func (v *vm) planCloneNotYet(ctx context.Context) ([]ansible.Change, error) {
	v.tplNotYet = true
	where := "the template's node"
	if v.p.Node != "" {
		if err := v.nodeExists(ctx, v.p.Node); err != nil {
			return nil, err
		}
		v.node, where = v.p.Node, v.p.Node
	}
	stores, err := v.readStorages(ctx)
	if err != nil {
		return nil, err
	}
	named := map[string]string{} // storage → the option naming it
	if v.p.Storage != "" {
		named[v.p.Storage] = "storage"
	}
	for _, k := range slices.Sorted(maps.Keys(v.w.Disks)) {
		if d := v.w.Disks[k]; d.File == "" && d.Storage != "" {
			if _, seen := named[d.Storage]; !seen {
				named[d.Storage] = options.Of(k)
			}
		}
	}
	for _, s := range slices.Sorted(maps.Keys(named)) {
		if st, ok := stores[s]; !ok {
			if err := v.storageNotYet(named[s], s, stores); err != nil {
				return nil, err
			}
		} else if v.p.Node != "" && !v.notYet[v.p.Node] && !st.OnNode(v.p.Node) {
			return nil, fmt.Errorf("%s: storage '%s' is not available on node '%s'", named[s], s, v.p.Node)
		}
	}
	pool, err := v.poolReady(ctx)
	if err != nil {
		return nil, err
	}
	kind := map[bool]string{true: "full", false: "linked"}[v.p.Full]
	return append(pool, ansible.PredictedOnly("vm:clone",
		fmt.Sprintf("%s clone of template %s (made by an earlier task) into VM %s on %s, then its configuration",
			kind, v.p.Template, strconv.Itoa(v.p.VMID), where), nil)), nil
}

// checkAddedDiskStorages is, for a clone, what create.go checks for a bare
// VM: the disks the configuration adds (keys the template has not) are
// allocated on their storage on the target node, so a storage that does
// not exist (a typo, K15: the check run must not be green where the real
// run is red), is not on the node or holds no images is refused before
// the clone is sent, naming the option, in check mode as in a real run —
// not by the config update after the clone, with a VM left behind. A
// storage created_earlier names is assumed in check mode (storageNotYet).
func (v *vm) checkAddedDiskStorages(src qemu.Config, target string, stores map[string]storageInfo) error {
	for _, k := range slices.Sorted(maps.Keys(v.w.Disks)) {
		d := v.w.Disks[k]
		if _, has := src.Values[k]; has || d.File != "" || d.Storage == "" {
			continue
		}
		st, ok := stores[d.Storage]
		switch {
		case !ok:
			if err := v.storageNotYet(options.Of(k), d.Storage, stores); err != nil {
				return err
			}
		case v.assumedStores[d.Storage] || v.notYet[target]:
		case !st.OnNode(target):
			return fmt.Errorf("%s: storage '%s' is not available on node '%s'", options.Of(k), d.Storage, target)
		case !slices.Contains(st.Content, "images"):
			return fmt.Errorf("%s: storage '%s' does not support vm images", options.Of(k), d.Storage)
		}
	}
	return nil
}
