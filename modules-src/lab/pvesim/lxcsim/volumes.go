package lxcsim

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guests"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecontainer"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

// bareSizeRe is pve-container's "allow to use simple numbers": a rootfs or
// mount point given as a size alone.
var bareSizeRe = regexp.MustCompile(`^\d+(\.\d+)?$`)

// ctCreateVolumes is the volume part of pve-container's create_vm
// (src/PVE/API2/LXC.pm) before the task: `storage` defaults to local, a
// bare size goes on it ("$storage:$value"), no rootfs means "$storage:4"
// ("defaults to 4GB"), and every storage a volume is on must exist, be
// enabled on the node and take rootdir ($check_and_activate_storage: a 400
// on `storage`), and the caller needs Datastore.AllocateSpace on it.
// PVE::LXC::create_disks then allocates them in the task.
func (s *backend) ctCreateVolumes(rc *core.Req, keys map[string]string) error {
	defStorage := rc.Str("storage")
	if defStorage == "" {
		defStorage = "local"
	}
	var sids []string
	for k, v := range keys {
		if !pvecontainer.IsVolumeKey(k) {
			continue
		}
		if bareSizeRe.MatchString(v) {
			keys[k] = defStorage + ":" + v
		}
		vol := pvecontainer.ParseMountPoint(keys[k]).Volume()
		if strings.HasPrefix(vol, "/") {
			if rc.Who == nil || rc.Who.Full() != "root@pam" {
				return pvecommon.Die("Only root can pass arbitrary filesystem paths.")
			}
			continue
		}
		if sid, _, ok := storage.ParseVolumeID(vol); ok {
			sids = append(sids, sid)
		}
	}
	if keys["rootfs"] == "" {
		if len(sids) > 0 {
			return pvecommon.Die("mount points configured, but 'rootfs' not set - aborting")
		}
		keys["rootfs"] = defStorage + ":4"
		sids = append(sids, defStorage)
	}
	db := rc.DB()
	for _, sid := range sids {
		st := db.Storage[sid]
		switch {
		case st == nil:
			return pvecommon.Die("storage '%s' does not exist", sid)
		case st.Disabled():
			return pvecommon.Die("storage '%s' is disabled", sid)
		case !st.OnNode(rc.Node):
			return pvecommon.Die("storage '%s' is not available on node '%s'", sid, rc.Node)
		case !st.HasContent("rootdir"):
			return core.ErrParams(map[string]string{"storage": fmt.Sprintf("storage '%s' does not support container directories", sid)})
		case !guests.IsRootUser(rc.Who):
			if err := core.RPCCheck(db, rc.Who, "/storage/"+sid, "Datastore.AllocateSpace"); err != nil {
				return err
			}
		}
	}
	return nil
}
