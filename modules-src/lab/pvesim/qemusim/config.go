package qemusim

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guests"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
)

// QEMU guests' config updates: PUT (sync) and POST (async) config, as
// qemu-server's $update_vm_api (src/PVE/API2/Qemu.pm) parses, checks,
// hotplugs or leaves pending each change.

// configUpdate is one PUT/POST config request, parsed and checked before
// any lock ($update_vm_api's early part; its changes: qemuserver.Update).
type configUpdate struct {
	*qemuserver.Update
	node   string
	vmid   int
	digest string
	force  bool
}

func (s *backend) parseConfigUpdate(rc *core.Req) (*configUpdate, error) {
	set := map[string]string{}
	for k, v := range rc.Params {
		if !slices.Contains(qemuserver.ConfigMeta, k) {
			set[k] = pvecommon.ParamString(v)
		}
	}
	up, err := qemuserver.PrepareUpdate(set, pveschema.SplitList(rc.Str("delete")), pveschema.SplitList(rc.Str("revert")),
		func() string { return core.RandomHex(8) }, guests.RandomMAC)
	if err != nil {
		return nil, guests.QMErr(err)
	}
	for k, v := range up.Set {
		if qemuserver.IsDriveKey(k) {
			if err := guests.QMErr(qemuserver.CheckNewDrive(k, v, rc.Node, s.DBOf(rc.Node).Storage)); err != nil {
				return nil, err
			}
		}
	}
	return &configUpdate{Update: up, node: rc.Node, vmid: rc.VMID(), digest: rc.Str("digest"), force: rc.Bool("force")}, nil
}

// loadAndCheck is $load_and_check_config.
func (s *backend) loadAndCheck(db *core.ConfigDB, u *configUpdate, skiplock bool) (*guestconf.Conf, error) {
	c, err := s.LoadQMConfLocked(db, u.node, u.vmid)
	if err != nil {
		return nil, err
	}
	if u.digest != "" && u.digest != c.Digest {
		return nil, fmt.Errorf("checksum mismatch (file change by other user?)")
	}
	if !skiplock {
		if err := c.CheckLock("VM"); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// applyUpdateLocked is $updatefn: changes go to [PENDING]; a stopped VM
// applies them at once, a running one hotplugs what it can (K10: a NIC is
// unplugged and plugged again) and keeps the rest pending. Disks keep their
// volumes as unusedN when replaced or removed (disks.go).
func (s *backend) applyUpdateLocked(db *core.ConfigDB, u *configUpdate, c *guestconf.Conf, logf func(string, ...any)) error {
	logf("update VM %d: %s", u.vmid, strings.Join(u.LogParams, " "))
	if err := s.EtcPveWritableLocked(db, guests.GuestConfPath(u.node, "qemu-server", u.vmid)); err != nil {
		return err
	}
	node, vmid := u.node, u.vmid
	order := qemuserver.BootOrder(c.Keys["boot"])
	bootDeleted := slices.Contains(u.Deletes, "bootorder")
	// modified is $modified: the keys of this request, the only ones a
	// running VM's hotplug tries (vmconfig_hotplug_pending's $selection);
	// what earlier requests left pending stays so.
	modified := map[string]bool{}
	for k := range u.Set {
		modified[k] = true
	}
	for _, k := range u.Deletes {
		if k == "description" && c.Description != "" {
			// Kept as the file's comment lines (storeDescription), and a
			// fast-plug option: gone at once, running or not.
			modified[k] = true
			c.Description = ""
			continue
		}
		val, isCur := c.Keys[k]
		pval, isPending := c.Pending[k]
		if !isCur && !isPending {
			logf("cannot delete '%s' - not set in current configuration!", k)
			continue
		}
		modified[k] = true
		if !isCur {
			val = pval
		}
		delete(c.Pending, k)
		if !bootDeleted && slices.Contains(order, k) {
			order = slices.DeleteFunc(order, func(d string) bool { return d == k })
			c.Pending["boot"] = "order=" + strings.Join(order, ";")
			modified["boot"] = true
		}
		switch {
		case strings.HasPrefix(k, "unused"):
			if c.Keys["protection"] == "1" {
				return pvecommon.Die("can't remove unused disk '%s' - protection mode enabled", qemuserver.ParseDrive(val).File())
			}
			ok, err := s.tryDeallocateDriveLocked(node, vmid, c, k, val, false)
			if err != nil {
				return err
			}
			if ok {
				delete(c.Keys, k)
			}
			continue
		case qemuserver.IsDriveKey(k):
			if c.Keys["protection"] == "1" {
				return pvecommon.Die("can't remove drive '%s' - protection mode enabled", k)
			}
			if isPending {
				if err := s.registerUnusedDriveLocked(node, vmid, c, pval, logf); err != nil {
					return err
				}
			}
		}
		mark := k
		if u.force {
			mark = "!" + k
		}
		c.PendingDelete = slices.DeleteFunc(c.PendingDelete, func(d string) bool { return strings.TrimPrefix(d, "!") == k })
		c.PendingDelete = append(c.PendingDelete, mark)
	}
	for _, k := range u.Revert {
		delete(c.Pending, k)
		c.PendingDelete = slices.DeleteFunc(c.PendingDelete, func(d string) bool { return strings.TrimPrefix(d, "!") == k })
	}
	for _, k := range slices.Sorted(maps.Keys(u.Set)) {
		v := u.Set[k]
		if pv, ok := c.Pending[k]; ok && pv == v {
			continue // skip if nothing changed
		}
		if k == "cipassword" {
			c.Keys[k] = v // written to the config at once, never pending
			continue
		}
		if qemuserver.IsDriveKey(k) {
			if at := qemuserver.CloudinitRequestElsewhere(k, v, c.Keys, c.Pending); at != "" {
				return pvecommon.Die("%s - cloud-init drive is already attached at '%s'", k, at)
			}
			if pv, ok := c.Pending[k]; ok {
				if err := s.registerUnusedDriveLocked(node, vmid, c, pv, logf); err != nil {
					return err
				}
			}
			nv, err := s.CreateDrive(node, vmid, k, v)
			if err != nil {
				return err
			}
			v = nv
		}
		c.Pending[k] = v
		c.PendingDelete = slices.DeleteFunc(c.PendingDelete, func(d string) bool { return strings.TrimPrefix(d, "!") == k })
	}
	// cleanup_pending: a pending value equal to the current one is no
	// change; deleting a key that is not set is none either.
	for k, v := range c.Pending {
		if cur, ok := c.Keys[k]; ok && cur == v {
			delete(c.Pending, k)
		}
	}
	c.PendingDelete = slices.DeleteFunc(c.PendingDelete, func(d string) bool { _, ok := c.Keys[strings.TrimPrefix(d, "!")]; return !ok })
	if !s.RunningLocked(node, vmid) {
		if errs := s.applyPendingLocked(node, vmid, c, logf); errs != nil {
			s.WriteQMConfLocked(db, node, vmid, c)
			s.SaveLocked()
			return core.ErrParams(errs) // raised after the write, as for a running VM
		}
	} else {
		// vmconfig_hotplug_pending: a failing option stays pending and is
		// reported per option (raise_param_exc, a 400) after the write.
		errs := map[string]string{}
		var keep []string
		for _, d := range c.PendingDelete {
			k := strings.TrimPrefix(d, "!")
			if !modified[k] {
				keep = append(keep, d)
				continue
			}
			ok, err := s.hotplugDeleteLocked(node, vmid, c, k, d != k, logf)
			if err != nil {
				errs[k] = hotplugProblem(err)
			}
			if ok && err == nil {
				delete(c.Keys, k)
				continue
			}
			keep = append(keep, d)
		}
		c.PendingDelete = keep
		for _, k := range slices.Sorted(maps.Keys(c.Pending)) {
			if !modified[k] && !qemuserver.FastPlug(k) {
				continue // fast-plug options apply whatever the selection
			}
			ok, err := s.hotplugSetLocked(node, vmid, c, k, logf)
			if err != nil {
				errs[k] = hotplugProblem(err)
				continue
			}
			if ok {
				c.Keys[k] = c.Pending[k]
				delete(c.Pending, k)
			}
		}
		qemuserver.DropReusedUnused(c.Keys, c.Pending)
		if len(errs) > 0 {
			s.WriteQMConfLocked(db, node, vmid, c)
			s.SaveLocked()
			return core.ErrParams(errs)
		}
	}
	s.WriteQMConfLocked(db, node, vmid, c)
	s.SaveLocked()
	return nil
}

// hotplugProblem is vmconfig_hotplug_pending's $add_error: the die of one
// option, prefixed, with its newline (raise_param_exc keeps it).
func hotplugProblem(err error) string {
	msg := err.Error()
	var ae *core.APIError
	if errors.As(err, &ae) {
		msg = ae.Message
	}
	return "hotplug problem - " + strings.TrimRight(msg, "\n") + "\n"
}

// taskError is a die in a worker as its task status: an exception
// stringified (PVE::Exception stringify: code, message, one line per
// parameter error) on one line (RESTEnvironment.pm fork_worker turns
// newlines into spaces).
func taskError(err error) string {
	var ae *core.APIError
	if !errors.As(err, &ae) || len(ae.Errors) == 0 {
		return err.Error()
	}
	msg := fmt.Sprintf("%d %s\n", ae.Status, strings.TrimRight(ae.Message, "\n"))
	for _, k := range slices.Sorted(maps.Keys(ae.Errors)) {
		msg += k + ": " + strings.TrimRight(ae.Errors[k], "\n") + "\n"
	}
	return strings.TrimSpace(strings.ReplaceAll(msg, "\n", " "))
}

// configUpdateRequest is what PUT and POST config check before taking the
// lock: the parsed update, skiplock (root only) and the config's checks.
func (s *backend) configUpdateRequest(rc *core.Req) (u *configUpdate, skiplock bool, err error) {
	if u, err = s.parseConfigUpdate(rc); err != nil {
		return nil, false, err
	}
	if skiplock, err = skiplockOf(rc); err != nil {
		return nil, false, err
	}
	// update_vm_api's checks before $load_and_check_config (perm.go).
	db := rc.DB()
	if err := checkVMModifyConfigPerm(db, rc.Who, u.vmid, "", u.Deletes); err != nil {
		return nil, false, err
	}
	if err := checkVMModifyConfigPerm(db, rc.Who, u.vmid, "", slices.Sorted(maps.Keys(u.Set))); err != nil {
		return nil, false, err
	}
	if err := checkStorageAccessNew(db, rc.Who, u.Set, ""); err != nil {
		return nil, false, err
	}
	if err := checkBridgeAccess(db, rc.Who, u.Set); err != nil {
		return nil, false, err
	}
	if _, err := s.loadAndCheck(db, u, skiplock); err != nil {
		return nil, false, err
	}
	return u, skiplock, nil
}

// PUT /nodes/{node}/qemu/{vmid}/config: synchronous, under the config lock.
func (s *backend) putQemuConfig(rc *core.Req) (any, error) {
	db := rc.DB()
	u, skiplock, err := s.configUpdateRequest(rc)
	if err != nil {
		return nil, err
	}
	return s.WithGuestLockLocked(rc.Node, u.vmid, func() (any, error) {
		c, err := s.loadAndCheck(db, u, skiplock)
		if err != nil {
			return nil, err
		}
		return nil, s.applyUpdateLocked(db, u, c, func(string, ...any) {})
	})
}

// POST /nodes/{node}/qemu/{vmid}/config: the same in a qmconfig task.
func (s *backend) postQemuConfig(rc *core.Req) (any, error) {
	db := rc.DB()
	u, skiplock, err := s.configUpdateRequest(rc)
	if err != nil {
		return nil, err
	}
	return s.GuestLockTask(rc, u.node, "qmconfig", u.vmid, func(t *core.TaskRun) string {
		c, err := s.loadAndCheck(db, u, skiplock)
		if err == nil {
			err = s.applyUpdateLocked(db, u, c, func(f string, a ...any) { t.Task.Log = append(t.Task.Log, fmt.Sprintf(f, a...)) })
		}
		if err != nil {
			return taskError(err)
		}
		return ""
	}), nil
}
