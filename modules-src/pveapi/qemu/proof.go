package qemu

import (
	"context"
	"fmt"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/guest"
)

// NameProof is the pveapi.Write.Proof of a clone or create of VM vmid
// that gives it name (the name PVE gives it: clone_vm's "Copy-of-VM-…"
// when none is sent; "" for a create without one): the new VMID's config,
// on whichever node holds it, carries that name.
//
// A config there without a name yet (clone_vm's temporary "# qmclone
// temporary file / lock: clone" before the worker writes the first disk,
// create_vm's locked empty config) shows nothing either way; another name
// shows the VMID is another's, which this write cannot have made: PVE
// refuses a clone or create onto a VMID that exists (clone_vm's "config
// file already exists", create_vm's check_vmid_unused) and re-checks under
// the new VMID's lock in the worker.
func NameProof(g pveapi.Getter, vmid int, name string) func(ctx context.Context) (pveapi.Evidence, error) {
	return guest.NameProof(g, guest.VM, vmid, "name", name)
}

// CloneName is the name clone_vm gives the new VM: the one sent, else
// "Copy-of-VM-" and the source's name, or its VMID when it has none.
func CloneName(name, srcName string, srcVMID int) string {
	switch {
	case name != "":
		return name
	case srcName != "":
		return "Copy-of-VM-" + srcName
	}
	return fmt.Sprintf("Copy-of-VM-%d", srcVMID)
}
