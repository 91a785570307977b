package lxcsim

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guests"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecontainer"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/volumes"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/vzdump"
)

// Restoring a container from a vzdump backup, as pve-container's
// PVE::API2::LXC create_vm does with restore=1 (src/PVE/API2/LXC.pm,
// src/PVE/LXC/Create.pm recover_config / restore_configuration /
// sanitize_and_merge_config), and pve-manager's
// GET /nodes/{node}/vzdump/extractconfig (PVE/API2/VZDump.pm →
// PVE::Storage::extract_vzdump_config). The archive's config is its
// ./etc/vzdump/pct.conf (vzdumparchive.go), read on the node through
// Config.BackupArchive.
//
// What create_vm does, in order: an existing VMID is refused (cluster-wide
// check_vmid_unused) unless restore and force and the CT's config is on
// this node; then it must not run and must not be protected. The archive
// must be a backup volume the caller may read (check_volume_access with
// content type backup). In the vzrestore task: the archive's config is
// recovered; without rootfs/mpN in the request ("storage only mode") the
// archive's volumes are re-created on `storage` (default local) with their
// sizes, else only the request's volumes are made; with force the old
// CT's volumes are freed after the new ones exist; the archive's keys
// fill in what the request does not give (never rootfs, mpN, unusedN,
// unprivileged, template, parent, digest; with unique each NIC gets a new
// MAC); unprivileged is the request's or the archive's; hostname, memory
// and swap get create_vm's defaults (CT<vmid>, 512, 512).
//
// Reconstructions / not simulated: the archive's files (containers have no
// contents here), its pct.fw firewall config, raw lxc.* keys (root's
// restore copies them; the lab's config parser keeps none), bind and device
// mount points (refused), restoring a template backup (refused), PBS and
// backup-provider storages, restore from a pipe ('-'), bwlimit, the
// in-task permission checks (perm.go). The rules on option values
// (storage-only mode, the archive's mount points, the merge) are
// pvesim/pvecontainer's restore.go.

// archiveVolRef is check_volume_access for create_vm's ostemplate: the
// volume's content type must be the one create or restore needs, and the
// caller may read it (the CT's own VMID owns its backups).
func (s *backend) archiveVolRef(rc *core.Req, vmid int, volid, ctype string) (*storage.VolRef, error) {
	if !strings.Contains(volid, ":") {
		if rc.Who != nil && rc.Who.Full() != "root@pam" {
			return nil, pvecommon.Die("Only root can pass arbitrary filesystem paths.")
		}
		return nil, nil // a path: the lab's restore refuses it (not simulated)
	}
	r, err := s.ParseVolRef(rc.Node, volid)
	if err != nil {
		return nil, pvecommon.Die("%v", err)
	}
	if r.Type != ctype {
		return nil, pvecommon.Die("unable to use volume %s - content type needs to be '%s'", volid, ctype)
	}
	if r.Owner > 0 && r.Owner == vmid {
		return r, nil // "we are owner - allow access"
	}
	if err := volumes.CheckVolumeAccess(rc.DB(), rc.Who, r); err != nil {
		return nil, err
	}
	return r, nil
}

// backupConfigLocked is extract_vzdump_config of a container backup on
// node: the text of its pct.conf.
func (s *backend) backupConfigLocked(node string, r *storage.VolRef) (string, error) {
	missing := pvecommon.Die("ERROR: file '%s' does not exist", r.Path(""))
	if s.Cfg.StorageContent != nil {
		if ok, err := s.VolumeExistsLocked(node, r.VolID); err != nil || !ok {
			return "", missing
		}
	}
	if s.Cfg.BackupArchive == nil {
		return "", missing
	}
	data, err := s.Cfg.BackupArchive(node, core.StorageInfoOf(r.Section), r.Name)
	if err != nil {
		return "", missing
	}
	name := strings.TrimPrefix(r.Name, "backup/")
	if !regexp.MustCompile(`^vzdump-(lxc|openvz)-`).MatchString(name) {
		return "", pvecommon.Die("cannot determine backup guest type for backup archive '%s'", r.VolID)
	}
	raw, err := vzdump.ExtractConfig(name, data)
	if err != nil {
		return "", pvecommon.Die("%v", err)
	}
	return raw, nil
}

// GET /nodes/{node}/vzdump/extractconfig: check_volume_access (backup),
// VM.Backup on the owner, the archive's config as one string.
func (s *backend) getVzdumpExtractConfig(rc *core.Req) (any, error) {
	volid := rc.Str("volume")
	r, err := s.archiveVolRef(rc, 0, volid, "backup")
	if err != nil {
		return nil, err
	}
	if r.Owner > 0 && rc.Who != nil && !core.HasPriv(rc.DB(), rc.Who, fmt.Sprintf("/vms/%d", r.Owner), []string{"VM.Backup"}, false) {
		return nil, core.ErrPerm(fmt.Sprintf("/vms/%d, VM.Backup", r.Owner))
	}
	return s.backupConfigLocked(rc.Node, r)
}

// postLxcRestore is POST /nodes/{node}/lxc with restore=1.
func (s *backend) postLxcRestore(rc *core.Req) (any, error) {
	db := rc.DB()
	vmid, node := rc.VMID(), rc.Node
	if pool := rc.Str("pool"); pool != "" && db.Pools[pool] == nil {
		return nil, core.ErrPerm(fmt.Sprintf("pool '%s' does not exist", pool))
	}
	confPath := guests.GuestConfPath(node, "lxc", vmid)
	_, exists := s.ReadEtcPve(db, confPath)
	force := rc.Bool("force")
	if !(exists && force) {
		if e, ok := s.FindVMLocked(db, vmid); ok {
			kind := "VM"
			if e.Kind == "lxc" {
				kind = "CT"
			}
			return nil, pvecommon.Die("%s %d already exists on node '%s'", kind, vmid, e.Node)
		}
	} else {
		if s.RunningLocked(node, vmid) {
			return nil, pvecommon.Die("can't overwrite running container")
		}
		old, err := s.LoadCTConfLocked(db, node, vmid)
		if err != nil {
			return nil, err
		}
		if old.Keys["protection"] == "1" {
			return nil, pvecommon.Die("unable to restore CT %d - protection mode enabled", vmid)
		}
	}
	// create_vm's permission checks (perm.go): VM.Allocate, or VM.Backup
	// to restore over an existing CT; the given options with the request's
	// unprivileged (undefined is privileged to this check).
	if err := guests.CheckCreateAllocate(rc, exists && force); err != nil {
		return nil, err
	}
	params := map[string]string{}
	for k, v := range rc.Params {
		if !slices.Contains(ctCreateOnly, k) && k != "unprivileged" {
			params[k] = pvecommon.ParamString(v)
		}
	}
	if err := s.checkCTModifyConfigPerm(db, rc.Who, node, vmid, rc.Str("pool"), nil, params, nil, rc.Has("unprivileged") && rc.Bool("unprivileged")); err != nil {
		return nil, err
	}
	archive := rc.Str("ostemplate")
	ref, err := s.archiveVolRef(rc, vmid, archive, "backup")
	if err != nil {
		return nil, err
	}
	if ref == nil {
		return nil, core.ErrStatus(501, "restoring from a file path or a pipe is not simulated by the lab")
	}
	keys := map[string]string{}
	for k, v := range rc.Params {
		if !slices.Contains(ctCreateOnly, k) {
			keys[k] = pvecommon.ParamString(v)
		}
	}
	// On restore 'unprivileged' has no default: unset, the archive's.
	delete(keys, "unprivileged")
	unprivGiven := rc.Has("unprivileged")
	if unprivGiven && rc.Bool("unprivileged") {
		keys["unprivileged"] = "1"
	}
	storageOnly := pvecontainer.RestoreStorageOnly(keys)
	if err := s.ctCreateVolumes(rc, keys); err != nil {
		return nil, err
	}
	if storageOnly {
		delete(keys, "rootfs") // recovered from the archive in the task
	}
	for k, v := range keys {
		if qemuserver.IsNetKey(k) {
			keys[k] = pvecontainer.NormaliseNet(v, guests.RandomMAC)
		}
	}
	if exists && force {
		old, _ := s.LoadCTConfLocked(db, node, vmid)
		if err := old.CheckLock("CT"); err != nil {
			return nil, pvecommon.Die("unable to restore CT %d - %v", vmid, err)
		}
		old.Keys["lock"] = "create" // create_and_lock_config($vmid, $force) keeps the old config
		s.WriteCTConfLocked(db, node, vmid, old)
	} else {
		s.WriteCTConfLocked(db, node, vmid, &guestconf.Conf{Keys: map[string]string{"lock": "create"}})
	}
	s.SaveLocked()
	storage := rc.Str("storage")
	if storage == "" {
		storage = "local"
	}
	unique, start, pool := rc.Bool("unique"), rc.Bool("start"), rc.Str("pool")
	restricted := rc.Who == nil || rc.Who.Full() != "root@pam"
	return s.StartTaskLocked(rc, node, "vzrestore", strconv.Itoa(vmid), func(t *core.TaskRun) string {
		if !s.Sleep(s.Cfg.Dur(s.Cfg.TaskDuration, core.DefaultTaskDuration)) {
			return "unexpected status"
		}
		s.Mu.Lock()
		defer s.Mu.Unlock()
		emsg := fmt.Sprintf("unable to restore CT %d -", vmid)
		old, _ := s.LoadCTConfLocked(db, node, vmid)
		// Until the volumes are made an overwritten CT only loses its
		// create lock; after that its config goes ($destroy_config_on_error).
		changed := false
		fail := func(msg string, created []string) string {
			for _, v := range created {
				s.FreeVolumeLocked(node, v)
			}
			if exists && !changed && old != nil {
				delete(old.Keys, "lock")
				s.WriteCTConfLocked(db, node, vmid, old)
			} else {
				s.RemoveEtcPve(db, confPath)
			}
			s.SaveLocked()
			return emsg + " " + msg
		}
		if s.RunningLocked(node, vmid) {
			return fail("can't overwrite running container", nil)
		}
		t.Task.Log = append(t.Task.Log, fmt.Sprintf("recovering backed-up configuration from '%s'", archive))
		raw, err := s.backupConfigLocked(node, ref)
		if err != nil {
			return fail(err.Error(), nil)
		}
		orig := guestconf.Parse(raw)
		if orig.Keys["template"] == "1" {
			return fail("restoring a template's backup is not simulated by the lab", nil)
		}
		if !unprivGiven && orig.Keys["unprivileged"] == "1" {
			keys["unprivileged"] = "1"
		}
		if storageOnly {
			mps, err := pvecontainer.RestoreMountPoints(orig.Keys, storage)
			if err != nil {
				return fail(err.Error(), nil)
			}
			maps.Copy(keys, mps)
		}
		changed = true
		var created []string
		for _, k := range pvecontainer.VolumeKeys(keys) {
			if !pvecontainer.IsVolumeKey(k) {
				continue
			}
			nv, err := s.createCtVolume(node, vmid, keys[k], keys["unprivileged"] == "1")
			if err != nil {
				return fail(err.Error(), created)
			}
			keys[k] = nv
			created = append(created, pvecontainer.ParseMountPoint(nv).Volume())
		}
		if old != nil && len(old.Keys) > 1 { // destroy_lxc_container: the overwritten CT's volumes
			for k, v := range old.Keys {
				if pvecontainer.IsVolumeKey(k) {
					s.FreeVolumeLocked(node, pvecontainer.ParseMountPoint(v).Volume())
				}
			}
		}
		t.Task.Log = append(t.Task.Log, fmt.Sprintf("restoring '%s' now..", archive))
		t.Task.Log = append(t.Task.Log, "merging backed-up and given configuration..")
		conf := &guestconf.Conf{Keys: keys}
		if d, ok := keys["description"]; ok {
			conf.SetDescription(d)
		} else {
			conf.Description = orig.Description
		}
		t.Task.Log = append(t.Task.Log, pvecontainer.MergeRestored(keys, orig.Keys, restricted, unique, guests.RandomMAC)...)
		pvecontainer.CreateDefaults(keys, vmid)
		if keys["arch"] == "" {
			keys["arch"] = "amd64" // reconstruction: vzdump's pct.conf always has it
		}
		if keys["ostype"] == "" {
			keys["ostype"] = "unmanaged" // reconstruction: Setup->new would detect it in the files
		}
		s.WriteCTConfLocked(db, node, vmid, conf)
		if pool != "" && db.Pools[pool] != nil {
			db.Pools[pool].Members = append(db.Pools[pool].Members, fmt.Sprintf("lxc/%d", vmid))
		}
		if start {
			s.SetRunningLocked(node, vmid, true)
		}
		s.SaveLocked()
		return ""
	}), nil
}
