package pvesim

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi/storagetype"
)

// One volume of a storage, as pve-storage's PVE/API2/Storage/Content.pm
// serves /nodes/{node}/storage/{storage}/content/{volume} (the {volume}
// segment takes the rest of the path, slashes included: pveschema's
// fragmentMounts): GET (info: path, size, used, format, volume_size_info),
// PUT (updateattributes: notes, protected), DELETE (an imgdel task running
// vdisk_free), and POST on the list (create: vdisk_alloc). Guest images are
// the simulator's volumes (volumes.go); file volumes (iso, vztmpl,
// snippets, backup, import) are what Config.StorageContent lists on the
// node, removed through Config.StorageRemove. POST {volume} (copy, "This is
// experimental code - do not use") is not simulated.

// volRef is a volume ID resolved against the request ($real_volume_id).
type volRef struct {
	volid, store, volname string
	st                    *Storage
	vtype                 string // images, rootdir, iso, vztmpl, backup, snippets, import
	owner                 int
}

// realVolumeID is Content.pm $real_volume_id: "store:name", or a bare name
// on the URL's storage; a volume ID naming another storage is refused.
func realVolumeID(storage, volume string) (string, error) {
	if strings.Contains(volume, ":") {
		sid, _, _ := strings.Cut(volume, ":")
		if sid == "" {
			return "", errParams(map[string]string{"volume": fmt.Sprintf("unable to parse volume ID '%s'", volume)})
		}
		if storage != "" && sid != storage {
			return "", errParams(map[string]string{"volume": fmt.Sprintf("storage ID mismatch (%s != %s)", sid, storage)})
		}
		return volume, nil
	}
	if storage == "" {
		return "", errParams(map[string]string{"volume": "no storage specified - incomplete volume ID"})
	}
	return storage + ":" + volume, nil
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

// parseVolRef is PVE::Storage::parse_volname for the simulated plugins.
func (s *Sim) parseVolRef(node, volid string) (*volRef, error) {
	store, vn, _ := strings.Cut(volid, ":")
	st := s.dbOf(node).Storage[store]
	if st == nil {
		return nil, fmt.Errorf("storage '%s' does not exist", store)
	}
	r := &volRef{volid: volid, store: store, volname: vn, st: st}
	if m := fileVolRe.FindStringSubmatch(vn); m != nil && fileStorage(st) {
		r.vtype = m[1]
		if d := vzdumpNameRe.FindStringSubmatch(m[2]); r.vtype == "backup" && d != nil {
			r.owner, _ = strconv.Atoi(d[1]) // parse_volname: a vzdump backup's owner
		}
		return r, nil
	}
	if m := imageVolRe.FindStringSubmatch(vn); m != nil && (fileStorage(st) == (m[1] != "")) {
		r.vtype = "images"
		r.owner, _ = strconv.Atoi(m[3])
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

// volumePath is the plugin's path(): the directory layout of
// Plugin.pm ($vtype_subdirs, images/<vmid>/), /dev/<vg>/<lv> on LVM,
// /dev/zvol/<pool>/<name> and <mountpoint>/<name> for ZFS subvols.
func volumePath(r *volRef, format string) string {
	switch r.st.Type {
	case "lvmthin", "lvm":
		return "/dev/" + r.st.opt("vgname") + "/" + path.Base(r.volname)
	case "zfspool":
		if format == "subvol" {
			mp := r.st.opt("mountpoint")
			if mp == "" {
				mp = "/" + r.st.opt("pool")
			}
			return mp + "/" + path.Base(r.volname)
		}
		return "/dev/zvol/" + r.st.opt("pool") + "/" + path.Base(r.volname)
	}
	base := r.st.opt("path")
	if storagetype.Of(r.st.Type).DefaultPath && base == "" {
		base = "/mnt/pve/" + r.st.ID
	}
	sub := map[string]string{"images": "images", "rootdir": "private", "iso": "template/iso", "vztmpl": "template/cache",
		"backup": "dump", "snippets": "snippets", "import": "import"}[r.vtype]
	if r.vtype == "images" {
		return base + "/images/" + r.volname
	}
	return base + "/" + sub + "/" + path.Base(r.volname)
}

// fileVolumeLocked finds a file volume in what the node's storage lists.
func (s *Sim) fileVolumeLocked(node string, st *Storage, volid string) (*Volume, error) {
	if s.cfg.StorageContent == nil {
		return nil, nil
	}
	vols, err := s.cfg.StorageContent(node, st.info())
	if err != nil {
		return nil, err
	}
	for i := range vols {
		if vols[i].VolID == volid {
			return &vols[i], nil
		}
	}
	return nil, nil
}

// volumeExistsLocked tells whether a volume is on its storage as node sees
// it: a guest image in the simulator, a file in the node's listing.
func (s *Sim) volumeExistsLocked(node, volid string) (bool, error) {
	r, err := s.parseVolRef(node, volid)
	if err != nil {
		return false, err
	}
	if r.vtype == "images" || r.vtype == "rootdir" {
		_, _, err := s.volumeLocked(node, volid)
		return err == nil, nil
	}
	v, err := s.fileVolumeLocked(node, r.st, volid)
	return v != nil, err
}

// checkVolumeAccess is PVE::Storage::check_volume_access for a caller
// without a VM context: Datastore.Allocate, else read access for templates
// and ISOs, else VM.Config.Disk on the owner for images.
func checkVolumeAccess(db *ConfigDB, who *principal, r *volRef) error {
	if who == nil || hasPriv(db, who, "/storage/"+r.store, []string{"Datastore.Allocate"}, false) {
		return nil
	}
	switch {
	case r.vtype == "iso" || r.vtype == "vztmpl" || r.vtype == "import":
		if !hasPriv(db, who, "/storage/"+r.store, []string{"Datastore.AllocateSpace", "Datastore.Audit"}, true) {
			return errPerm(fmt.Sprintf("/storage/%s, Datastore.AllocateSpace|Datastore.Audit", r.store))
		}
	case r.vtype == "backup" && r.owner > 0:
		if !hasPriv(db, who, "/storage/"+r.store, []string{"Datastore.AllocateSpace"}, false) {
			return errPerm(fmt.Sprintf("/storage/%s, Datastore.AllocateSpace", r.store))
		}
		if !hasPriv(db, who, fmt.Sprintf("/vms/%d", r.owner), []string{"VM.Backup"}, false) {
			return errPerm(fmt.Sprintf("/vms/%d, VM.Backup", r.owner))
		}
	case r.vtype == "images" && r.owner > 0:
		if !hasPriv(db, who, "/storage/"+r.store, []string{"Datastore.Audit"}, false) {
			return errPerm(fmt.Sprintf("/storage/%s, Datastore.Audit", r.store))
		}
		if !hasPriv(db, who, fmt.Sprintf("/vms/%d", r.owner), []string{"VM.Config.Disk"}, false) {
			return errPerm(fmt.Sprintf("/vms/%d, VM.Config.Disk", r.owner))
		}
	default:
		return fmt.Errorf("missing privileges to access %s", r.volid)
	}
	return nil
}

// contentVolume resolves the request's volume, checks the caller may see it
// and that the storage is usable on the node.
func (s *Sim) contentVolume(rc *reqCtx) (*volRef, error) {
	volid, err := realVolumeID(rc.str("storage"), rc.str("volume"))
	if err != nil {
		return nil, err
	}
	r, err := s.parseVolRef(rc.node, volid)
	if err != nil {
		return nil, err
	}
	if err := checkVolumeAccess(rc.db(), rc.who, r); err != nil {
		return nil, err
	}
	return r, nil
}

// GET …/content/{volume}: info. A guest disk's format is the volume's
// (qemu-server writes no format= into the drive unless asked, so clients
// such as bpg's provider read it here).
func (s *Sim) getStorageVolume(rc *reqCtx) (any, error) {
	r, err := s.contentVolume(rc)
	if err != nil {
		return nil, err
	}
	if !storageOnNode(r.st, rc.node) {
		return nil, fmt.Errorf("storage '%s' is not available on node '%s'", r.store, rc.node)
	}
	if r.vtype == "images" || r.vtype == "rootdir" {
		v, _, err := s.volumeLocked(rc.node, r.volid)
		if err != nil {
			return nil, missingVolumeErr(r)
		}
		if v.Size == 0 && v.Format != "subvol" {
			return nil, fmt.Errorf("volume '%s' has size zero", r.volid)
		}
		used := v.Size // reconstruction: thin storages report less; nothing here writes data
		if v.Format == "subvol" || r.st.Type == "lvmthin" || r.st.Type == "lvm" {
			used = 0
		}
		return map[string]any{"path": volumePath(r, v.Format), "size": v.Size, "used": used, "format": v.Format}, nil
	}
	f, err := s.fileVolumeLocked(rc.node, r.st, r.volid)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, missingVolumeErr(r)
	}
	if f.Size == 0 {
		return nil, fmt.Errorf("volume '%s' has size zero", r.volid)
	}
	// parse_volname gives these types the format 'raw', which qemu-img info
	// confirms for an ISO or a text file.
	return map[string]any{"path": volumePath(r, ""), "size": f.Size, "used": f.Size, "format": "raw"}, nil
}

// missingVolumeErr is volume_size_info failing on a missing volume: a file
// cannot be stat'ed (file_size_info warns and returns no format); zfs and
// lvs fail (reconstruction of their messages).
func missingVolumeErr(r *volRef) error {
	switch r.st.Type {
	case "zfspool":
		return fmt.Errorf("zfs error: cannot open '%s': dataset does not exist", zfsDataset(r.st, r.volname))
	case "lvmthin", "lvm":
		return fmt.Errorf("command '/sbin/lvs --separator : --noheadings --units b --unbuffered --nosuffix --options lv_size %s' failed: exit code 5", volumePath(r, "raw"))
	}
	return fmt.Errorf("volume_size_info on '%s' failed - no format", r.volid)
}

// PUT …/content/{volume}: notes and protected exist for backups only
// (Plugin.pm update_volume_attribute / update_volume_notes). The lab
// keeps no notes or protection for a backup file (Lab.PutCTBackup's are
// plain files): not simulated, every attribute is refused as the plugins
// refuse it for other volumes.
func (s *Sim) putStorageVolume(rc *reqCtx) (any, error) {
	r, err := s.contentVolume(rc)
	if err != nil {
		return nil, err
	}
	for _, attr := range []string{"notes", "protected"} {
		if !rc.has(attr) {
			continue
		}
		if attr == "notes" && r.vtype != "backup" {
			return nil, fmt.Errorf("volume notes are not supported for %s", pluginClass(r.st.Type))
		}
		return nil, fmt.Errorf("attribute '%s' is not supported for storage type '%s'", attr, r.st.Type)
	}
	return nil, nil
}

// pluginClass is the Perl class a storage type's plugin is.
func pluginClass(typ string) string {
	if t, ok := storagetype.Lookup(typ); ok {
		return "PVE::Storage::" + t.Plugin
	}
	return ""
}

// DELETE …/content/{volume}: an imgdel task (id "<owner>@<storage>") that
// runs vdisk_free and prints "Removed volume '<volid>'". Nothing checks
// whether a guest still uses the volume — as in PVE.
func (s *Sim) deleteStorageVolume(rc *reqCtx) (any, error) {
	volid, err := realVolumeID(rc.str("storage"), rc.str("volume"))
	if err != nil {
		return nil, err
	}
	r, err := s.parseVolRef(rc.node, volid)
	if err != nil {
		return nil, err
	}
	db := rc.db()
	if rc.who != nil && !hasPriv(db, rc.who, "/storage/"+r.store, []string{"Datastore.Allocate"}, false) {
		return nil, errPerm(fmt.Sprintf("/storage/%s, Datastore.Allocate", r.store))
	}
	id := r.store
	if r.owner > 0 {
		id = fmt.Sprintf("%d@%s", r.owner, r.store)
	}
	node := rc.node
	upid := s.startTaskLocked(rc, node, "imgdel", id, func(t *taskRun) string {
		if !s.sleep(s.cfg.dur(s.cfg.TaskDuration, DefaultTaskDuration)) {
			return "unexpected status"
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if r.vtype == "images" || r.vtype == "rootdir" {
			if err := s.freeVolumeLocked(node, volid); err != nil {
				return err.Error()
			}
		} else {
			f, err := s.fileVolumeLocked(node, r.st, volid)
			if err != nil {
				return err.Error()
			}
			if f == nil {
				// Plugin.pm free_image: unlink of a missing file (reconstruction).
				return fmt.Sprintf("unlink '%s' failed - No such file or directory", volumePath(r, ""))
			}
			if s.cfg.StorageRemove == nil {
				return "removing file volumes is not simulated without Config.StorageRemove"
			}
			if err := s.cfg.StorageRemove(node, r.st.info(), r.volname); err != nil {
				return err.Error()
			}
		}
		t.logf0("Removed volume '%s'", volid)
		s.saveLocked()
		return ""
	})
	// With `delay` PVE waits up to that long and answers null when the task
	// ended well; the lab always answers the UPID (reconstruction: the
	// schema's optional string lets a client expect both).
	return upid, nil
}

// sizeKiB parses Content.pm create's size: KiB, or M/G.
func sizeKiB(s string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimRight(s, "MG"), 10, 64)
	if err != nil {
		return 0, false
	}
	switch {
	case strings.HasSuffix(s, "G"):
		return n * 1024 * 1024, true
	case strings.HasSuffix(s, "M"):
		return n * 1024, true
	}
	return n, true
}

var allocFormatRe = regexp.MustCompile(`\.(raw|qcow2|vmdk)$`)

// POST …/content: allocate a disk image (vdisk_alloc with the given name,
// which must be vm-<vmid>-…; the format comes from the name's extension).
func (s *Sim) postStorageContent(rc *reqCtx) (any, error) {
	db := rc.db()
	id, name, vmid := rc.str("storage"), rc.str("filename"), rc.vmid()
	kb, ok := sizeKiB(rc.str("size"))
	if !ok {
		return nil, errParams(map[string]string{"size": fmt.Sprintf("unable to parse size '%s'", rc.str("size"))})
	}
	format := rc.str("format")
	if m := allocFormatRe.FindStringSubmatch(name); m != nil {
		if format != "" && format != m[1] {
			return nil, errParams(map[string]string{"format": fmt.Sprintf("different storage formats (%s != %s)", format, m[1])})
		}
		format = m[1]
	}
	st := db.Storage[id]
	if st == nil {
		return nil, fmt.Errorf("storage '%s' does not exist", id)
	}
	base := strings.TrimSuffix(name, "."+format)
	if !strings.HasPrefix(base, fmt.Sprintf("vm-%d-", vmid)) {
		return nil, fmt.Errorf("illegal name '%s' - should be 'vm-%d-*'", name, vmid)
	}
	if format == "" {
		format = defaultFormat(st)
	}
	volid := st.ID + ":" + volName(st, vmid, base, format)
	if _, exists := s.volumesFor(rc.node, st)[volid]; exists {
		return nil, fmt.Errorf("disk image '%s' already exists", volumePath(&volRef{volid: volid, volname: strings.TrimPrefix(volid, st.ID+":"), st: st, vtype: "images"}, format)) // reconstruction
	}
	size := kb * 1024
	if err := s.zfsCreateVolume(rc.node, st, base, size); err != nil {
		return nil, err
	}
	s.volumesFor(rc.node, st)[volid] = &GuestVolume{Size: size, Format: format}
	s.saveLocked()
	return volid, nil
}
