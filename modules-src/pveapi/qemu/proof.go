package qemu

import (
	"context"
	"fmt"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/resources"
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
	return func(ctx context.Context) (pveapi.Evidence, error) {
		guests, err := resources.Guests(ctx, g)
		if err != nil {
			return pveapi.Evidence{}, err
		}
		guest, ok := resources.Find(guests, vmid)
		if !ok {
			return pveapi.Evidence{Read: fmt.Sprintf("no VM %d in the cluster", vmid)}, nil
		}
		if !guest.IsVM() {
			return pveapi.Evidence{Other: fmt.Sprintf("VMID %d is a %s on %s", vmid, guest.Type, guest.Node)}, nil
		}
		cfg, err := GetConfig(ctx, g, guest.Node, vmid, false)
		if pveapi.IsNotFound(err) {
			return pveapi.Evidence{Read: fmt.Sprintf("VM %d's config is not readable on %s yet", vmid, guest.Node)}, nil
		}
		if err != nil {
			return pveapi.Evidence{}, err
		}
		got, lock := cfg.Values["name"], cfg.Lock()
		switch {
		case got != "" && got == name, got == "" && name == "" && lock == "":
			return pveapi.Evidence{Ours: true, Read: fmt.Sprintf("VM %d on %s is named %q, the name this write sent", vmid, guest.Node, name)}, nil
		case got == "" && lock != "":
			return pveapi.Evidence{Read: fmt.Sprintf("VM %d on %s is still being made (lock %s), without a name yet", vmid, guest.Node, lock)}, nil
		case got == "":
			return pveapi.Evidence{Other: fmt.Sprintf("VM %d on %s has no name, this write sent %q", vmid, guest.Node, name)}, nil
		}
		return pveapi.Evidence{Other: fmt.Sprintf("VM %d on %s is named %q, not %q", vmid, guest.Node, got, name)}, nil
	}
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
