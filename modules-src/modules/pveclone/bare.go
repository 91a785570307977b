package pveclone

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// isoExists checks a CD-ROM's volume on its storage before the create
// (create_disks: volume_size_info, "volume '…' does not exist") and
// returns its size, which PVE records in the drive (size=).
func (v *vm) isoExists(ctx context.Context, node, volid string) (int64, error) {
	store, _, ok := strings.Cut(volid, ":")
	if !ok {
		return 0, nil
	}
	var list []struct {
		VolID string `json:"volid"`
		Size  int64  `json:"size"`
	}
	if err := v.c.Get(ctx, pveapi.Path("/nodes/%s/storage/%s/content", node, store), url.Values{"content": {"iso"}}, &list); err != nil {
		return 0, fmt.Errorf("cdrom: cannot list the ISOs of storage %s on %s: %w", store, node, err)
	}
	for _, e := range list {
		if e.VolID == volid {
			return e.Size, nil
		}
	}
	return 0, fmt.Errorf("cdrom: volume '%s' does not exist on node %s", volid, node)
}

// crossNodeLocal is clone_vm's refusal of a target node when a template's
// volume is on storage that is not shared (API2/Qemu.pm clone_vm after
// $check_storage_access_clone, which counts CD-ROM ISOs and the cloud-init
// drive too), with PVE's own reason and what to do instead.
func crossNodeLocal(target string, tpl clusterguests.Guest, key string, d qemu.Drive, st storageInfo, store string) error {
	what := "disk"
	fix := fmt.Sprintf("clone_then_migrate: true clones on %s and migrates, or keep a template on each node", tpl.Node)
	if d.IsCDROM() && !d.IsCloudInit() {
		what = "CD-ROM ISO"
		fix = "eject it from the template (" + key + ": none) or keep the ISO on shared storage"
	} else if d.IsCloudInit() {
		what = "cloud-init drive"
	}
	return fmt.Errorf("node: can't clone VM to node '%s' (VM uses local storage): template %d's %s %s is on %s storage '%s' of node %s; %s",
		target, tpl.VMID, what, key, st.Type, store, tpl.Node, fix)
}
