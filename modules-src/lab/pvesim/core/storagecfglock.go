package core

// FaultSlowLocked makes a handler slow inside its lock: the request is
// handled normally, but the work PVE does between taking the lock and
// writing the configuration takes Delay. Only POST /storage honours it
// today: pve-storage src/PVE/API2/Storage/Config.pm create takes
// lock_storage_config, checks the ID is free, runs the plugin's
// on_add_hook (a PBS login, a CIFS credentials file) and activate_storage
// (the NFS or CIFS mount, which can take seconds on a slow server), and
// only then write_config — so a read during those seconds says "absent"
// although the create is under way, and a second create waits for the
// lock. Combined with a short client timeout it loses the answer of a
// create that then happens ("unanswered but done", issue 15 item 3).
const FaultSlowLocked FaultKind = "slow-locked"

// storageCfgLock is the cfs lock of storage.cfg in db's /etc/pve
// (PVE::Storage::lock_storage_config → cfs_lock_file('storage.cfg')).
func storageCfgLock(db *ConfigDB) string { return "cfs:" + db.ID + ":file-storage_cfg" }

// StorageCfgFreeLocked is the wait for that lock: while another storage
// write holds it, the handler is re-run once it is free, or fails after
// the lock timeout with cfs_lock's message (pve-cluster Cluster.pm
// cfs_lock: "cfs-lock '$lockid' error: got lock request timeout"). The
// caller holds s.Mu.
func (s *Sim) StorageCfgFreeLocked(db *ConfigDB, errmsg string) error {
	key := storageCfgLock(db)
	if !s.lockOf(key).excl {
		return nil
	}
	return &LockWait{Key: key, Timeout: s.Cfg.Dur(s.Cfg.LockTimeout, DefaultLockTimeout),
		Msg: errmsg + ": cfs-lock 'file-storage_cfg' error: got lock request timeout"}
}

// SlowInStorageCfgLock runs the slow part of a create under a slow-locked
// fault: it takes storage.cfg's lock, lets go of the state lock for the
// fault's delay (other requests are served meanwhile and see storage.cfg
// unchanged), and takes the state lock back; the returned func releases
// storage.cfg's lock once the handler wrote it. It reports false when the
// simulator closed meanwhile. The caller holds s.Mu and has checked the
// lock is free (storageCfgFreeLocked). Reconstruction: the delay stands for
// the plugin's hook and mount; their real duration depends on the server.
func (s *Sim) SlowInStorageCfgLock(db *ConfigDB, rc *Req) (release func(), alive bool) {
	if rc.Fault == nil || rc.Fault.Kind != FaultSlowLocked {
		return func() {}, true
	}
	key := storageCfgLock(db)
	s.TryLockLocked(key, false)
	release = func() { s.UnlockLocked(key, false) }
	s.Mu.Unlock()
	alive = s.Sleep(rc.Fault.Delay)
	s.Mu.Lock()
	s.readFilesLocked(db)
	if !alive {
		release()
	}
	return release, alive
}
