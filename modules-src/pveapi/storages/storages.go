// Package storages reads the cluster's storage definitions (GET /storage)
// as the guest modules need them: type, content, nodes, sharing, format.
// pve_clone names a VM's disks and checks a clone's storages with it,
// pve_container a container's volumes.
package storages

import (
	"context"
	"fmt"
	"slices"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/storagetype"
)

// Info is one storage's definition.
type Info struct {
	Type     string
	Shared   bool
	Content  []string
	Nodes    []string // empty: every node
	Format   string   // the storage's default format option, "" = the type's
	Disabled bool
	// VolumeChain is LVM's snapshot-as-volume-chain (PVE 9): qcow2 volumes,
	// named with their suffix.
	VolumeChain bool
}

// Kind is what PVE knows of the storage's type.
func (s Info) Kind() storagetype.Type { return storagetype.Of(s.Type) }

// File tells whether volumes are files under the storage's path (images/
// <vmid>/…, with the format's extension).
func (s Info) File() bool { return s.Kind().Path }

// DefaultFormat is the format a new disk without one gets here
// (storage_default_format).
func (s Info) DefaultFormat() string { return s.Kind().DefaultFormat(s.Format, s.VolumeChain) }

// OnNode tells whether the storage is available on node (its nodes list).
func (s Info) OnNode(node string) bool {
	return len(s.Nodes) == 0 || slices.Contains(s.Nodes, node)
}

// Holds tells whether the storage takes content (images, rootdir, …).
func (s Info) Holds(content string) bool { return slices.Contains(s.Content, content) }

// Read is GET /storage, by storage id.
func Read(ctx context.Context, g pveapi.Getter) (map[string]Info, error) {
	var list []map[string]any
	if err := g.Get(ctx, "/storage", nil, &list); err != nil {
		return nil, fmt.Errorf("cannot read the storage definitions: %w", err)
	}
	out := map[string]Info{}
	for _, s := range list {
		st := Info{Type: pveapi.String(s["type"]), Format: pveapi.String(s["format"]),
			Content: pveapi.SplitList(pveapi.String(s["content"])), Nodes: pveapi.SplitList(pveapi.String(s["nodes"]))}
		if b, err := pveapi.ParseBool(pveapi.String(s["shared"])); err == nil && b {
			st.Shared = true
		}
		if b, err := pveapi.ParseBool(pveapi.String(s["disable"])); err == nil && b {
			st.Disabled = true
		}
		if b, err := pveapi.ParseBool(pveapi.String(s["snapshot-as-volume-chain"])); err == nil && b {
			st.VolumeChain = true
		}
		if storagetype.Shared(st.Type, 0) {
			// PVE sets it on parse (@SHARED_STORAGE); a reader of another
			// version's answer should not depend on it.
			st.Shared = true
		}
		out[pveapi.String(s["storage"])] = st
	}
	return out, nil
}
