package guest

import (
	"context"
	"fmt"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
)

// NameProof is the pveapi.Write.Proof of a create (or clone) of guest
// vmid of kind k that gives it name under key (a VM's name, a CT's
// hostname): the new VMID's config, on whichever node holds it, carries
// that name.
//
// A config there without a name yet (the temporary locked config a clone
// or create writes first) shows nothing either way; another name, or a
// guest of another kind, shows the VMID is another's, which this write
// cannot have made: PVE refuses a create onto a VMID that exists
// (check_vmid_unused, clone_vm's "config file already exists") and
// re-checks under the new VMID's lock in the worker.
func NameProof(g pveapi.Getter, k Kind, vmid int, key, name string) func(ctx context.Context) (pveapi.Evidence, error) {
	return func(ctx context.Context) (pveapi.Evidence, error) {
		guests, err := clusterguests.Guests(ctx, g)
		if err != nil {
			return pveapi.Evidence{}, err
		}
		gst, ok := clusterguests.Find(guests, vmid)
		if !ok {
			return pveapi.Evidence{Read: fmt.Sprintf("no %s %d in the cluster", k.Word, vmid)}, nil
		}
		if gst.Type != k.API {
			return pveapi.Evidence{Other: fmt.Sprintf("VMID %d is a %s on %s", vmid, gst.Type, gst.Node)}, nil
		}
		var raw map[string]any
		err = g.Get(ctx, pveapi.Path("/nodes/%s/%s/%s/config", gst.Node, k.API, fmt.Sprint(vmid)), nil, &raw)
		if pveapi.IsNotFound(err) {
			return pveapi.Evidence{Read: fmt.Sprintf("%s %d's config is not readable on %s yet", k.Word, vmid, gst.Node)}, nil
		}
		if err != nil {
			return pveapi.Evidence{}, err
		}
		got, lock := pveapi.String(raw[key]), pveapi.String(raw["lock"])
		w, node := k.Word, gst.Node
		switch {
		case got != "" && got == name, got == "" && name == "" && lock == "":
			return pveapi.Evidence{Ours: true, Read: fmt.Sprintf("%s %d on %s is named %q, the name this write sent", w, vmid, node, name)}, nil
		case got == "" && lock != "":
			return pveapi.Evidence{Read: fmt.Sprintf("%s %d on %s is still being made (lock %s), without a name yet", w, vmid, node, lock)}, nil
		case got == "":
			return pveapi.Evidence{Other: fmt.Sprintf("%s %d on %s has no name, this write sent %q", w, vmid, node, name)}, nil
		}
		return pveapi.Evidence{Other: fmt.Sprintf("%s %d on %s is named %q, not %q", w, vmid, node, got, name)}, nil
	}
}
