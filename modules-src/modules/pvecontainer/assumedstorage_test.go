package pvecontainer

import (
	"fmt"
	"strings"
	"testing"
)

// Check mode on storages an earlier task defines (created_earlier): the
// volumes are named as PVE names them on the type the play declares for
// each (created_earlier.storage_types: subvol-… on a zfspool, <vmid>/….raw
// on a dir storage), as on a block storage for one without a declared
// type, and nothing is written. Issue 25: an assumed zfspool used to be
// predicted vm-<vmid>-disk-0.
func TestAssumedStorageTypeNamesVolumes(t *testing.T) {
	w := newWorld(t, 9)
	args := with(runnerArgs(),
		"rootfs", map[string]any{"storage": "newzfs", "size": "8G"},
		"mounts", map[string]any{
			"mp0": map[string]any{"storage": "newdir", "size": "4G", "mp": "/srv/a"},
			"mp1": map[string]any{"storage": "newblk", "size": "1G", "mp": "/srv/b"},
		},
		"created_earlier", map[string]any{"storages": []any{"newzfs", "newdir", "newblk"},
			"storage_types": map[string]any{"newzfs": "zfspool", "newdir": "dir"}})
	w.sim.ResetRequests()
	res := w.run(args, true)
	if failed(res) || res["changed"] != true {
		t.Fatalf("check: %v", msg(res))
	}
	if m := writes(w.sim); len(m) != 0 {
		t.Fatalf("check mode wrote %+v", m)
	}
	c := cfgOf(res)
	for k, want := range map[string]string{
		"rootfs": "newzfs:subvol-200-disk-0,size=8G",
		"mp0":    "newdir:200/vm-200-disk-0.raw,mp=/srv/a,size=4G",
		"mp1":    "newblk:vm-200-disk-0,mp=/srv/b,size=1G",
	} {
		if c[k] != want {
			t.Errorf("%s: predicted %q, want %q", k, c[k], want)
		}
	}
	warned := fmt.Sprint(res["warnings"])
	for _, want := range []string{"named as on a zfspool storage, as created_earlier.storage_types declares it (newzfs:subvol-200-disk-N)",
		"named as on a block storage (newblk:vm-200-disk-N)"} {
		if !strings.Contains(warned, want) {
			t.Errorf("warnings %s: missing %q", warned, want)
		}
	}
}
