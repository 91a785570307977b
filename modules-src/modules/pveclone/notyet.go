package pveclone

import (
	"fmt"

	"github.com/gopve/proxmox/modules-src/ansible"
)

// storageNotYet handles a disk's storage that is not defined: in a real
// run it fails naming option; in a check run of the whole site it is
// assumed declared by an earlier task (pve_storage, after pve_zfs made its
// pool — ansible.NotYet), and stores gets a stand-in so the prediction goes
// on with the disks named on it.
//
// Reconstruction: the storage's type is unknown until it exists, so its
// disks are named as PVE names them on a block storage (zfspool, lvmthin,
// rbd: vm-<vmid>-disk-<n>, find_free_diskname in pve-storage Plugin.pm); a
// file storage would put them under <vmid>/ with the format's extension.
// The checks that depend on the type (shared for a cross-node clone, a
// linked clone's base) cannot be made and are left to the real run.
func (v *vm) storageNotYet(option, storage string, stores map[string]storageInfo) error {
	err := v.r.NotYet(ansible.Prerequisite{Option: option, Object: "storage " + storage,
		Predicts: fmt.Sprintf("the VM's disks on it, named as on a block storage (%s:vm-%d-disk-N)", storage, v.p.VMID)},
		fmt.Errorf("%s: storage '%s' does not exist", option, storage))
	if err != nil {
		return err
	}
	stores[storage] = storageInfo{Type: notYetType, Shared: true, Content: []string{"images"}}
	return nil
}

// notYetType is the type of a storage's stand-in (storageNotYet).
const notYetType = "(not yet defined)"

// nodeNotYet is storageNotYet for the VM's node: in a check run, a node
// an earlier task joins is assumed, and the VM predicted on it.
func (v *vm) nodeNotYet(node string, fail error) error {
	if err := v.r.NotYet(ansible.Prerequisite{Option: "node", Object: "cluster node " + node,
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
	return v.notYet[node] || stores[store].Type == notYetType
}
