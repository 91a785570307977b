package qemu

import (
	"maps"
	"testing"

	"github.com/gopve/proxmox/modules-src/pveapi/storages"
)

// The prediction of a full clone's volume on a file storage follows
// resolve_dst_disk_format: the source's format on the same storage (here
// qcow2). The lab allocates the storage's default instead (reported gap),
// so this is checked on the prediction alone.
func TestPredictFileStorageFormat(t *testing.T) {
	src := Config{Values: map[string]string{"scsi0": "shared:9000/base-9000-disk-0.qcow2,size=4G", "template": "1", "name": "t",
		"ide2": "shared:9000/vm-9000-cloudinit.qcow2,media=cdrom", "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0", "unused0": "shared:9000/x.raw"}}
	stores := map[string]storages.Info{"shared": {Type: "nfs", Shared: true}}
	got, err := PredictClone(src, 9000, CloneOpts{NewID: 201, Full: true}, stores, NewDiskNames(201, stores))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"scsi0": "shared:201/vm-201-disk-0.qcow2,size=4G", "ide2": "shared:201/vm-201-cloudinit.qcow2,media=cdrom",
		"net0": "virtio=" + AssignedAtClone + ",bridge=vmbr0", "name": "Copy-of-VM-t", "smbios1": "uuid=" + AssignedAtClone}
	if !maps.Equal(got.Values, want) {
		t.Errorf("predicted %v\nwant      %v", got.Values, want)
	}
	linked, _ := PredictClone(src, 9000, CloneOpts{NewID: 201}, stores, NewDiskNames(201, stores))
	if linked.Values["scsi0"] != "shared:9000/base-9000-disk-0.qcow2/201/vm-201-disk-0.qcow2,size=4G" {
		t.Errorf("linked: %v", linked.Values["scsi0"])
	}
}
