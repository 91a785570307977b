package qemuserver

import (
	"fmt"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

// CheckNewDrive is $check_drive_param's storage part for one drive option
// (src/PVE/API2/Qemu.pm, with $check_storage_access's content-type check
// of an existing volume), as create and update make it before the task:
// the drive's storage exists in storecfg (storage.cfg's sections), is on
// node and takes images (for a new disk or a cloud-init drive); an
// existing volume is an image or an ISO, an ISO only with media=cdrom.
// A bare size ("32") is create_disks' default storage's and passes; a
// path, "none" and "cdrom" name no storage. A refused parameter is a
// *ParamError. Reconstruction: the order of the checks and the words of
// the storage refusals are the lab's.
func CheckNewDrive(key, v, node string, storecfg map[string]*storage.Section) error {
	d := ParseDrive(v)
	f := d.File()
	if f == "none" || f == "cdrom" || strings.HasPrefix(f, "/") {
		return nil
	}
	store, vn, ok := storage.ParseVolumeID(f)
	if !ok {
		if _, isSize := pvecommon.ParseSize(f); isSize {
			return nil // "32" on the default storage: create_disks allocates it
		}
		return &ParamError{Param: key, Msg: fmt.Sprintf("unable to parse volume ID '%s'", f)}
	}
	st := storecfg[store]
	if st == nil {
		return fmt.Errorf("storage '%s' does not exist", store)
	}
	if !st.OnNode(node) {
		return fmt.Errorf("storage '%s' is not available on node '%s'", store, node)
	}
	_, isSize := pvecommon.ParseSize(vn)
	if !isSize && vn != "cloudinit" {
		// An existing volume: parse_volname's content type.
		r, err := storage.ParseVolname(st, f)
		if err != nil {
			return err
		}
		if r.Type != "images" && r.Type != "iso" {
			return &ParamError{Param: key, Msg: "content type needs to be 'images' or 'iso'"}
		}
		if r.Type == "iso" && !d.CDROM() {
			return &ParamError{Param: key, Msg: "explicit 'media=cdrom' is required for iso images"}
		}
	}
	if (isSize || vn == "cloudinit") && !st.HasContent("images") && !d.CDROM() {
		return fmt.Errorf("storage '%s' does not support content type 'images'", store) // reconstruction
	}
	return nil
}

// EFIDiskSize is what create_efidisk (src/PVE/QemuServer/OVMF.pm) records
// for an EFI vars disk on a storage of type storageType: the OVMF vars
// image copied in, sized by volume_size_info. Reconstruction: the image
// sizes are those of pve-edk2-firmware's OVMF_VARS_4M.fd (528 KiB) and
// OVMF_VARS.fd (128 KiB, efitype 2m, the default); LVM volumes are whole
// 4 MiB extents (LVM's default extent size); the ms-cert key PVE 9 adds
// with pre-enrolled keys is not simulated.
func EFIDiskSize(storageType, efitype string) int64 {
	size := int64(128 << 10)
	if efitype == "4m" {
		size = 528 << 10
	}
	if storageType == "lvm" || storageType == "lvmthin" {
		const extent = 4 << 20
		size = (size + extent - 1) / extent * extent
	}
	return size
}
