package qemu

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi/storages"
)

// AssignedAtClone stands for a value PVE draws when the clone runs (a NIC's MAC,
// the SMBIOS UUID, the VM generation id): check mode cannot know it, and
// says so instead of guessing.
const AssignedAtClone = "(assigned at clone)"

// AssignedAtCreation stands for a value PVE draws when it creates a guest
// (a NIC's MAC, the SMBIOS UUID, the VM generation id).
const AssignedAtCreation = "(assigned at creation)"

// CloneOpts are the clone call's parameters the prediction depends on.
type CloneOpts struct {
	NewID       int
	Name        string
	Description string
	Storage     string // "" = each disk's own
	Format      string
	Full        bool
}

// volatileKeys are dropped by clone_vm from the new config (API2/Qemu.pm
// clone_vm: snapshot keys, the running machine/CPU, unused volumes, and
// `template`); `lock` and `digest` are not config a clone copies either.
var volatileKeys = []string{"parent", "snaptime", "vmstate", "runningcpu", "runningmachine", "running-nets-host-mtu", "template", "lock", "digest"}

// PredictClone builds the new VM's config as qemu-server's clone_vm does
// (API2/Qemu.pm clone_vm, $load_and_check and the worker): the source's
// keys minus volatile ones and unusedN; every netN with a new MAC; a new
// SMBIOS UUID and vmgenid; the name (or Copy-of-VM-<name>); the
// description when given; each volume cloned in sorted key order (clone_vm
// `foreach my $opt (sort keys %$drives)`) — full copies named by
// find_free_diskname (vm-<newid>-disk-<n>, the first free n per storage),
// linked ones under their base volume, the cloud-init drive and TPM state
// always copied (vm-<newid>-cloudinit). A CD-ROM keeps its ISO.
//
// Reconstruction: the format of a full copy on a file storage follows
// resolve_dst_disk_format as read (the given format, else the source's on
// the same storage, else the target storage's default, raw). Volume
// numbers count the volumes newid already owns on each storage (orphans
// included: DiskNames).
func PredictClone(src Config, srcID int, o CloneOpts, stores map[string]storages.Info, names *DiskNames) (Config, error) {
	out := Config{Values: map[string]string{}}
	for _, k := range slices.Sorted(maps.Keys(src.Values)) {
		v := src.Values[k]
		switch {
		case slices.Contains(volatileKeys, k) || IsUnused(k):
			continue
		case IsNet(k):
			n, err := ParseNet(k, v)
			if err != nil {
				return Config{}, fmt.Errorf("template %d: %w", srcID, err)
			}
			n.MAC = AssignedAtClone
			s, err := n.Render()
			if err != nil {
				return Config{}, err
			}
			out.Values[k] = s
		case IsDisk(k):
			d, err := ParseDrive(k, v)
			if err != nil {
				return Config{}, fmt.Errorf("template %d: %w", srcID, err)
			}
			store, volname, ok := strings.Cut(d.File, ":")
			if !ok || (d.IsCDROM() && !d.IsCloudInit()) {
				out.Values[k] = v
				continue
			}
			dst := store
			if o.Storage != "" {
				dst = o.Storage
			}
			st, known := stores[dst]
			if !known {
				return Config{}, fmt.Errorf("storage '%s' does not exist", dst)
			}
			d.File = dst + ":" + cloneVolName(k, d, store, dst, volname, st, o, names)
			if !d.IsCloudInit() && d.Format != "" && o.Format != "" {
				d.Format = o.Format
			}
			s, err := d.Render()
			if err != nil {
				return Config{}, err
			}
			out.Values[k] = s
		default:
			out.Values[k] = v
		}
	}
	out.Values["smbios1"] = newSMBIOS(src.Values["smbios1"])
	if src.Values["vmgenid"] != "" {
		out.Values["vmgenid"] = AssignedAtClone
	}
	switch {
	case o.Name != "":
		out.Values["name"] = o.Name
	case src.Values["name"] != "":
		out.Values["name"] = "Copy-of-VM-" + src.Values["name"]
	default:
		out.Values["name"] = "Copy-of-VM-" + strconv.Itoa(srcID)
	}
	if o.Description != "" {
		out.Values["description"] = o.Description
	}
	return out, nil
}

func cloneVolName(key string, d Drive, srcStore, dst, volname string, st storages.Info, o CloneOpts, names *DiskNames) string {
	if d.IsCloudInit() {
		return CloudInitVolName(o.NewID, st, "")
	}
	linked := !o.Full && key != "tpmstate0"
	if linked {
		// clone_image: find_free_diskname for the new VMID (qcow2 on a file
		// storage), under the base volume.
		if st.File() {
			return volname + "/" + names.Next(dst, "qcow2")
		}
		return volname + "/" + names.Next(dst, "")
	}
	format := o.Format
	if format == "" && srcStore == dst {
		format = strings.TrimPrefix(path.Ext(volname), ".")
	}
	return names.Next(dst, format)
}

// newSMBIOS keeps the SMBIOS settings and marks the UUID as new (clone_vm
// always draws one).
func newSMBIOS(v string) string {
	parts := []string{"uuid=" + AssignedAtClone}
	for _, p := range strings.Split(v, ",") {
		if p != "" && !strings.HasPrefix(p, "uuid=") {
			parts = append(parts, p)
		}
	}
	slices.Sort(parts[1:])
	return strings.Join(parts, ",")
}

// PredictCreate is the config qemu-server writes for a create call
// (API2/Qemu.pm create_vm): each storage:GiB allocated as
// find_free_diskname names it (DiskNames: orphan volumes of the VMID
// counted), in sorted key order (create_disks walks the drives with
// $foreach_volume_with_alloc, `sort keys`), the size recorded and the
// format key dropped; a NIC without MAC gets one; boot and smbios1 filled
// in.
// Reconstruction: boot defaults to the legacy "cdn" order (CD-ROMs,
// disks, the first NIC); vmgenid is added by PVE on create.
func PredictCreate(cfg map[string]string, names *DiskNames, isoSizes map[string]int64) Config {
	out := Config{Values: map[string]string{}}
	var diskKeys []string
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		val := cfg[k]
		switch {
		case IsNet(k):
			n, err := ParseNet(k, val)
			if err == nil && n.MAC == "" {
				n.MAC = AssignedAtCreation
				val, _ = n.Render()
			}
		case IsDisk(k):
			d, err := ParseDrive(k, val)
			if err != nil {
				break
			}
			if a, ok := Allocated(k, val, names); ok {
				val = a
				if ad, err := ParseDrive(k, a); err == nil {
					d = ad // a cloud-init drive becomes a CD-ROM (media=cdrom)
				}
			} else if n, ok := isoSizes[d.File]; ok && d.IsCDROM() && n > 0 {
				d.Size = n // create_disks records volume_size_info of an existing volume
				val, _ = d.Render()
			}
			if !d.IsCDROM() && k != "efidisk0" && k != "tpmstate0" {
				diskKeys = append(diskKeys, k)
			}
		}
		out.Values[k] = val
	}
	if _, ok := out.Values["boot"]; !ok {
		// The legacy "cdn" default as an order: CD-ROMs, disks, the first NIC.
		var cds, nets []string
		for _, k := range slices.Sorted(maps.Keys(out.Values)) {
			if d, err := ParseDrive(k, out.Values[k]); IsDisk(k) && err == nil && d.IsCDROM() && !d.IsCloudInit() {
				cds = append(cds, k)
			}
			if IsNet(k) {
				nets = append(nets, k)
			}
		}
		order := append(cds, diskKeys...)
		if len(nets) > 0 {
			order = append(order, nets[0])
		}
		out.Values["boot"] = "order=" + strings.Join(order, ";")
	}
	out.Values["meta"] = "creation-qemu=" + AssignedAtCreation + ",ctime=" + AssignedAtCreation // new_meta_info_string
	out.Values["smbios1"] = "uuid=" + AssignedAtCreation
	out.Values["vmgenid"] = AssignedAtCreation
	return out
}
