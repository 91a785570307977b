package qemusim

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/flocktable"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guests"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/volumes"
)

// Clone, as qemu-server src/PVE/API2/Qemu.pm clone_vm does it:
//
//   - check_running(vmid) first: a URL naming another node than the one
//     holding the source fails "unable to find configuration file for VM
//     <id> on node '<n>'" (QemuConfig.pm assert_config_exists_on_node, K2);
//   - $load_and_check runs before the fork (errors are the POST's HTTP 500)
//     and again in the worker, under the locks;
//   - the worker is a qmclone task on the URL's node whose id is the
//     SOURCE VMID (K3); it takes the source's config lock (shared when the
//     source is stopped, so clones of one template run side by side; 1 s)
//     and the new VMID's (exclusive, 1 s): two clones racing for one
//     nextid answer fail on it (K18);
//   - it writes "# qmclone temporary file\nlock: clone\n" as the new config
//     on the SOURCE node, rewrites it after each disk, drops the lock and
//     only then renames it to the target node (K4: the config is not on
//     the target before the very end; a slow-config fault delays that end);
//   - each disk is allocated under its storage's lock, held AllocDuration
//     (K13: many clones at once queue there; the last ones time out
//     "clone failed: can't lock file '/var/lock/pve-manager/pve-storage-<id>'
//     - got timeout"), then copied for CloneDuration (full clone only);
//   - on failure the new volumes are freed, the config removed, and the task
//     fails "clone failed: <reason>".
//
// Lock waits are scaled to the lab: clone's 1 s is LockTimeout/10 (PVE's
// lock_config is 10 s). Names are not identities: a clone may take a name
// another VM has (K1).

type cloneReq struct {
	node, target, storage, format, name, description, pool, snapname string
	vmid, newid                                                      int
	full                                                             *bool
	who                                                              *core.Principal // the caller, for the permission checks
}

// clonePlan is what $load_and_check returns.
type clonePlan struct {
	src      *guestconf.Conf
	newKeys  map[string]string
	drives   []string        // drive keys to clone, sorted
	fullCopy map[string]bool // per drive: copy (full) or link
	running  bool
}

func (s *backend) cloneLockTimeout() time.Duration {
	return s.Cfg.Dur(s.Cfg.LockTimeout, core.DefaultLockTimeout) / 10
}

// loadAndCheckClone is clone_vm's $load_and_check.
func (s *backend) loadAndCheckClone(db *core.ConfigDB, r *cloneReq, running bool) (*clonePlan, error) {
	if r.pool != "" && db.Pools[r.pool] == nil {
		return nil, core.ErrPerm(fmt.Sprintf("pool '%s' does not exist", r.pool)) // RPCEnvironment::check_pool_exist: raise_perm_exc, 403
	}
	if r.target != "" && (db.Corosync == nil || db.Corosync.Member(r.target) == nil) {
		return nil, fmt.Errorf("no such cluster node '%s'", r.target) // check_node_exists
	}
	var target *core.Storage
	if r.storage != "" {
		target = db.Storage[r.storage]
		if target == nil {
			return nil, fmt.Errorf("storage '%s' does not exist", r.storage)
		}
		if !target.OnNode(r.node) {
			return nil, fmt.Errorf("storage '%s' is not available on node '%s'", r.storage, r.node)
		}
		if !target.HasContent("images") {
			return nil, core.ErrParams(map[string]string{"storage": fmt.Sprintf("storage '%s' does not support vm images", r.storage)})
		}
		if r.target != "" {
			if !target.OnNode(r.target) {
				return nil, fmt.Errorf("storage '%s' is not available on node '%s'", r.storage, r.target)
			}
			if !target.Shared() {
				return nil, fmt.Errorf("can't clone to non-shared storage '%s'", r.storage)
			}
		}
	}
	if err := s.RequireQuorumLocked(db); err != nil {
		return nil, err
	}
	src, err := s.LoadQMConfLocked(db, r.node, r.vmid)
	if err != nil {
		return nil, err
	}
	if err := src.CheckLock("VM"); err != nil {
		return nil, err
	}
	if s.RunningLocked(r.node, r.vmid) != running {
		return nil, fmt.Errorf("unexpected state change")
	}
	if r.snapname != "" {
		return nil, fmt.Errorf("snapshot '%s' does not exist", r.snapname) // snapshots are not simulated
	}
	full, err := qemuserver.CloneFull(src.IsTemplate(), r.full, r.storage, r.format)
	if err != nil {
		return nil, err
	}
	p := &clonePlan{src: src, newKeys: map[string]string{"lock": "clone"}, fullCopy: map[string]bool{}, running: running}
	shared := true
	for _, k := range slices.Sorted(maps.Keys(src.Keys)) {
		v := src.Keys[k]
		switch {
		case qemuserver.CloneDrops(k):
			continue
		case qemuserver.IsNetKey(k):
			// always change MAC! address
			p.newKeys[k] = qemuserver.CloneNet(v, guests.RandomMAC)
		case qemuserver.IsDriveKey(k):
			d := qemuserver.ParseDrive(v)
			store, _, ok := storage.ParseVolumeID(d.File())
			if ok {
				if st := db.Storage[store]; st == nil || !st.Shared() {
					shared = false // check_storage_access_clone
				}
			}
			if d.CDROM() && !d.Cloudinit() {
				p.newKeys[k] = v
				continue
			}
			if !ok {
				p.newKeys[k] = v
				continue
			}
			st := db.Storage[store]
			if st == nil {
				return nil, fmt.Errorf("storage '%s' does not exist", store)
			}
			if full || d.Cloudinit() || k == "tpmstate0" {
				p.fullCopy[k] = true // every storage can copy a current volume
			} else if !storage.CanLink(st, d.File()) {
				return nil, pvecommon.Die("Linked clone feature is not supported for '%s' (%s)", d.File(), k)
			}
			p.drives = append(p.drives, k)
		default:
			p.newKeys[k] = v
		}
	}
	// $check_storage_access_clone and check_bridge_access (perm.go).
	if err := checkStorageAccessClone(db, r.who, src.Keys, r.storage); err != nil {
		return nil, err
	}
	if r.target != "" && !shared {
		return nil, fmt.Errorf("can't clone VM to node '%s' (VM uses local storage)", r.target)
	}
	if _, exists := s.ReadEtcPve(db, guests.GuestConfPath(r.node, "qemu-server", r.newid)); exists {
		return nil, fmt.Errorf("unable to create VM %d: config file already exists", r.newid)
	}
	// clone_vm's copy loop, after the checks above: a running VM's TPM
	// state cannot be copied without a snapshot (API2/Qemu.pm).
	if _, tpm := src.Keys["tpmstate0"]; tpm && full && running && r.snapname == "" {
		return nil, pvecommon.Die("cannot clone TPM state while VM is running")
	}
	return p, nil
}

// POST /nodes/{node}/qemu/{vmid}/clone
func (s *backend) postQemuClone(rc *core.Req) (any, error) {
	db := rc.DB()
	r := &cloneReq{node: rc.Node, vmid: rc.VMID(), newid: rc.Int("newid", 0), target: rc.Str("target"),
		storage: rc.Str("storage"), format: rc.Str("format"), name: rc.Str("name"),
		description: rc.Str("description"), pool: rc.Str("pool"), snapname: rc.Str("snapname"), who: rc.Who}
	if rc.Has("full") {
		f := rc.Bool("full")
		r.full = &f
	}
	if r.target == r.node || r.target == "localhost" {
		r.target = ""
	}
	// check_running → assert_config_exists_on_node (K2).
	if err := s.AssertOnNodeLocked(db, r.node, r.vmid); err != nil {
		return nil, err
	}
	running := s.RunningLocked(r.node, r.vmid)
	if _, err := s.loadAndCheckClone(db, r, running); err != nil {
		return nil, err
	}
	return s.StartTaskLocked(rc, r.node, "qmclone", strconv.Itoa(r.vmid), func(t *core.TaskRun) string {
		return s.cloneWorker(t, db, r, running)
	}), nil
}

func (s *backend) cloneWorker(t *core.TaskRun, db *core.ConfigDB, r *cloneReq, running bool) string {
	srcKey, newKey := guests.GuestLockKey(r.node, r.vmid), guests.GuestLockKey(r.node, r.newid)
	// exclusive lock if VM is running - else shared lock is enough
	if !s.Acquire(srcKey, !running, s.cloneLockTimeout()) {
		return flocktable.ErrTimeout(guests.GuestLockFile(r.vmid)).Error()
	}
	defer s.Release(srcKey, !running)
	if !s.Acquire(newKey, false, s.cloneLockTimeout()) {
		return flocktable.ErrTimeout(guests.GuestLockFile(r.newid)).Error()
	}
	defer s.Release(newKey, false)

	s.Mu.Lock()
	p, err := s.loadAndCheckClone(db, r, running)
	if err != nil {
		s.Mu.Unlock()
		return err.Error()
	}
	t.Task.Log = append(t.Task.Log, fmt.Sprintf("creating a clone of VM %d with ID %d", r.vmid, r.newid))
	keys := p.newKeys
	keys["smbios1"] = "uuid=" + core.NewUUID()
	if keys["vmgenid"] != "" {
		keys["vmgenid"] = core.NewUUID()
	}
	delete(keys, "template")
	if pvecommon.PerlTrue(r.name) { // clone_vm: `if ($param->{name})`
		keys["name"] = r.name
	} else {
		n := p.src.Keys["name"]
		if n == "" {
			n = strconv.Itoa(r.vmid)
		}
		keys["name"] = "Copy-of-VM-" + n
	}
	desc := p.src.Description // the comment lines as stored
	if r.description != "" {
		desc = guestconf.EncodeDescription(r.description)
	}
	// The temporary config, on the source node (file_set_contents). pmxcfs
	// refuses a guest config whose VMID another node holds (pve-cluster
	// memdb.c memdb_rename → vmlist_different_vm_exists: EEXIST), which the
	// -f check above cannot see; the worker dies with File::file_set_contents'
	// message before anything was allocated.
	if e, ok := s.FindVMLocked(db, r.newid); ok && e.Node != r.node {
		s.Mu.Unlock()
		return fmt.Sprintf("close (rename) atomic file '/etc/pve/%s' failed: File exists", guests.GuestConfPath(r.node, "qemu-server", r.newid))
	}
	s.WriteEtcPve(db, guests.GuestConfPath(r.node, "qemu-server", r.newid), "# qmclone temporary file\nlock: clone\n")
	s.SaveLocked()
	s.Mu.Unlock()

	var newVols []string
	fail := func(reason string) string {
		s.Mu.Lock()
		for _, v := range newVols {
			s.FreeVolumeLocked(r.node, v)
		}
		s.RemoveEtcPve(db, guests.GuestConfPath(r.node, "qemu-server", r.newid))
		s.SaveLocked()
		s.Mu.Unlock()
		return "clone failed: " + reason
	}
	for _, k := range p.drives {
		d := qemuserver.ParseDrive(p.src.Keys[k])
		s.Mu.Lock()
		srcSt := db.Storage[mustStore(d.File())]
		dst := srcSt
		if r.storage != "" {
			dst = db.Storage[r.storage]
		}
		s.Mu.Unlock()
		if dst == nil || srcSt == nil {
			return fail(fmt.Sprintf("storage of '%s' does not exist", d.File()))
		}
		full := p.fullCopy[k]
		if full {
			t.Logf("create full clone of drive %s (%s)", k, d.File())
		} else {
			t.Logf("create linked clone of drive %s (%s)", k, d.File())
		}
		lockKey, lockMsg := volumes.StorageLock(r.node, dst)
		if !s.Acquire(lockKey, false, s.Cfg.Dur(s.Cfg.LockTimeout, core.DefaultLockTimeout)) {
			return fail(lockMsg)
		}
		if !s.Sleep(s.Cfg.Dur(s.Cfg.AllocDuration, time.Second)) {
			s.Release(lockKey, false)
			return fail("interrupted by signal")
		}
		s.Mu.Lock()
		var volid string
		switch {
		case d.Cloudinit():
			volid, err = s.AllocCloudinitLocked(r.node, dst, r.newid, "")
		case full:
			size := int64(0)
			if v, _, err := s.VolumeLocked(r.node, d.File()); err == nil {
				size = v.Size
			} else if n, ok := pvecommon.ParseSize(d.Props.Get("size")); ok {
				size = n
			}
			volid, err = s.AllocVolumeLocked(r.node, dst, r.newid, size, r.format)
		default:
			volid, err = s.LinkedCloneLocked(r.node, dst, d.File(), r.newid)
		}
		s.Mu.Unlock()
		s.Release(lockKey, false)
		if err != nil {
			return fail(err.Error())
		}
		newVols = append(newVols, volid)
		if full && !d.Cloudinit() {
			t.Logf("transferred %s of %s (100.00%%)", d.Props.Get("size"), d.Props.Get("size"))
			if !s.Sleep(s.Cfg.Dur(s.Cfg.CloneDuration, 2*s.Cfg.Dur(s.Cfg.TaskDuration, core.DefaultTaskDuration))) {
				return fail("interrupted by signal")
			}
		}
		d.Props.Set("file", volid)
		// clone_disk: "delete $disk->{format}" — the new drive names no format.
		delete(d.Props.Vals, "format")
		d.Props.Keys = slices.DeleteFunc(d.Props.Keys, func(k string) bool { return k == "format" })
		keys[k] = d.Print()
		s.Mu.Lock()
		c := &guestconf.Conf{Keys: maps.Clone(keys), Description: desc}
		s.WriteQMConfLocked(db, r.node, r.newid, c)
		s.SaveLocked()
		s.Mu.Unlock()
	}
	// The end: lock dropped, config moved to the target. A slow-config fault
	// (K4) applies this after the task already reported OK.
	t.Commit(func() {
		delete(keys, "lock")
		rel := guests.GuestConfPath(r.node, "qemu-server", r.newid)
		s.RemoveEtcPve(db, rel)
		node := r.node
		if r.target != "" {
			node = r.target
		}
		s.WriteQMConfLocked(db, node, r.newid, &guestconf.Conf{Keys: keys, Description: desc})
		if r.pool != "" {
			s.AddGuestToPoolLocked(db, r.pool, r.newid)
		}
	})
	if len(p.drives) == 0 && !s.Sleep(s.Cfg.Dur(s.Cfg.TaskDuration, core.DefaultTaskDuration)) {
		return fail("interrupted by signal")
	}
	// clone_vm, "do not write pending changes": the source's [PENDING]
	// section is not copied, with a warning, so the task ends WARNINGS: 1
	// (a success). Reconstruction: PVE joins `keys %{pending}` in hash
	// order; the lab sorts them.
	if pend := pendingKeys(p.src); len(pend) > 0 {
		t.Logf("WARN: found pending changes for '%s', discarding for clone", strings.Join(pend, ","))
		return "WARNINGS: 1"
	}
	return ""
}

// pendingKeys are the keys of a config's [PENDING] section as PVE holds
// them: the pending values, and "delete" when keys wait to be deleted.
func pendingKeys(c *guestconf.Conf) []string {
	keys := slices.Sorted(maps.Keys(c.Pending))
	if len(c.PendingDelete) > 0 && !slices.Contains(keys, "delete") {
		keys = append(keys, "delete")
		slices.Sort(keys)
	}
	return keys
}

func mustStore(volid string) string {
	st, _, _ := storage.ParseVolumeID(volid)
	return st
}
