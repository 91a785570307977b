// A node's storages and their status: pve-storage PVE/API2/Storage/Status.pm.
package storagesim

import (
	"fmt"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
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
		out = append(out, s.StorageStatus(rc.Node, st))
	}
	return out, nil
}

func (s *backend) getNodeStorageStatus(rc *core.Req) (any, error) {
	db := rc.DB()
	st := db.Storage[rc.Str("storage")]
	if st == nil || !st.OnNode(rc.Node) {
		return nil, core.ErrParams(map[string]string{"storage": "No such storage."})
	}
	e := s.StorageStatus(rc.Node, st)
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
				out = append(out, v.View())
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
