package volumes

import (
	"errors"
	"fmt"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

// Activation and size of a storage on a node (pve-storage PVE/Storage.pm
// activate_storage and storage_info), which the storage endpoints, the
// cluster's views and pvestatd share. What really activates (a mount, a
// pool import) is the lab's Config hook; a pbs or cifs storage first asks
// its server (the lab's remote stores, Sim.AddRemoteStore).

// ActivateOn is activate_storage on node (Config.StorageActivate, else the
// read-only check).
func (s Model) ActivateOn(node string, st *core.Storage) error {
	if st.Disabled() {
		return fmt.Errorf("storage '%s' is disabled", st.ID)
	}
	if err := s.remoteCheck(s.DBOf(node), st); err != nil {
		return err
	}
	if s.Cfg.StorageActivate != nil {
		return s.Cfg.StorageActivate(node, core.StorageInfoOf(st))
	}
	return s.ActiveOn(node, st)
}

// ActiveOn tells whether the storage activates on node (Config.StorageCheck).
func (s Model) ActiveOn(node string, st *core.Storage) error {
	if st.Disabled() {
		return fmt.Errorf("storage '%s' is disabled", st.ID)
	}
	if err := s.remoteCheck(s.DBOf(node), st); err != nil {
		return err
	}
	if s.Cfg.StorageCheck == nil {
		return nil
	}
	return s.Cfg.StorageCheck(node, core.StorageInfoOf(st))
}

// remoteCheck is what activating a pbs or cifs storage learns from its
// server, reading the credentials the plugin reads (the priv files).
func (s Model) remoteCheck(db *core.ConfigDB, st *core.Storage) error {
	return storage.CheckRemote(s.PrivStorage(db), st, s.RemoteStoresLocked())
}

// storageUsageErrLocked is the storage's size on node (Config.StorageUsage),
// or the simulator's fixed sizes when nothing real is behind it.
func (s Model) storageUsageErrLocked(node string, st *core.Storage) (core.StorageUsage, error) {
	fixed := core.StorageUsage{Total: core.SimMaxDisk, Used: core.SimDisk, Avail: core.SimMaxDisk - core.SimDisk}
	if s.Cfg.StorageUsage == nil {
		return fixed, nil
	}
	got, err := s.Cfg.StorageUsage(node, core.StorageInfoOf(st))
	if err != nil {
		return core.StorageUsage{}, err
	}
	if got == (core.StorageUsage{}) { // zero: nothing real behind it
		return fixed, nil
	}
	return got, nil
}

// StorageUsageLocked is storageUsageErrLocked for views that show no error
// (the cluster resource list: pvestatd's last numbers, zero on failure).
func (s Model) StorageUsageLocked(node string, st *core.Storage) core.StorageUsage {
	u, _ := s.storageUsageErrLocked(node, st)
	return u
}

// StorageAPIError is a storage package error as the API answers it: a
// ParamError is a 400 naming its parameter, a DeniedError a 403.
func StorageAPIError(err error) error {
	var perr *storage.ParamError
	if errors.As(err, &perr) {
		return core.ErrParams(map[string]string{perr.Param: perr.Msg})
	}
	var denied *storage.DeniedError
	if errors.As(err, &denied) {
		return core.ErrPerm(denied.Detail)
	}
	return err
}
