package storage

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// VolRef is a volume ID parsed against its storage (parse_volname).
type VolRef struct {
	VolID, Store, Name string
	Section            *Section
	Type               string // images, rootdir, iso, vztmpl, backup, snippets, import
	Owner              int    // the owning VMID; 0: none
}

// fileVolRe is Plugin.pm parse_volname for the non-image content types
// ($vtype_subdirs): iso/<name>.iso|img, vztmpl/<name>.tar*, backup/…,
// snippets/<name>, import/<name>.
var fileVolRe = regexp.MustCompile(`^(iso|vztmpl|backup|snippets|import)/([^/]+)$`)

// vzdumpNameRe is parse_volname's backup owner: vzdump-(openvz|lxc|qemu)-<vmid>-….
var vzdumpNameRe = regexp.MustCompile(`^vzdump-(?:openvz|lxc|qemu)-(\d+)-.+`)

// imageVolRe is the images part of parse_volname: <vmid>/<name> on a
// directory, (base-…/)(vm|base|subvol)-<vmid>-… elsewhere.
var imageVolRe = regexp.MustCompile(`^(?:(\d+)/)?(?:(?:base|vm)-\d+-[^/]+/)?((?:base|vm|subvol)-(\d+)-\S+)$`)

// ParseVolname is PVE::Storage::parse_volname of volid ("store:name") on
// st, its storage, for the simulated plugins.
func ParseVolname(st *Section, volid string) (*VolRef, error) {
	store, vn, _ := strings.Cut(volid, ":")
	r := &VolRef{VolID: volid, Store: store, Name: vn, Section: st}
	if m := fileVolRe.FindStringSubmatch(vn); m != nil && HasPath(st) {
		r.Type = m[1]
		if d := vzdumpNameRe.FindStringSubmatch(m[2]); r.Type == "backup" && d != nil {
			r.Owner, _ = strconv.Atoi(d[1]) // parse_volname: a vzdump backup's owner
		}
		return r, nil
	}
	if m := imageVolRe.FindStringSubmatch(vn); m != nil && (HasPath(st) == (m[1] != "")) {
		r.Type = "images"
		r.Owner, _ = strconv.Atoi(m[3])
		return r, nil
	}
	switch st.Type {
	case "lvmthin", "lvm":
		return nil, fmt.Errorf("unable to parse lvm volume name '%s'", vn)
	case "zfspool":
		return nil, fmt.Errorf("unable to parse zfs volume name '%s'", vn)
	}
	return nil, fmt.Errorf("unable to parse directory volume name '%s'", vn)
}

// contentDirs is Plugin.pm's $vtype_subdirs.
var contentDirs = map[string]string{"images": "images", "rootdir": "private", "iso": "template/iso", "vztmpl": "template/cache",
	"backup": "dump", "snippets": "snippets", "import": "import"}

// Path is the plugin's path(): the directory layout of Plugin.pm
// ($vtype_subdirs, images/<vmid>/), /dev/<vg>/<lv> on LVM,
// /dev/zvol/<pool>/<name> and <mountpoint>/<name> for ZFS subvols.
func (r *VolRef) Path(format string) string {
	st := r.Section
	switch st.Type {
	case "lvmthin", "lvm":
		return "/dev/" + st.Opt("vgname") + "/" + path.Base(r.Name)
	case "zfspool":
		if format == "subvol" {
			mp := st.Opt("mountpoint")
			if mp == "" {
				mp = "/" + st.Opt("pool")
			}
			return mp + "/" + path.Base(r.Name)
		}
		return "/dev/zvol/" + st.Opt("pool") + "/" + path.Base(r.Name)
	}
	if r.Type == "images" {
		return basePath(st) + "/images/" + r.Name
	}
	return basePath(st) + "/" + contentDirs[r.Type] + "/" + path.Base(r.Name)
}

// Missing is volume_size_info failing on a missing volume: a file cannot
// be stat'ed (file_size_info warns and returns no format); zfs and lvs
// fail (reconstruction of their messages).
func (r *VolRef) Missing() error {
	switch r.Section.Type {
	case "zfspool":
		return fmt.Errorf("zfs error: cannot open '%s': dataset does not exist", Dataset(r.Section, r.Name))
	case "lvmthin", "lvm":
		return fmt.Errorf("command '/sbin/lvs --separator : --noheadings --units b --unbuffered --nosuffix --options lv_size %s' failed: exit code 5", r.Path("raw"))
	}
	return fmt.Errorf("volume_size_info on '%s' failed - no format", r.VolID)
}

// Privs tells whether the caller has every privilege of privs on path, or,
// with any, one of them (RPCEnvironment check / check_any).
type Privs func(path string, privs []string, any bool) bool

// CheckVolumeAccess is PVE::Storage::check_volume_access for a caller
// without a VM context: Datastore.Allocate, else read access for templates
// and ISOs, else VM.Config.Disk on the owner for images. A refusal of a
// named privilege is a DeniedError.
func CheckVolumeAccess(has Privs, r *VolRef) error {
	storage := "/storage/" + r.Store
	if has(storage, []string{"Datastore.Allocate"}, false) {
		return nil
	}
	switch {
	case r.Type == "iso" || r.Type == "vztmpl" || r.Type == "import":
		if !has(storage, []string{"Datastore.AllocateSpace", "Datastore.Audit"}, true) {
			return &DeniedError{storage + ", Datastore.AllocateSpace|Datastore.Audit"}
		}
	case r.Type == "backup" && r.Owner > 0:
		if !has(storage, []string{"Datastore.AllocateSpace"}, false) {
			return &DeniedError{storage + ", Datastore.AllocateSpace"}
		}
		if !has(fmt.Sprintf("/vms/%d", r.Owner), []string{"VM.Backup"}, false) {
			return &DeniedError{fmt.Sprintf("/vms/%d, VM.Backup", r.Owner)}
		}
	case r.Type == "images" && r.Owner > 0:
		if !has(storage, []string{"Datastore.Audit"}, false) {
			return &DeniedError{storage + ", Datastore.Audit"}
		}
		if !has(fmt.Sprintf("/vms/%d", r.Owner), []string{"VM.Config.Disk"}, false) {
			return &DeniedError{fmt.Sprintf("/vms/%d, VM.Config.Disk", r.Owner)}
		}
	default:
		return fmt.Errorf("missing privileges to access %s", r.VolID)
	}
	return nil
}

// CheckAttributes is update_volume_attribute / update_volume_notes for the
// attributes a PUT gives (notes, protected): they exist for backups only,
// and the lab keeps neither for a backup file (not simulated), so every
// attribute is refused as the plugins refuse it for other volumes.
func (r *VolRef) CheckAttributes(given func(attr string) bool) error {
	for _, attr := range []string{"notes", "protected"} {
		if !given(attr) {
			continue
		}
		if attr == "notes" && r.Type != "backup" {
			return fmt.Errorf("volume notes are not supported for %s", PluginClass(r.Section.Type))
		}
		return fmt.Errorf("attribute '%s' is not supported for storage type '%s'", attr, r.Section.Type)
	}
	return nil
}
