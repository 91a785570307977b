// A node's storages and their status: pve-storage PVE/API2/Storage/Status.pm.
package storagesim

import (
	"fmt"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

func (s *backend) getNodeStorage(rc *core.Req) (any, error) {
	db := rc.DB()
	out := []map[string]any{}
	for _, id := range db.SortedStorageIDs() {
		st := db.Storage[id]
		if rc.Has("storage") && rc.Str("storage") != id {
			continue
		}
		if !st.OnNode(rc.Node) {
			continue
		}
		if !core.HasPriv(db, rc.Who, "/storage/"+id, []string{"Datastore.Audit", "Datastore.AllocateSpace"}, true) {
			continue
		}
		if rc.Bool("enabled") && st.Disabled() {
			continue
		}
		if c := rc.Str("content"); c != "" && !st.HasContent(c) {
			continue
		}
		out = append(out, s.storageStatus(rc.Node, st))
	}
	return out, nil
}

func (s *backend) getNodeStorageStatus(rc *core.Req) (any, error) {
	db := rc.DB()
	st := db.Storage[rc.Str("storage")]
	if st == nil || !st.OnNode(rc.Node) {
		return nil, core.ErrParams(map[string]string{"storage": "No such storage."})
	}
	e := s.storageStatus(rc.Node, st)
	delete(e, "storage")
	delete(e, "used_fraction")
	return e, nil
}

// GET /nodes/{node}/storage/{storage}/content: the guests' volumes (only
// images are simulated: no ISOs, templates or backups). Unknown or disabled storages
// fail like PVE's storage_check_enabled.
func (s *backend) getStorageContent(rc *core.Req) (any, error) {
	db := rc.DB()
	id := rc.Str("storage")
	st := db.Storage[id]
	if st == nil {
		return nil, fmt.Errorf("storage '%s' does not exist", id)
	}
	if !st.OnNode(rc.Node) {
		return nil, fmt.Errorf("storage '%s' is not available on node '%s'", id, rc.Node)
	}
	if err := s.ActivateOn(rc.Node, st); err != nil {
		return nil, err
	}
	out := []map[string]any{}
	want := rc.Str("content")
	if s.Cfg.StorageContent != nil {
		vols, err := s.Cfg.StorageContent(rc.Node, core.StorageInfoOf(st))
		if err != nil {
			return nil, err
		}
		for _, v := range vols {
			if (want == "" || v.Content == want) && st.HasContent(v.Content) {
				out = append(out, volumeView(v))
			}
		}
	}
	// Guest volumes the simulator allocated (volumes.go).
	if want == "" || want == "images" {
		for _, e := range s.VolumeContentLocked(rc.Node, st) {
			if rc.Has("vmid") && fmt.Sprint(e["vmid"]) != rc.Str("vmid") {
				continue
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// storageStatus is st's entry in node's storage list and status (storage_info).
func (s *backend) storageStatus(node string, st *core.Storage) map[string]any {
	// storage_info activates every storage it reports (so a dir storage's
	// content subdirectories appear on the next status call).
	active := s.ActivateOn(node, st) == nil
	e := map[string]any{
		"storage": st.ID, "type": st.Type, "content": st.Content(),
		"shared": pvecommon.BoolNum(st.Shared()), "enabled": pvecommon.BoolNum(!st.Disabled()), "active": pvecommon.BoolNum(active),
	}
	if active {
		u := core.StorageUsage{Total: core.SimMaxDisk, Used: core.SimDisk, Avail: core.SimMaxDisk - core.SimDisk}
		if s.Cfg.StorageUsage != nil {
			var err error
			got, err := s.Cfg.StorageUsage(node, core.StorageInfoOf(st))
			if err != nil {
				// PVE's status warns and reports the storage inactive.
				e["active"] = 0
				return e
			}
			if got != (core.StorageUsage{}) { // zero: nothing real behind it
				u = got
			}
		}
		e["total"], e["used"], e["avail"] = u.Total, u.Used, u.Avail
		if u.Total > 0 {
			e["used_fraction"] = float64(u.Used) / float64(u.Total)
		}
	}
	return e
}

// volumeView is v as the content list shows it (Content.pm index).
func volumeView(v core.Volume) map[string]any {
	e := map[string]any{"volid": v.VolID, "content": v.Content, "format": v.Format, "size": v.Size, "ctime": v.CTime}
	if v.VMID != 0 {
		e["vmid"] = v.VMID
	}
	if v.Subtype != "" {
		e["subtype"] = v.Subtype
	}
	return e
}
