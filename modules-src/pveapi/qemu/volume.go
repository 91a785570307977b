package qemu

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi/storages"
)

// CutVolume splits a volume ID into its storage and its volume name
// (pve-storage parse_volume_id: storage:volname).
func CutVolume(volid string) (store, volname string, ok bool) {
	for i := 0; i < len(volid); i++ {
		if volid[i] == ':' {
			return volid[:i], volid[i+1:], i > 0
		}
	}
	return "", "", false
}

// unusedVolume reads unusedN's value (the volume, maybe with keys).
func unusedVolume(v string) (string, bool) {
	for i := 0; i < len(v); i++ {
		if v[i] == ',' {
			v = v[:i]
			break
		}
	}
	_, _, ok := CutVolume(v)
	return v, ok
}

// CloudInitVolName is the volume name (after "storage:") qemu-server gives
// a VM's cloud-init drive (API2/Qemu.pm create_disks, the `cloudinit`
// branch; clone_disk alike): always vm-<vmid>-cloudinit, never a free
// number, so a second allocation for the same VMID meets the first
// (pve-storage alloc_image: ZFS "dataset already exists", a file storage
// "disk image '…' already exists"). A storage with a path gets the format
// as suffix (given, else qcow2) in the <vmid>/ directory; LVM with
// snapshot-as-volume-chain gets .qcow2 (its default there); elsewhere raw,
// no suffix.
func CloudInitVolName(vmid int, st storages.Info, format string) string {
	name := fmt.Sprintf("vm-%d-cloudinit", vmid)
	switch {
	case st.File():
		if format == "" {
			format = "qcow2"
		}
		return fmt.Sprintf("%d/%s.%s", vmid, name, format)
	case st.VolumeChain:
		if format == "" || format == "qcow2" {
			return name + ".qcow2"
		}
	}
	return name
}

// CloudInitStore reads a cloud-init drive request, "storage:cloudinit"
// (create_disks: parse_volume_id gives the volume name "cloudinit").
func CloudInitStore(file string) (string, bool) {
	store, volname, ok := strings.Cut(file, ":")
	return store, ok && store != "" && volname == "cloudinit"
}

// A linked clone's volume names its base volume, and through it the
// template: pve-storage's parse_volname reads
// <basevmid>/<base-…>/<vmid>/<name> on file storages (Plugin.pm) and
// base-<basevmid>-disk-N/<name> on lvmthin, zfspool and rbd
// (LvmThinPlugin.pm, ZFSPoolPlugin.pm, RBDPlugin.pm).
var (
	fileLinkedRe = regexp.MustCompile(`^(\d+)/base-\d+-[^/]+/\d+/[^/]+$`)
	thinLinkedRe = regexp.MustCompile(`^base-(\d+)-[^/]+/[^/]+$`)
)

// LinkedBase is the template VMID a volume is a linked clone of, if any.
func LinkedBase(volid string) (int, bool) {
	_, volname, ok := strings.Cut(volid, ":")
	if !ok {
		return 0, false
	}
	m := fileLinkedRe.FindStringSubmatch(volname)
	if m == nil {
		m = thinLinkedRe.FindStringSubmatch(volname)
	}
	if m == nil {
		return 0, false
	}
	id, err := strconv.Atoi(m[1])
	return id, err == nil
}

// LinkedOrigin is the first disk (in key order) of cfg that is a linked
// clone: its key, its volume and the template VMID it links to.
func LinkedOrigin(cfg Config) (key, volid string, base int, ok bool) {
	disks, err := cfg.Disks()
	if err != nil {
		return "", "", 0, false
	}
	for _, k := range slices.Sorted(maps.Keys(disks)) {
		d := disks[k]
		if d.IsCDROM() || d.IsCloudInit() {
			continue
		}
		if id, found := LinkedBase(d.File); found {
			return k, d.File, id, true
		}
	}
	return "", "", 0, false
}

// TemplateConfig is the config qemu-server leaves after the conversion:
// template: 1 and every disk on its base volume (template_create).
func TemplateConfig(cur Config, vmid int) (Config, []string, error) {
	out := Config{Values: maps.Clone(cur.Values)}
	if out.Values == nil {
		out.Values = map[string]string{}
	}
	disks, err := cur.Disks()
	if err != nil {
		return out, nil, fmt.Errorf("VM %d: %w", vmid, err)
	}
	var renamed []string
	for _, k := range slices.Sorted(maps.Keys(disks)) {
		d := disks[k]
		if !Convertible(d) || IsBaseVolume(d.File) {
			continue
		}
		nb := BaseVolume(d.File)
		v := cur.Values[k]
		switch {
		case strings.HasPrefix(v, d.File):
			v = nb + strings.TrimPrefix(v, d.File)
		default:
			v = strings.Replace(v, "file="+d.File, "file="+nb, 1)
		}
		out.Values[k] = v
		renamed = append(renamed, fmt.Sprintf("%s %s", k, nb))
	}
	out.Values["template"] = "1"
	delete(out.Values, "digest")
	return out, renamed, nil
}

// Convertible: template_create skips CD-ROMs (drive_is_cdrom, the
// cloud-init drive included) and what is no storage volume.
func Convertible(d Drive) bool {
	if d.IsCDROM() || d.IsCloudInit() {
		return false
	}
	store, volname, ok := strings.Cut(d.File, ":")
	return ok && store != "" && volname != "" && !strings.HasPrefix(d.File, "/")
}

// BaseVolume is create_base's new volume name: the last part of the
// volume name vm-… → base-… (Plugin.pm, LvmThinPlugin.pm,
// ZFSPoolPlugin.pm, RBDPlugin.pm; a linked clone keeps its base in front).
func BaseVolume(volid string) string {
	store, volname, _ := strings.Cut(volid, ":")
	dir, last := "", volname
	if i := strings.LastIndex(volname, "/"); i >= 0 {
		dir, last = volname[:i+1], volname[i+1:]
	}
	return store + ":" + dir + strings.Replace(last, "vm-", "base-", 1)
}

// IsBaseVolume: the volume is a template's base volume already.
func IsBaseVolume(volid string) bool {
	_, volname, _ := strings.Cut(volid, ":")
	if i := strings.LastIndex(volname, "/"); i >= 0 {
		volname = volname[i+1:]
	}
	return strings.HasPrefix(volname, "base-")
}
