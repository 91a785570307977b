package guests

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/flocktable"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/ha"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecontainer"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/replication"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
)

// A VM's model: what guests' shared code, HA, the pools, the fixtures and
// /cluster/resources need of a VM (its running state, summary, resource
// entry, a drive allocated at creation, a move to another node), kept here
// while the VM endpoints are pvesim/qemusim's (qemu-server's rules are
// pvesim/qemuserver's).

// QMErr answers qemuserver's refusal of a parameter as PVE does
// (raise_param_exc: 400); other errors pass as they are.
func QMErr(err error) error {
	if pe := (*qemuserver.ParamError)(nil); errors.As(err, &pe) {
		return core.ErrParams(map[string]string{pe.Param: pe.Msg})
	}
	return err
}

// NormaliseNet is qemuserver.NormaliseNet with a random MAC for a NIC sent
// without one (K16).
func NormaliseNet(v string) string { return qemuserver.NormaliseNet(v, RandomMAC) }

// RandomMAC is a new MAC with PVE's default prefix (VMs' NICs and
// containers' hwaddr alike).
func RandomMAC() string { return pvecommon.RandomMAC(core.RandomHex(3)) }

func (s Model) RunningLocked(node string, vmid int) bool {
	_, ok := s.State.Nodes[node].Running[vmid]
	return ok
}

func (s Model) SetRunningLocked(node string, vmid int, on bool) {
	n := s.State.Nodes[node]
	if on {
		if n.Running == nil {
			n.Running = map[int]int64{}
		}
		n.Running[vmid] = core.NowUnix()
		return
	}
	delete(n.Running, vmid)
	delete(n.HeldDevices, vmid) // the guest is gone with its QEMU process
}

// VMSummary is the shared part of /nodes/{node}/qemu, status/current and
// /cluster/resources entries.
func (s Model) VMSummary(node string, vmid int, c *guestconf.Conf) map[string]any {
	conf := c.Keys
	e := map[string]any{"vmid": vmid, "status": "stopped", "cpus": qemuserver.CPUs(conf), "maxmem": qemuserver.MemBytes(conf),
		"maxdisk": qemuserver.BootdiskSize(conf), "mem": 0, "disk": 0, "cpu": 0, "uptime": 0,
		"netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0}
	// vmstatus: `$conf->{name} || "VM $vmid"` (Perl-false: "" and "0"),
	// which pvestatd broadcasts for /cluster/resources.
	if name := conf["name"]; pvecommon.PerlTrue(name) {
		e["name"] = name
	} else {
		e["name"] = fmt.Sprintf("VM %d", vmid)
	}
	if started, ok := s.State.Nodes[node].Running[vmid]; ok {
		e["status"] = "running"
		e["uptime"] = time.Now().Unix() - started
		e["mem"] = qemuserver.MemBytes(conf) / 2
		e["cpu"] = 0.01
		e["pid"] = 10000 + vmid
	}
	return summaryFlags(e, c)
}

// VMResourcesLocked are the type=vm entries of /cluster/resources.
func (s Model) VMResourcesLocked(rc *core.Req) []map[string]any {
	db := rc.DB()
	out := []map[string]any{}
	for _, e := range s.VMListLocked(db) {
		// Filtered, not refused, without VM.Audit (K19).
		if !core.HasPriv(db, rc.Who, fmt.Sprintf("/vms/%d", e.VMID), []string{"VM.Audit"}, false) {
			continue
		}
		var r map[string]any
		if e.Kind == "lxc" {
			var ok bool
			if r, ok = s.ctResourcesLocked(rc, e); !ok {
				continue
			}
		} else {
			c, err := s.LoadQMConfLocked(db, e.Node, e.VMID)
			if err != nil {
				continue
			}
			r = s.asClusterResource(s.VMSummary(e.Node, e.VMID, c), VMKind, e)
			delete(r, "pid")
		}
		if p := PoolOfGuestLocked(db, e.VMID); p != "" {
			r["pool"] = p // $usercfg->{vms}->{$vmid}
		}
		out = append(out, r)
	}
	return out
}

// CreateDrive is create_disks for one option: "store:32" allocates a 32 GiB
// volume, "store:cloudinit" the cloud-init drive; others are kept.
func (s Model) CreateDrive(node string, vmid int, key, v string) (string, error) {
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
		volid, err := s.AllocCloudinitLocked(node, st, vmid, d.Props.Get("format"))
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
	volid, err := s.AllocVolumeLocked(node, st, vmid, size, d.Props.Get("format"))
	if err != nil {
		return "", err
	}
	d.Props.Set("file", volid)
	delete(d.Props.Vals, "format")
	d.Props.Keys = slices.DeleteFunc(d.Props.Keys, func(k string) bool { return k == "format" })
	d.Props.Set("size", pvecommon.FormatSize(size))
	return d.Print(), nil
}

// underGuestLock runs f in a task holding vmid's config lock, waiting up to
// d; the task takes the lab's task duration inside the lock.
func (s Model) underGuestLock(t *core.TaskRun, node string, vmid int, d time.Duration, f func() string) string {
	key := GuestLockKey(node, vmid)
	if !s.Acquire(key, false, d) {
		return flocktable.ErrTimeout(GuestLockFile(vmid)).Error()
	}
	defer s.Release(key, false)
	if !s.Sleep(s.Cfg.Dur(s.Cfg.TaskDuration, core.DefaultTaskDuration)) {
		return "unexpected status"
	}
	s.Mu.Lock()
	died := t.DiedLocked()
	s.Mu.Unlock()
	if died {
		return "unexpected status" // the node lost power: the work never happened
	}
	return f()
}

// IsRootUser is qemu-server's `$authuser eq 'root@pam'` (a token of root
// is not root@pam).
func IsRootUser(who *core.Principal) bool { return who == nil || who.Full() == "root@pam" || who.CLI }

func VMCheck(db *core.ConfigDB, who *core.Principal, vmid int, pool string, privs []string, anyOf bool) error {
	if pool != "" && core.HasPriv(db, who, "/pool/"+pool, privs, anyOf) {
		return nil
	}
	if ok, d := core.CheckFull(db, who, fmt.Sprintf("/vms/%d", vmid), privs, anyOf); !ok {
		return core.ErrPerm(d)
	}
	return nil
}

// PurgeGuestLocked is destroy_vm's purge, the same for a VM and a CT:
// ReplicationConfig::remove_vmid_jobs, VZDump remove_vmid_from_backup_jobs,
// and HA::Config::delete_service_from_config (typ "vm" or "ct").
func (s Model) PurgeGuestLocked(db *core.ConfigDB, t *core.TaskRun, typ string, vmid int) {
	s.removeFromBackupJobsLocked(db, vmid)
	jobs, _ := s.ReplJobsLocked(db)
	s.WriteReplJobsLocked(db, slices.DeleteFunc(jobs, func(j *replication.Job) bool { return replication.Guest(j.ID) == vmid }))
	res, _ := s.HAResourcesLocked(db)
	if ha.FindResource(res, fmt.Sprintf("%s:%d", typ, vmid)) != nil {
		s.WriteSectionsLocked(db, ha.ResourcesCfg, slices.DeleteFunc(res, func(r *pvecommon.Section) bool {
			return r.Type == typ && r.ID == strconv.Itoa(vmid)
		}))
		t.Task.Log = append(t.Task.Log, fmt.Sprintf("NOTE: removed %s %d from HA resource configuration.", map[string]string{"vm": "VM", "ct": "CT"}[typ], vmid))
	}
}

// OwnsVolume is vm_is_volid_owner: the volume name carries the VMID
// (vm-<id>-…, base-…/vm-<id>-…, <id>/vm-<id>-….qcow2).
func OwnsVolume(vmid int, volid string) bool {
	_, vn, ok := storage.ParseVolumeID(volid)
	return ok && storage.Owner(vn) == vmid
}

// MoveGuestLocked moves a guest (config, local volumes, running state) from
// one node to another, and switches its replication jobs, as a finished
// migration (VM) or relocation (CT: stopped, moved, started) leaves it.
func (s Model) MoveGuestLocked(db *core.ConfigDB, vmid int, from, to string, logf func(string, ...any)) error {
	kind := "qemu-server"
	if e, ok := s.FindVMLocked(db, vmid); ok {
		kind = e.Kind
	}
	raw, ok := s.ReadEtcPve(db, GuestConfPath(from, kind, vmid))
	if !ok {
		return pvecommon.Die("unable to find configuration file for VM %d on node '%s'", vmid, from)
	}
	for _, file := range localVolids(db, kind, guestconf.Parse(raw), false) {
		if v := s.State.Nodes[from].Volumes[file]; v != nil {
			tn := s.State.Nodes[to]
			if tn.Volumes == nil {
				tn.Volumes = map[string]*core.GuestVolume{}
			}
			cp := *v
			tn.Volumes[file] = &cp
			delete(s.State.Nodes[from].Volumes, file)
			logf("volume '%s' is '%s' on the target", file, file)
		}
	}
	running := s.RunningLocked(from, vmid)
	s.RemoveEtcPve(db, GuestConfPath(from, kind, vmid))
	s.WriteEtcPve(db, GuestConfPath(to, kind, vmid), raw)
	s.SetRunningLocked(from, vmid, false)
	if running {
		s.SetRunningLocked(to, vmid, true)
	}
	s.SwitchReplicationLocked(db, vmid, to, from) // AbstractMigrate.pm: the job to the target now goes back
	s.SaveLocked()
	return nil
}

// missingVolume is create_disks for an existing volume it cannot find:
// Plugin.pm activate_volume's "volume '<volid>' does not exist" on a
// directory storage (an ISO, a disk file); elsewhere the size query fails,
// "volume <volid> does not exist" (reconstruction: the block plugins'
// activate_volume errors first with their tool's words).
func (s Model) missingVolume(node, volid string) error {
	ok, err := s.VolumeExistsLocked(node, volid)
	if err != nil || ok {
		return err
	}
	store, _, _ := storage.ParseVolumeID(volid)
	if st := s.DBOf(node).Storage[store]; st != nil && storage.HasPath(st) {
		return pvecommon.Die("volume '%s' does not exist", volid)
	}
	return pvecommon.Die("volume %s does not exist", volid)
}

// localVolids walks guest config c (kind qemu-server or lxc) as PVE's
// foreach_volume does, in key order, and keeps each volume on a storage
// that is not shared: what a move between nodes carries (MoveGuestLocked)
// and what a recovery needs on its target (MissingVolumesLocked).
// skipCDROM leaves out cdroms, cloud-init's included: QemuConfig.pm's
// get_replicatable_volumes never replicates them, and a recovered VM gets
// a fresh cloud-init drive at start.
func localVolids(db *core.ConfigDB, kind string, c *guestconf.Conf, skipCDROM bool) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(c.Keys)) {
		var file string
		switch {
		case kind == "qemu-server" && qemuserver.IsDriveKey(k):
			d := qemuserver.ParseDrive(c.Keys[k])
			if skipCDROM && (d.CDROM() || d.Cloudinit()) {
				continue
			}
			file = d.File()
		case kind == "lxc" && pvecontainer.IsVolumeKey(k):
			file = pvecommon.ParseProps(c.Keys[k], "volume").Get("volume")
		default:
			continue
		}
		store, _, ok := storage.ParseVolumeID(file)
		if st := db.Storage[store]; ok && st != nil && !st.Shared() {
			out = append(out, file)
		}
	}
	return out
}
