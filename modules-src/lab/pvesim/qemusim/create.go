package qemusim

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guests"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
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
func (s *backend) postQemuCreate(rc *core.Req) (any, error) {
	db := rc.DB()
	vmid := rc.VMID()
	if rc.Has("archive") {
		return nil, core.ErrStatus(501, "restore is not simulated by the lab")
	}
	if rc.Has("sshkeys") {
		if err := qemuserver.CheckSSHKeys(rc.Str("sshkeys")); err != nil {
			return nil, err
		}
	}
	if pool := rc.Str("pool"); pool != "" && db.Pools[pool] == nil {
		return nil, core.ErrPerm(fmt.Sprintf("pool '%s' does not exist", pool)) // check_pool_exist: raise_perm_exc, 403
	}
	if err := s.EtcPveWritableLocked(db, guests.GuestConfPath(rc.Node, "qemu-server", vmid)); err != nil {
		return nil, pvecommon.Die("unable to create VM %d - %v", vmid, err)
	}
	keys := map[string]string{}
	for k, v := range rc.Params {
		if slices.Contains(vmCreateOptions, k) {
			continue
		}
		keys[k] = pvecommon.ParamString(v)
	}
	// create_vm's permission checks (perm.go): the storage parameter,
	// VM.Allocate, then the new disks, the options, the NICs' bridges.
	if st := rc.Str("storage"); st != "" && !guests.IsRootUser(rc.Who) {
		if err := core.RPCCheck(db, rc.Who, "/storage/"+st, "Datastore.AllocateSpace"); err != nil {
			return nil, err
		}
	}
	// qemu-server 9.1.8 (commit bfdad557): adding the new VM to HA
	// (ha-managed, in PVE 9's schema only) needs Sys.Console on /; 9.1.10
	// (commit 5086f472): start=1 needs VM.PowerMgmt up front, as the worker
	// starts the VM without vm_start's own check. PVE 8's qemu-server
	// (stable-bookworm, 8.4.10) makes neither check.
	if !guests.IsRootUser(rc.Who) && s.Version() != 8 {
		if rc.Bool("ha-managed") {
			if err := core.RPCCheck(db, rc.Who, "/", "Sys.Console"); err != nil {
				return nil, err
			}
		}
		if rc.Bool("start") {
			if err := guests.VMCheck(db, rc.Who, vmid, rc.Str("pool"), []string{"VM.PowerMgmt"}, false); err != nil {
				return nil, err
			}
		}
	}
	// Reconstruction of qemu-server src/PVE/API2/Qemu.pm create_vm: its
	// schema says only `user => 'all'`, the handler asks
	// `$rpcenv->check($authuser, "/vms/$vmid", ['VM.Allocate'], 1)`, else
	// the same on /pool/$pool, else (a forced restore over an existing VM,
	// which the lab does not simulate) VM.Backup, else raise_perm_exc().
	if err := guests.CheckCreateAllocate(rc, false); err != nil {
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
			if err := guests.QMErr(qemuserver.CheckNewDrive(k, v, rc.Node, s.DBOf(rc.Node).Storage)); err != nil {
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
			keys[k] = guests.NormaliseNet(v) // add_random_macs
		}
	}
	s.WriteQMConfLocked(db, rc.Node, vmid, &guestconf.Conf{Keys: map[string]string{"lock": "create"}})
	s.SaveLocked()
	node, start, pool := rc.Node, rc.Bool("start"), rc.Str("pool")
	return s.StartTaskLocked(rc, node, "qmcreate", strconv.Itoa(vmid), func(t *core.TaskRun) string {
		if !s.Sleep(s.Cfg.Dur(s.Cfg.TaskDuration, core.DefaultTaskDuration)) {
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
				s.RemoveEtcPve(db, guests.GuestConfPath(node, "qemu-server", vmid))
				return fmt.Sprintf("unable to create VM %d - %s - cloud-init drive is already attached at '%s'", vmid, k, at)
			}
			nv, err := s.CreateDrive(node, vmid, k, keys[k])
			if err != nil {
				s.RemoveEtcPve(db, guests.GuestConfPath(node, "qemu-server", vmid))
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
			keys["smbios1"] = "uuid=" + core.NewUUID()
		}
		if keys["vmgenid"] == "" || keys["vmgenid"] == "1" {
			keys["vmgenid"] = core.NewUUID()
		}
		keys["meta"] = fmt.Sprintf("creation-qemu=9.2.0,ctime=%d", time.Now().Unix())
		s.WriteQMConfLocked(db, node, vmid, &guestconf.Conf{Keys: keys})
		if pool != "" {
			s.AddGuestToPoolLocked(db, pool, vmid) // add_vm_to_pool, once the disks exist
		}
		if start {
			s.SetRunningLocked(node, vmid, true)
		}
		s.SaveLocked()
		return ""
	}), nil
}
