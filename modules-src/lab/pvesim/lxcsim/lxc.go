// Package lxcsim simulates PVE's container endpoints, the basics
// (pve-container src/PVE/API2/LXC.pm, LXC/Status.pm, LXC/Config.pm,
// PVE/LXC/Config.pm): create (vzcreate task; rootfs/mpN "store:N"
// allocate N GiB, subvol-... on zfspool), config read and update with
// pending values and hot-plug (config.go), resize, status and interfaces,
// start/stop/shutdown (vzstart, vzstop, vzshutdown; "already running"/"not
// running" answered before the task, as pct does), destroy, restore
// (restore.go, archives read through pvesim/vzdump) and vzdump's
// extractconfig. A container's file is nodes/<node>/lxc/<vmid>.conf; its
// model (load, write, summary, resource entry) is core's, where HA, the
// pools and /cluster/resources read it. pve-container's rules on config
// values are pvesim/pvecontainer's. Not simulated: the template's content,
// clone, snapshots, migration.
package lxcsim

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guests"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/ha"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecontainer"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

// createCtVolume allocates "store:N" for a rootfs or mount point. The
// volume's root directory belongs to the container's root
// (pvecontainer.RootOwner).
func (s *backend) createCtVolume(node string, vmid int, v string, unprivileged bool) (string, error) {
	p := pvecontainer.ParseMountPoint(v)
	store, size, ok := storage.ParseVolumeID(p.Volume())
	if !ok {
		return v, nil
	}
	gib, err := strconv.ParseFloat(size, 64)
	if err != nil {
		return v, nil // an existing volume
	}
	st := s.DBOf(node).Storage[store]
	if st == nil {
		return "", pvecommon.Die("storage '%s' does not exist", store)
	}
	if !st.HasContent("rootdir") {
		return "", pvecommon.Die("storage '%s' does not support container directories", store)
	}
	bytes := int64(gib * (1 << 30))
	volid, err := s.AllocSubvolLocked(node, st, vmid, bytes)
	if err != nil {
		return "", err
	}
	s.VolumesFor(node, st)[volid].Owner = pvecontainer.RootOwner(unprivileged)
	p.Set("volume", volid)
	p.Set("size", pvecommon.FormatSize(bytes))
	return p.Print(), nil
}

var ctCreateOnly = []string{"node", "vmid", "ostemplate", "password", "ssh-public-keys", "storage", "start",
	"pool", "force", "restore", "unique", "ignore-unpack-errors", "bwlimit", "ha-managed"}

// POST /nodes/{node}/lxc
func (s *backend) postLxcCreate(rc *core.Req) (any, error) {
	db := rc.DB()
	vmid := rc.VMID()
	if rc.Bool("restore") {
		return s.postLxcRestore(rc) // restore.go
	}
	if pool := rc.Str("pool"); pool != "" && db.Pools[pool] == nil {
		return nil, core.ErrPerm(fmt.Sprintf("pool '%s' does not exist", pool)) // check_pool_exist: raise_perm_exc, 403
	}
	if e, ok := s.FindVMLocked(db, vmid); ok {
		kind := "VM"
		if e.Kind == "lxc" {
			kind = "CT"
		}
		// Reconstruction (pve-container API2/LXC.pm create_vm; pve-cluster
		// Cluster.pm check_vmid_unused): the VMID is checked before the
		// create's "unable to create CT" eval, so PVE's answer is the bare
		// "CT N already exists on node 'X'" (qemu-server's create_vm wraps
		// it, the lab's qemu.go does).
		return nil, pvecommon.Die("%s %d already exists on node '%s'", kind, vmid, e.Node)
	}
	keys := map[string]string{}
	for k, v := range rc.Params {
		if !slices.Contains(ctCreateOnly, k) {
			keys[k] = pvecommon.ParamString(v)
		}
	}
	// 'unprivileged' is read-only, set by create alone: since pve-container
	// 6.0 (PVE 9, commit 103068a) a create without it makes an unprivileged
	// CT; before, a privileged one. Only a true value is written.
	delete(keys, "unprivileged")
	unpriv := (rc.Has("unprivileged") && rc.Bool("unprivileged")) || (!rc.Has("unprivileged") && s.Version() >= 9)
	// create_vm's permission checks (perm.go), then the template's.
	if err := s.checkCTCreatePerm(rc, unpriv); err != nil {
		return nil, err
	}
	if err := s.checkCTModifyConfigPerm(db, rc.Who, rc.Node, vmid, rc.Str("pool"), nil, keys, nil, unpriv); err != nil {
		return nil, err
	}
	if _, err := s.archiveVolRef(rc, vmid, rc.Str("ostemplate"), "vztmpl"); err != nil {
		return nil, err // check_volume_access($ostemplate, 'vztmpl')
	}
	if unpriv {
		keys["unprivileged"] = "1"
	}
	if err := s.ctCreateVolumes(rc, keys); err != nil {
		return nil, err
	}
	for k, v := range keys {
		if qemuserver.IsNetKey(k) {
			keys[k] = pvecontainer.NormaliseNet(v, guests.RandomMAC)
		}
	}
	tmpl := rc.Str("ostemplate")
	s.WriteCTConfLocked(db, rc.Node, vmid, &guestconf.Conf{Keys: map[string]string{"lock": "create"}})
	if pool := rc.Str("pool"); pool != "" {
		db.Pools[pool].Members = append(db.Pools[pool].Members, fmt.Sprintf("lxc/%d", vmid))
	}
	s.SaveLocked()
	node, start := rc.Node, rc.Bool("start")
	return s.StartTaskLocked(rc, node, "vzcreate", strconv.Itoa(vmid), func(t *core.TaskRun) string {
		t.Logf("extracting archive '%s'", tmpl)
		if !s.Sleep(s.Cfg.Dur(s.Cfg.TaskDuration, core.DefaultTaskDuration)) {
			return "unexpected status"
		}
		s.Mu.Lock()
		defer s.Mu.Unlock()
		if s.Cfg.StorageContent != nil {
			// Reconstruction (LXC/Create.pm restore_archive →
			// PVE::Storage::abs_filesystem_path): the template must be a
			// file on its storage, else the task dies "$emsg can't find file".
			if ok, err := s.VolumeExistsLocked(node, tmpl); err != nil || !ok {
				s.RemoveEtcPve(db, guests.GuestConfPath(node, "lxc", vmid))
				s.SaveLocked()
				return fmt.Sprintf("unable to create CT %d - can't find file '%s'", vmid, tmpl)
			}
		}
		for _, k := range pvecontainer.VolumeKeys(keys) {
			if !pvecontainer.IsVolumeKey(k) {
				continue
			}
			nv, err := s.createCtVolume(node, vmid, keys[k], keys["unprivileged"] == "1")
			if err != nil {
				s.RemoveEtcPve(db, guests.GuestConfPath(node, "lxc", vmid))
				return fmt.Sprintf("unable to create CT %d - %v", vmid, err)
			}
			keys[k] = nv
		}
		if keys["arch"] == "" {
			keys["arch"] = "amd64"
		}
		if keys["ostype"] == "" {
			keys["ostype"] = ostypeOf(tmpl)
		}
		pvecontainer.CreateDefaults(keys, vmid)
		conf := &guestconf.Conf{Keys: keys}
		if d, ok := keys["description"]; ok {
			conf.SetDescription(d)
		}
		s.WriteCTConfLocked(db, node, vmid, conf)
		if start {
			s.SetRunningLocked(node, vmid, true)
		}
		s.SaveLocked()
		return ""
	}), nil
}

// ostypeOf guesses the ostype from a template name as pct's detection
// would from its files (reconstruction).
func ostypeOf(tmpl string) string {
	_, name, _ := strings.Cut(tmpl, "vztmpl/")
	for _, os := range []string{"debian", "ubuntu", "centos", "fedora", "alpine", "archlinux", "opensuse", "gentoo", "nixos"} {
		if strings.HasPrefix(name, os) {
			return os
		}
	}
	return "unmanaged"
}

// GET /nodes/{node}/lxc
func (s *backend) getLxcList(rc *core.Req) (any, error) {
	return s.GuestListLocked(rc, guests.CTKind, func(node string, vmid int, c *guestconf.Conf) map[string]any {
		v := s.CTSummary(node, vmid, c)
		v["type"] = "lxc"
		return v
	}), nil
}

// GET /nodes/{node}/lxc/{vmid}/config
func (s *backend) getLxcConfig(rc *core.Req) (any, error) {
	c, err := s.LoadCTConfLocked(rc.DB(), rc.Node, rc.VMID())
	if err != nil {
		return nil, err
	}
	keys := c.WithPending() // load_current_config: pending values unless current=1
	if rc.Bool("current") {
		keys = c.Keys
	}
	out := guests.WithDescriptionAndDigest(s.TypedGuestConf(guests.CTKind, keys), c)
	if c.Description != "" {
		out["description"] = guestconf.CTDescription(c.Description)
	}
	return out, nil
}

// GET /nodes/{node}/lxc/{vmid}/status/current
func (s *backend) getLxcStatus(rc *core.Req) (any, error) {
	c, err := s.LoadCTConfLocked(rc.DB(), rc.Node, rc.VMID())
	if err != nil {
		return nil, err
	}
	e := s.CTSummary(rc.Node, rc.VMID(), c)
	e["type"] = "lxc"
	e["ha"] = s.HAStatusOfGuestLocked(rc.DB(), fmt.Sprintf("ct:%d", rc.VMID()))
	return e, nil
}

// GET /nodes/{node}/lxc/{vmid}/interfaces is PVE::LXC get_interfaces:
// `ip --json a` in the running container's network namespace; a stopped
// container has no pid and the answer is null. The lab's containers run no
// network stack: reconstruction — lo, then each netN by its name and
// hwaddr with its static ip/ip6 (none for dhcp/auto/manual).
func (s *backend) getLxcInterfaces(rc *core.Req) (any, error) {
	c, err := s.LoadCTConfLocked(rc.DB(), rc.Node, rc.VMID())
	if err != nil {
		return nil, err
	}
	if !s.RunningLocked(rc.Node, rc.VMID()) {
		return nil, nil
	}
	iface := func(name, mac string, addrs ...[3]string) map[string]any {
		o := map[string]any{"name": name, "hwaddr": mac, "hardware-address": mac}
		list := []map[string]any{}
		for _, a := range addrs {
			n, _ := strconv.Atoi(a[2])
			o[a[0]] = a[1] + "/" + a[2]
			list = append(list, map[string]any{"ip-address-type": a[0], "ip-address": a[1], "prefix": n})
		}
		o["ip-addresses"] = list
		return o
	}
	out := []map[string]any{iface("lo", "00:00:00:00:00:00", [3]string{"inet", "127.0.0.1", "8"}, [3]string{"inet6", "::1", "128"})}
	for _, k := range slices.Sorted(maps.Keys(c.Keys)) {
		if !qemuserver.IsNetKey(k) {
			continue
		}
		p := pvecommon.ParseProps(c.Keys[k], "")
		var addrs [][3]string
		for _, f := range []struct{ key, family string }{{"ip", "inet"}, {"ip6", "inet6"}} {
			if ip, pfx, ok := strings.Cut(p.Get(f.key), "/"); ok {
				addrs = append(addrs, [3]string{f.family, ip, pfx})
			}
		}
		out = append(out, iface(p.Get("name"), strings.ToLower(p.Get("hwaddr")), addrs...))
	}
	return out, nil
}

// ctPower is start/stop/shutdown: pct's early checks, then the task (or an
// HA request for an HA-managed CT, H4).
func (s *backend) ctPower(rc *core.Req, typ string, on bool) (any, error) {
	db := rc.DB()
	vmid, node := rc.VMID(), rc.Node
	c, err := s.LoadCTConfLocked(db, node, vmid)
	if err != nil {
		return nil, err
	}
	running := s.RunningLocked(node, vmid)
	if on && running {
		return nil, pvecommon.Die("CT %d already running", vmid)
	}
	if !on && !running {
		return nil, pvecommon.Die("CT %d not running", vmid)
	}
	list, _ := s.HAResourcesLocked(db)
	if r := ha.FindResource(list, fmt.Sprintf("ct:%d", vmid)); r != nil && r.Opts["state"] != "ignored" {
		haTyp, state := "hastart", "started"
		if !on {
			haTyp, state = "hastop", "stopped"
		}
		return s.HARequestTaskSID(rc, haTyp, fmt.Sprintf("ct:%d", vmid), vmid, state), nil
	}
	if on && c.IsTemplate() {
		return nil, pvecommon.Die("you can't start a CT if it's a template") // reconstruction: PVE says it in the task
	}
	return s.GuestLockTask(rc, node, typ, vmid, func(*core.TaskRun) string {
		c, err := s.LoadCTConfLocked(db, node, vmid)
		if err != nil {
			return err.Error()
		}
		if err := c.CheckLock("CT"); err != nil {
			return err.Error()
		}
		if on && (len(c.Pending) > 0 || len(c.PendingDelete) > 0) {
			// vm_start: vmconfig_apply_pending, what waited for the start.
			if err := s.ctApplyPendingLocked(node, vmid, c); err != nil {
				return err.Error()
			}
			s.WriteCTConfLocked(db, node, vmid, c)
		}
		s.SetRunningLocked(node, vmid, on)
		s.SaveLocked()
		return ""
	}), nil
}

func (s *backend) postLxcStart(rc *core.Req) (any, error) { return s.ctPower(rc, "vzstart", true) }
func (s *backend) postLxcStop(rc *core.Req) (any, error)  { return s.ctPower(rc, "vzstop", false) }
func (s *backend) postLxcShutdown(rc *core.Req) (any, error) {
	return s.ctPower(rc, "vzshutdown", false)
}

// DELETE /nodes/{node}/lxc/{vmid}: destroy_vm's early checks
// (ctDestroyChecks) before and again in the vzdestroy task; purge takes the
// CT out of replication, backup jobs and HA (purgeGuestLocked).
func (s *backend) deleteLxc(rc *core.Req) (any, error) {
	db := rc.DB()
	vmid, node, purge := rc.VMID(), rc.Node, rc.Bool("purge")
	if err := s.ctDestroyChecks(db, node, vmid, purge); err != nil {
		return nil, err
	}
	return s.GuestLockTask(rc, node, "vzdestroy", vmid, func(t *core.TaskRun) string {
		if err := s.ctDestroyChecks(db, node, vmid, purge); err != nil {
			return err.Error()
		}
		c, _ := s.LoadCTConfLocked(db, node, vmid)
		for k, v := range c.Keys {
			if pvecontainer.IsVolumeKey(k) {
				s.FreeVolumeLocked(node, pvecontainer.ParseMountPoint(v).Volume())
			}
		}
		guests.DropFromPoolsLocked(db, guests.CTKind, vmid)
		if purge {
			t.Task.Log = append(t.Task.Log, fmt.Sprintf("purging CT %d from related configurations..", vmid))
			s.PurgeGuestLocked(db, t, "ct", vmid)
		}
		s.RemoveEtcPve(db, guests.GuestConfPath(node, guests.CTKind.Dir, vmid))
		s.SaveLocked()
		return ""
	}), nil
}

// backend serves the container endpoints on the core's state.
type backend struct{ guests.Model }

// Register adds the container endpoints to s.
func Register(s *core.Sim) { s.Handle((&backend{guests.New(s)}).routes()) }

// routes are the container endpoints and vzdump's extractconfig.
func (s *backend) routes() map[string]core.Handler {
	return map[string]core.Handler{
		"GET /nodes/{node}/lxc":                         s.getLxcList,
		"POST /nodes/{node}/lxc":                        s.postLxcCreate,
		"GET /nodes/{node}/vzdump/extractconfig":        s.getVzdumpExtractConfig,
		"DELETE /nodes/{node}/lxc/{vmid}":               s.deleteLxc,
		"GET /nodes/{node}/lxc/{vmid}/config":           s.getLxcConfig,
		"PUT /nodes/{node}/lxc/{vmid}/config":           s.putLxcConfig,
		"GET /nodes/{node}/lxc/{vmid}/pending":          s.getLxcPending,
		"PUT /nodes/{node}/lxc/{vmid}/resize":           s.putLxcResize,
		"GET /nodes/{node}/lxc/{vmid}/status/current":   s.getLxcStatus,
		"GET /nodes/{node}/lxc/{vmid}/interfaces":       s.getLxcInterfaces,
		"POST /nodes/{node}/lxc/{vmid}/status/start":    s.postLxcStart,
		"POST /nodes/{node}/lxc/{vmid}/status/stop":     s.postLxcStop,
		"POST /nodes/{node}/lxc/{vmid}/status/shutdown": s.postLxcShutdown,
	}
}
