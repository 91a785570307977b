package storagesim

import "github.com/gopve/proxmox/modules-src/lab/pvesim/core"

// storageCfgLock is the cfs lock of storage.cfg in db's /etc/pve
// (PVE::Storage::lock_storage_config → cfs_lock_file('storage.cfg')).
func storageCfgLock(db *core.ConfigDB) string { return "cfs:" + db.ID + ":file-storage_cfg" }

// storageCfgFreeLocked is the wait for that lock: while another storage
// write holds it, the handler is re-run once it is free, or fails after
// the lock timeout with cfs_lock's message (pve-cluster Cluster.pm
// cfs_lock: "cfs-lock '$lockid' error: got lock request timeout"). The
// caller holds s.Mu.
func (s *backend) storageCfgFreeLocked(db *core.ConfigDB, errmsg string) error {
	key := storageCfgLock(db)
	if !s.Flocks.HeldExclusive(key) {
		return nil
	}
	return &core.LockWait{Key: key, Timeout: s.Cfg.Dur(s.Cfg.LockTimeout, core.DefaultLockTimeout),
		Msg: errmsg + ": cfs-lock 'file-storage_cfg' error: got lock request timeout"}
}

// slowInStorageCfgLock runs the slow part of a create under a slow-locked
// fault: it takes storage.cfg's lock, lets go of the state lock for the
// fault's delay (other requests are served meanwhile and see storage.cfg
// unchanged), and takes the state lock back; the returned func releases
// storage.cfg's lock once the handler wrote it. It reports false when the
// simulator closed meanwhile. The caller holds s.Mu and has checked the
// lock is free (storageCfgFreeLocked). Reconstruction: the delay stands for
// the plugin's hook and mount; their real duration depends on the server.
func (s *backend) slowInStorageCfgLock(db *core.ConfigDB, rc *core.Req) (release func(), alive bool) {
	if rc.Fault == nil || rc.Fault.Kind != core.FaultSlowLocked {
		return func() {}, true
	}
	key := storageCfgLock(db)
	s.Flocks.TryLock(key, false)
	release = func() { s.Flocks.Unlock(key, false) }
	s.Mu.Unlock()
	alive = s.Sleep(rc.Fault.Delay)
	s.Mu.Lock()
	s.ReadFilesLocked(db)
	if !alive {
		release()
	}
	return release, alive
}
