package pveclone

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
	"github.com/gopve/proxmox/modules-src/pveapi/storages"
)

// Assigned stands for a value PVE draws when the clone runs (a NIC's MAC,
// the SMBIOS UUID, the VM generation id): check mode cannot know it, and
// says so instead of guessing.
const Assigned = "(assigned at clone)"

// storageInfo is what the prediction needs of a storage (GET /storage).
type storageInfo = storages.Info

// cloneOpts are the clone call's parameters the prediction depends on.
type cloneOpts struct {
	newid       int
	name        string
	description string
	storage     string // "" = each disk's own
	format      string
	full        bool
}

// volatileKeys are dropped by clone_vm from the new config (API2/Qemu.pm
// clone_vm: snapshot keys, the running machine/CPU, unused volumes, and
// `template`); `lock` and `digest` are not config a clone copies either.
var volatileKeys = []string{"parent", "snaptime", "vmstate", "runningcpu", "runningmachine", "running-nets-host-mtu", "template", "lock", "digest"}

// predictClone builds the new VM's config as qemu-server's clone_vm does
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
// included: diskNames).
func predictClone(src qemu.Config, srcID int, o cloneOpts, stores map[string]storageInfo, names *qemu.DiskNames) (qemu.Config, error) {
	out := qemu.Config{Values: map[string]string{}}
	for _, k := range slices.Sorted(maps.Keys(src.Values)) {
		v := src.Values[k]
		switch {
		case slices.Contains(volatileKeys, k) || qemu.IsUnused(k):
			continue
		case qemu.IsNet(k):
			n, err := qemu.ParseNet(k, v)
			if err != nil {
				return qemu.Config{}, fmt.Errorf("template %d: %w", srcID, err)
			}
			n.MAC = Assigned
			s, err := n.Render()
			if err != nil {
				return qemu.Config{}, err
			}
			out.Values[k] = s
		case qemu.IsDisk(k):
			d, err := qemu.ParseDrive(k, v)
			if err != nil {
				return qemu.Config{}, fmt.Errorf("template %d: %w", srcID, err)
			}
			store, volname, ok := strings.Cut(d.File, ":")
			if !ok || (d.IsCDROM() && !d.IsCloudInit()) {
				out.Values[k] = v
				continue
			}
			dst := store
			if o.storage != "" {
				dst = o.storage
			}
			st, known := stores[dst]
			if !known {
				return qemu.Config{}, fmt.Errorf("storage '%s' does not exist", dst)
			}
			d.File = dst + ":" + cloneVolName(k, d, store, dst, volname, st, o, names)
			if !d.IsCloudInit() && d.Format != "" && o.format != "" {
				d.Format = o.format
			}
			s, err := d.Render()
			if err != nil {
				return qemu.Config{}, err
			}
			out.Values[k] = s
		default:
			out.Values[k] = v
		}
	}
	out.Values["smbios1"] = newSMBIOS(src.Values["smbios1"])
	if src.Values["vmgenid"] != "" {
		out.Values["vmgenid"] = Assigned
	}
	switch {
	case o.name != "":
		out.Values["name"] = o.name
	case src.Values["name"] != "":
		out.Values["name"] = "Copy-of-VM-" + src.Values["name"]
	default:
		out.Values["name"] = "Copy-of-VM-" + strconv.Itoa(srcID)
	}
	if o.description != "" {
		out.Values["description"] = o.description
	}
	return out, nil
}

func cloneVolName(key string, d qemu.Drive, srcStore, dst, volname string, st storageInfo, o cloneOpts, names *qemu.DiskNames) string {
	if d.IsCloudInit() {
		return qemu.CloudInitVolName(o.newid, st, "")
	}
	linked := !o.full && key != "tpmstate0"
	if linked {
		// clone_image: find_free_diskname for the new VMID (qcow2 on a file
		// storage), under the base volume.
		if st.File() {
			return volname + "/" + names.Next(dst, "qcow2")
		}
		return volname + "/" + names.Next(dst, "")
	}
	format := o.format
	if format == "" && srcStore == dst {
		format = strings.TrimPrefix(path.Ext(volname), ".")
	}
	return names.Next(dst, format)
}

// newSMBIOS keeps the SMBIOS settings and marks the UUID as new (clone_vm
// always draws one).
func newSMBIOS(v string) string {
	parts := []string{"uuid=" + Assigned}
	for _, p := range strings.Split(v, ",") {
		if p != "" && !strings.HasPrefix(p, "uuid=") {
			parts = append(parts, p)
		}
	}
	slices.Sort(parts[1:])
	return strings.Join(parts, ",")
}
