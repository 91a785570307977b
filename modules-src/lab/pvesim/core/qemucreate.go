package core

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

// QEMU guests' creation: POST /nodes/{node}/qemu and the drives it allocates
// (qemu-server's API2/Qemu.pm create_vm, $create_disks).

// vmCreateOptions are the POST /nodes/{node}/qemu parameters that are not
// config keys.
var vmCreateOptions = []string{"node", "vmid", "pool", "start", "storage", "archive", "force", "unique",
	"bwlimit", "live-restore", "import-working-storage", "ha-managed"}

// POST /nodes/{node}/qemu: a qmcreate task; the config exists at once,
// locked "create" (AbstractConfig.pm create_and_lock_config), and gets its
// disks and MACs before the lock goes.
func (s *Sim) postQemuCreate(rc *Req) (any, error) {
	db := rc.DB()
	vmid := rc.VMID()
	if rc.Has("archive") {
		return nil, ErrStatus(501, "restore is not simulated by the lab")
	}
	if rc.Has("sshkeys") {
		if err := qemuserver.CheckSSHKeys(rc.Str("sshkeys")); err != nil {
			return nil, err
		}
	}
	if pool := rc.Str("pool"); pool != "" && db.Pools[pool] == nil {
		return nil, ErrPerm(fmt.Sprintf("pool '%s' does not exist", pool)) // check_pool_exist: raise_perm_exc, 403
	}
	if err := s.etcPveWritableLocked(db, GuestConfPath(rc.Node, "qemu-server", vmid)); err != nil {
		return nil, pvecommon.Die("unable to create VM %d - %v", vmid, err)
	}
	keys := map[string]string{}
	for k, v := range rc.Params {
		if slices.Contains(vmCreateOptions, k) {
			continue
		}
		keys[k] = pvecommon.ParamString(v)
	}
	// create_vm's permission checks (qemuperm.go): the storage parameter,
	// VM.Allocate, then the new disks, the options, the NICs' bridges.
	if st := rc.Str("storage"); st != "" && !IsRootUser(rc.Who) {
		if err := RPCCheck(db, rc.Who, "/storage/"+st, "Datastore.AllocateSpace"); err != nil {
			return nil, err
		}
	}
	// qemu-server 9.1.8 (commit bfdad557): adding the new VM to HA
	// (ha-managed, in PVE 9's schema only) needs Sys.Console on /; 9.1.10
	// (commit 5086f472): start=1 needs VM.PowerMgmt up front, as the worker
	// starts the VM without vm_start's own check. PVE 8's qemu-server
	// (stable-bookworm, 8.4.10) makes neither check.
	if !IsRootUser(rc.Who) && s.Cfg.Version != 8 {
		if rc.Bool("ha-managed") {
			if err := RPCCheck(db, rc.Who, "/", "Sys.Console"); err != nil {
				return nil, err
			}
		}
		if rc.Bool("start") {
			if err := VMCheck(db, rc.Who, vmid, rc.Str("pool"), []string{"VM.PowerMgmt"}, false); err != nil {
				return nil, err
			}
		}
	}
	// Reconstruction of qemu-server src/PVE/API2/Qemu.pm create_vm: its
	// schema says only `user => 'all'`, the handler asks
	// `$rpcenv->check($authuser, "/vms/$vmid", ['VM.Allocate'], 1)`, else
	// the same on /pool/$pool, else (a forced restore over an existing VM,
	// which the lab does not simulate) VM.Backup, else raise_perm_exc().
	if err := CheckCreateAllocate(rc, false); err != nil {
		return nil, err
	}
	if err := checkStorageAccessNew(db, rc.Who, keys, rc.Str("storage")); err != nil {
		return nil, err
	}
	if err := checkVMModifyConfigPerm(db, rc.Who, vmid, rc.Str("pool"), slices.Sorted(maps.Keys(keys))); err != nil {
		return nil, err
	}
	if err := checkVMCreateDevicePerm(db, rc.Who, vmid, rc.Str("pool"), keys); err != nil {
		return nil, err
	}
	if err := checkBridgeAccess(db, rc.Who, keys); err != nil {
		return nil, err
	}
	// sshkeys stay URL-encoded, as the API receives and stores them (K12).
	// Disks are checked before the task starts ($check_drive_param).
	for k, v := range keys {
		if qemuserver.IsDriveKey(k) {
			if err := qmErr(qemuserver.CheckNewDrive(k, v, rc.Node, s.DBOf(rc.Node).Storage)); err != nil {
				return nil, err
			}
		}
	}
	// check_vmid_unused (pve-cluster Cluster.pm) under create_and_lock_config,
	// which create_vm calls after every permission and drive check.
	if e, ok := s.FindVMLocked(db, vmid); ok {
		tname := "VM"
		if e.Kind == "lxc" {
			tname = "CT"
		}
		return nil, fmt.Errorf("unable to create VM %d - %s %d already exists on node '%s'", vmid, tname, vmid, e.Node)
	}
	for k, v := range keys {
		if qemuserver.IsNetKey(k) {
			keys[k] = normaliseNet(v) // add_random_macs
		}
	}
	s.writeQmConfLocked(db, rc.Node, vmid, &guestconf.Conf{Keys: map[string]string{"lock": "create"}})
	s.SaveLocked()
	node, start, pool := rc.Node, rc.Bool("start"), rc.Str("pool")
	return s.StartTaskLocked(rc, node, "qmcreate", strconv.Itoa(vmid), func(t *TaskRun) string {
		if !s.Sleep(s.Cfg.Dur(s.Cfg.TaskDuration, DefaultTaskDuration)) {
			return "unexpected status"
		}
		s.Mu.Lock()
		defer s.Mu.Unlock()
		made := map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			if !qemuserver.IsDriveKey(k) {
				continue
			}
			if at := qemuserver.CloudinitRequestElsewhere(k, keys[k], made); at != "" {
				s.RemoveEtcPve(db, GuestConfPath(node, "qemu-server", vmid))
				return fmt.Sprintf("unable to create VM %d - %s - cloud-init drive is already attached at '%s'", vmid, k, at)
			}
			nv, err := s.createDrive(node, vmid, k, keys[k])
			if err != nil {
				s.RemoveEtcPve(db, GuestConfPath(node, "qemu-server", vmid))
				return fmt.Sprintf("unable to create VM %d - %v", vmid, err)
			}
			if nv != keys[k] {
				t.Task.Log = append(t.Task.Log, fmt.Sprintf("%s: successfully created disk '%s'", k, nv))
			}
			keys[k] = nv
			made[k] = nv
		}
		if keys["boot"] == "" {
			keys["boot"] = qemuserver.DefaultBoot(keys)
		}
		if keys["smbios1"] == "" {
			keys["smbios1"] = "uuid=" + NewUUID()
		}
		if keys["vmgenid"] == "" || keys["vmgenid"] == "1" {
			keys["vmgenid"] = NewUUID()
		}
		keys["meta"] = fmt.Sprintf("creation-qemu=9.2.0,ctime=%d", time.Now().Unix())
		s.writeQmConfLocked(db, node, vmid, &guestconf.Conf{Keys: keys})
		if pool != "" {
			s.addGuestToPoolLocked(db, pool, vmid) // add_vm_to_pool, once the disks exist
		}
		if start {
			s.SetRunningLocked(node, vmid, true)
		}
		s.SaveLocked()
		return ""
	}), nil
}

// createDrive is create_disks for one option: "store:32" allocates a 32 GiB
// volume, "store:cloudinit" the cloud-init drive; others are kept.
func (s *Sim) createDrive(node string, vmid int, key, v string) (string, error) {
	d := qemuserver.ParseDrive(v)
	store, vn, ok := storage.ParseVolumeID(d.File())
	if !ok {
		return v, nil
	}
	st := s.DBOf(node).Storage[store]
	if st == nil {
		return "", fmt.Errorf("storage '%s' does not exist", store)
	}
	if vn == "cloudinit" {
		volid, err := s.allocCloudinitLocked(node, st, vmid, d.Props.Get("format"))
		if err != nil {
			return "", err
		}
		d.Props.Set("file", volid)
		d.Props.Set("media", "cdrom")
		d.Props.Del("format") // "no longer needed"
		return d.Print(), nil
	}
	gib, err := strconv.ParseFloat(vn, 64)
	if err != nil || d.CDROM() {
		// An existing volume: activate_volumes and volume_size_info fail
		// on a missing one (a template's ISO that is not there, K2-style
		// typos): the create or update fails with it.
		if err := s.missingVolume(node, d.File()); err != nil {
			return "", err
		}
		if d.CDROM() && d.Props.Get("size") == "" {
			// volume_size_info gives an ISO its size= too.
			if st := s.DBOf(node).Storage[store]; st != nil {
				if f, err := s.FileVolumeLocked(node, st, d.File()); err == nil && f != nil {
					d.Props.Set("size", pvecommon.FormatSize(f.Size))
					return d.Print(), nil
				}
			}
		}
		if !d.CDROM() {
			if vol, _, err := s.VolumeLocked(node, d.File()); err == nil && d.Props.Get("size") == "" {
				d.Props.Set("size", pvecommon.FormatSize(vol.Size))
				return d.Print(), nil
			}
		}
		return v, nil
	}
	size := int64(gib * (1 << 30))
	switch key {
	case "efidisk0":
		size = qemuserver.EFIDiskSize(st.Type, d.Props.Get("efitype"))
	case "tpmstate0":
		size = 4 << 20 // TPMSTATE_DISK_SIZE (QemuServer/Drive.pm), whatever size was asked
	}
	volid, err := s.allocVolumeLocked(node, st, vmid, size, d.Props.Get("format"))
	if err != nil {
		return "", err
	}
	d.Props.Set("file", volid)
	delete(d.Props.Vals, "format")
	d.Props.Keys = slices.DeleteFunc(d.Props.Keys, func(k string) bool { return k == "format" })
	d.Props.Set("size", pvecommon.FormatSize(size))
	return d.Print(), nil
}
