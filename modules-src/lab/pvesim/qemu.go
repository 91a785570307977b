package pvesim

import (
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// QEMU guests: create, config (read, sync PUT, async POST, pending), status,
// start/stop/shutdown, template, resize, destroy; clone is in clone.go.
// Messages are qemu-server's (src/PVE/API2/Qemu.pm, QemuServer.pm,
// QemuConfig.pm) and pve-guest-common's (AbstractConfig.pm) unless marked
// as a reconstruction.

func (rc *reqCtx) vmid() int { n, _ := strconv.Atoi(rc.str("vmid")); return n }

// skiplock is root@pam's alone (a token of root is not root@pam).
func (rc *reqCtx) skiplock() (bool, error) {
	if !rc.boolean("skiplock") {
		return false, nil
	}
	if rc.who == nil || rc.who.full() != "root@pam" {
		return false, errParams(map[string]string{"skiplock": "Only root may use this option."})
	}
	return true, nil
}

// hotplugDefault is qemu-server's default `hotplug` (network,disk,usb).
var hotplugDefault = []string{"network", "disk", "usb"}

// fastPlug are options a running VM takes at once (QemuServer.pm
// $fast_plug_option, plus the cloud-init options).
var fastPlug = []string{"description", "hookscript", "lock", "migrate_downtime", "migrate_speed", "name",
	"onboot", "protection", "shares", "startup", "tags", "vmstatestorage",
	"cicustom", "cipassword", "citype", "ciupgrade", "ciuser", "nameserver", "searchdomain", "sshkeys"}

func isIPConfig(k string) bool { return strings.HasPrefix(k, "ipconfig") }

// hotpluggable tells whether a running VM applies key at once
// (vmconfig_hotplug_pending); the rest stays in [PENDING] until a restart.
func hotpluggable(conf map[string]string, key string) bool {
	if slices.Contains(fastPlug, key) || isIPConfig(key) {
		return true
	}
	hp := hotplugDefault
	if v, ok := conf["hotplug"]; ok {
		switch v {
		case "0":
			hp = nil
		case "1":
		default:
			hp = splitComma(v)
		}
	}
	switch {
	case isNetKey(key):
		return slices.Contains(hp, "network")
	case isDriveKey(key) && !strings.HasPrefix(key, "efidisk") && !strings.HasPrefix(key, "tpmstate"):
		return slices.Contains(hp, "disk")
	case strings.HasPrefix(key, "usb"):
		return slices.Contains(hp, "usb")
	}
	return false
}

func (s *Sim) runningLocked(node string, vmid int) bool {
	_, ok := s.st.Nodes[node].Running[vmid]
	return ok
}

func (s *Sim) setRunningLocked(node string, vmid int, on bool) {
	n := s.st.Nodes[node]
	if on {
		if n.Running == nil {
			n.Running = map[int]int64{}
		}
		n.Running[vmid] = nowUnix()
		return
	}
	delete(n.Running, vmid)
	delete(n.HeldDevices, vmid) // the guest is gone with its QEMU process
}

// typedConf renders VM config values with the schema's JSON types.
func (s *Sim) typedConf(keys map[string]string) map[string]any { return s.typedGuestConf(vmKind, keys) }

// diskSize sums the sizes of a config's disks (maxdisk: the boot disk in PVE;
// reconstruction: the first non-cdrom disk).
func diskSize(conf map[string]string) int64 {
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		if !isDriveKey(k) || strings.HasPrefix(k, "unused") {
			continue
		}
		d := parseDrive(conf[k])
		if d.cdrom() || d.cloudinit() {
			continue
		}
		if n, ok := parseSize(d.props.get("size")); ok {
			return n
		}
	}
	return 0
}

func memBytes(conf map[string]string) int64 {
	mem := 512
	if v := conf["memory"]; v != "" {
		p := parseProps(v, "current")
		if n, err := strconv.Atoi(p.get("current")); err == nil {
			mem = n
		}
	}
	return int64(mem) << 20
}

func cpus(conf map[string]string) int {
	c, so := 1, 1
	if n, err := strconv.Atoi(conf["cores"]); err == nil {
		c = n
	}
	if n, err := strconv.Atoi(conf["sockets"]); err == nil {
		so = n
	}
	return c * so
}

// vmSummary is the shared part of /nodes/{node}/qemu, status/current and
// /cluster/resources entries.
func (s *Sim) vmSummary(node string, vmid int, c *qmConf) map[string]any {
	conf := c.Keys
	e := map[string]any{"vmid": vmid, "status": "stopped", "cpus": cpus(conf), "maxmem": memBytes(conf),
		"maxdisk": diskSize(conf), "mem": 0, "disk": 0, "cpu": 0, "uptime": 0,
		"netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0}
	if name := conf["name"]; name != "" {
		e["name"] = name
	}
	if started, ok := s.st.Nodes[node].Running[vmid]; ok {
		e["status"] = "running"
		e["uptime"] = time.Now().Unix() - started
		e["mem"] = memBytes(conf) / 2
		e["cpu"] = 0.01
		e["pid"] = 10000 + vmid
	}
	return summaryFlags(e, c)
}

// vmResourcesLocked are the type=vm entries of /cluster/resources.
func (s *Sim) vmResourcesLocked(rc *reqCtx) []map[string]any {
	db := rc.db()
	out := []map[string]any{}
	for _, e := range s.vmListLocked(db) {
		// Filtered, not refused, without VM.Audit (K19).
		if !hasPriv(db, rc.who, fmt.Sprintf("/vms/%d", e.VMID), []string{"VM.Audit"}, false) {
			continue
		}
		var r map[string]any
		if e.Kind == "lxc" {
			var ok bool
			if r, ok = s.ctResourcesLocked(rc, e); !ok {
				continue
			}
		} else {
			c, err := s.loadQmConfLocked(db, e.Node, e.VMID)
			if err != nil {
				continue
			}
			r = s.asClusterResource(s.vmSummary(e.Node, e.VMID, c), vmKind, e)
			delete(r, "pid")
		}
		if p := poolOfGuestLocked(db, e.VMID); p != "" {
			r["pool"] = p // $usercfg->{vms}->{$vmid}
		}
		out = append(out, r)
	}
	return out
}

// GET /cluster/nextid: the lowest free VMID ≥ 100 (pve-manager
// API2/Cluster.pm). A hint only: nothing is reserved (K18).
func (s *Sim) getNextID(rc *reqCtx) (any, error) {
	db := rc.db()
	used := map[int]bool{}
	for _, e := range s.vmListLocked(db) {
		used[e.VMID] = true
	}
	if rc.has("vmid") {
		if used[rc.vmid()] {
			return nil, errParams(map[string]string{"vmid": fmt.Sprintf("VM %d already exists", rc.vmid())})
		}
		return strconv.Itoa(rc.vmid()), nil
	}
	for i := 100; i < 1000000; i++ {
		if !used[i] {
			return strconv.Itoa(i), nil // PVE answers the number as a string here
		}
	}
	return nil, fmt.Errorf("unable to get any free VMID in range [100, 1000000]")
}

// GET /nodes/{node}/qemu
func (s *Sim) getQemuList(rc *reqCtx) (any, error) {
	return s.guestListLocked(rc, vmKind, s.vmSummary), nil
}

// GET /nodes/{node}/qemu/{vmid}/config
func (s *Sim) getQemuConfig(rc *reqCtx) (any, error) {
	c, err := s.loadQmConfLocked(rc.db(), rc.node, rc.vmid())
	if err != nil {
		return nil, err
	}
	keys := c.withPending()
	if rc.boolean("current") {
		keys = maps.Clone(c.Keys)
	}
	out := s.typedConf(keys)
	if _, ok := out["cipassword"]; ok {
		out["cipassword"] = "**********" // vm_config never shows it
	}
	return withDescriptionAndDigest(out, c), nil
}

// GET /nodes/{node}/qemu/{vmid}/pending
func (s *Sim) getQemuPending(rc *reqCtx) (any, error) {
	c, err := s.loadQmConfLocked(rc.db(), rc.node, rc.vmid())
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for k := range c.Keys {
		keys[k] = true
	}
	for k := range c.Pending {
		keys[k] = true
	}
	out := []map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		e := map[string]any{"key": k}
		if v, ok := c.Keys[k]; ok {
			e["value"] = s.typedConf(map[string]string{k: v})[k]
		}
		if v, ok := c.Pending[k]; ok {
			e["pending"] = s.typedConf(map[string]string{k: v})[k]
		}
		if k == "cipassword" {
			// vm_pending masks both, the pending one with a trailing blank.
			if _, ok := e["value"]; ok {
				e["value"] = "**********"
			}
			if _, ok := e["pending"]; ok {
				e["pending"] = "********** "
			}
		}
		if c.pendingDeleted(k) {
			e["delete"] = 1
			if slices.Contains(c.PendingDelete, "!"+k) {
				e["delete"] = 2
			}
		}
		out = append(out, e)
	}
	// config_with_pending_array walks every scalar of load_config's hash:
	// the file's digest and the description are entries too.
	out = append(out, map[string]any{"key": "digest", "value": c.Digest})
	if c.Description != "" {
		out = append(out, map[string]any{"key": "description", "value": c.Description})
	}
	return out, nil
}

// GET /nodes/{node}/qemu/{vmid}/status/current
func (s *Sim) getQemuStatus(rc *reqCtx) (any, error) {
	db := rc.db()
	vmid := rc.vmid()
	if err := s.assertOnNodeLocked(db, rc.node, vmid); err != nil {
		return nil, err
	}
	c, err := s.loadQmConfLocked(db, rc.node, vmid)
	if err != nil {
		return nil, err
	}
	e := s.vmSummary(rc.node, vmid, c)
	e["qmpstatus"] = e["status"]
	e["ha"] = s.haStatusOfGuestLocked(db, fmt.Sprintf("vm:%d", vmid))
	if c.Keys["agent"] != "" && parseProps(c.Keys["agent"], "enabled").get("enabled") == "1" {
		e["agent"] = 1
	}
	return e, nil
}

// vmCreateOptions are the POST /nodes/{node}/qemu parameters that are not
// config keys.
var vmCreateOptions = []string{"node", "vmid", "pool", "start", "storage", "archive", "force", "unique",
	"bwlimit", "live-restore", "import-working-storage", "ha-managed"}

// POST /nodes/{node}/qemu: a qmcreate task; the config exists at once,
// locked "create" (AbstractConfig.pm create_and_lock_config), and gets its
// disks and MACs before the lock goes.
func (s *Sim) postQemuCreate(rc *reqCtx) (any, error) {
	db := rc.db()
	vmid := rc.vmid()
	if rc.has("archive") {
		return nil, errStatus(501, "restore is not simulated by the lab")
	}
	if rc.has("sshkeys") {
		if err := checkSSHKeys(rc.str("sshkeys")); err != nil {
			return nil, err
		}
	}
	if pool := rc.str("pool"); pool != "" && db.Pools[pool] == nil {
		return nil, errPerm(fmt.Sprintf("pool '%s' does not exist", pool)) // check_pool_exist: raise_perm_exc, 403
	}
	if err := s.etcPveWritableLocked(db, guestConfPath(rc.node, "qemu-server", vmid)); err != nil {
		return nil, pveDie("unable to create VM %d - %v", vmid, err)
	}
	if e, ok := s.findVMLocked(db, vmid); ok {
		// check_vmid_unused (pve-cluster Cluster.pm) under create_and_lock_config.
		tname := "VM"
		if e.Kind == "lxc" {
			tname = "CT"
		}
		return nil, fmt.Errorf("unable to create VM %d - %s %d already exists on node '%s'", vmid, tname, vmid, e.Node)
	}
	keys := map[string]string{}
	for k, v := range rc.params {
		if slices.Contains(vmCreateOptions, k) {
			continue
		}
		keys[k] = paramString(v)
	}
	// create_vm's permission checks (qemuperm.go): the storage parameter,
	// then the new disks, the options, the NICs' bridges.
	if st := rc.str("storage"); st != "" && !isRootUser(rc.who) {
		if ok, d := checkFull(db, rc.who, "/storage/"+st, []string{"Datastore.AllocateSpace"}, false); !ok {
			return nil, errPerm(d)
		}
	}
	if err := checkStorageAccessNew(db, rc.who, keys, rc.str("storage")); err != nil {
		return nil, err
	}
	if err := checkVMModifyConfigPerm(db, rc.who, vmid, rc.str("pool"), slices.Sorted(maps.Keys(keys))); err != nil {
		return nil, err
	}
	if err := checkBridgeAccess(db, rc.who, keys); err != nil {
		return nil, err
	}
	// sshkeys stay URL-encoded, as the API receives and stores them (K12).
	// Disks are checked before the task starts ($check_drive_param).
	for k, v := range keys {
		if isDriveKey(k) {
			if err := s.checkNewDrive(rc.node, k, v); err != nil {
				return nil, err
			}
		}
	}
	for k, v := range keys {
		if isNetKey(k) {
			keys[k] = normaliseNet(v) // add_random_macs
		}
	}
	s.writeQmConfLocked(db, rc.node, vmid, &qmConf{Keys: map[string]string{"lock": "create"}})
	s.saveLocked()
	node, start, pool := rc.node, rc.boolean("start"), rc.str("pool")
	return s.startTaskLocked(rc, node, "qmcreate", strconv.Itoa(vmid), func(t *taskRun) string {
		if !s.sleep(s.cfg.dur(s.cfg.TaskDuration, DefaultTaskDuration)) {
			return "unexpected status"
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		made := map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			if !isDriveKey(k) {
				continue
			}
			if at := cloudinitRequestElsewhere(k, keys[k], made); at != "" {
				s.removeEtcPve(db, guestConfPath(node, "qemu-server", vmid))
				return fmt.Sprintf("unable to create VM %d - %s - cloud-init drive is already attached at '%s'", vmid, k, at)
			}
			nv, err := s.createDrive(node, vmid, k, keys[k])
			if err != nil {
				s.removeEtcPve(db, guestConfPath(node, "qemu-server", vmid))
				return fmt.Sprintf("unable to create VM %d - %v", vmid, err)
			}
			if nv != keys[k] {
				t.task.Log = append(t.task.Log, fmt.Sprintf("%s: successfully created disk '%s'", k, nv))
			}
			keys[k] = nv
			made[k] = nv
		}
		if keys["boot"] == "" {
			keys["boot"] = defaultBoot(keys)
		}
		if keys["smbios1"] == "" {
			keys["smbios1"] = "uuid=" + newUUID()
		}
		if keys["vmgenid"] == "" || keys["vmgenid"] == "1" {
			keys["vmgenid"] = newUUID()
		}
		keys["meta"] = fmt.Sprintf("creation-qemu=9.2.0,ctime=%d", time.Now().Unix())
		s.writeQmConfLocked(db, node, vmid, &qmConf{Keys: keys})
		if pool != "" {
			s.addGuestToPoolLocked(db, pool, vmid) // add_vm_to_pool, once the disks exist
		}
		if start {
			s.setRunningLocked(node, vmid, true)
		}
		s.saveLocked()
		return ""
	}), nil
}

// defaultBoot is get_default_bootdevices: disks, then the first NIC
// (reconstruction of the order: cdroms first as PVE does).
func defaultBoot(keys map[string]string) string {
	var cd, disks, nets []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		switch {
		case isDriveKey(k) && !strings.HasPrefix(k, "unused") && !strings.HasPrefix(k, "efidisk") && !strings.HasPrefix(k, "tpmstate"):
			if d := parseDrive(keys[k]); d.cdrom() {
				if !d.cloudinit() {
					cd = append(cd, k)
				}
			} else {
				disks = append(disks, k)
			}
		case isNetKey(k):
			nets = append(nets, k)
		}
	}
	order := append(cd, disks...)
	if len(nets) > 0 {
		order = append(order, nets[0])
	}
	return "order=" + strings.Join(order, ";")
}

// checkNewDrive is $check_drive_param's storage part: the storage exists,
// is on the node and takes images.
func (s *Sim) checkNewDrive(node, key, v string) error {
	d := parseDrive(v)
	f := d.file()
	if f == "none" || f == "cdrom" || strings.HasPrefix(f, "/") {
		return nil
	}
	store, vn, ok := volumeID(f)
	if !ok {
		if _, isSize := parseSize(f); isSize {
			return nil // "32" on the default storage: handled by createDrive
		}
		return errParams(map[string]string{key: fmt.Sprintf("unable to parse volume ID '%s'", f)})
	}
	st := s.dbOf(node).Storage[store]
	if st == nil {
		return fmt.Errorf("storage '%s' does not exist", store)
	}
	if !storageOnNode(st, node) {
		return fmt.Errorf("storage '%s' is not available on node '%s'", store, node)
	}
	if _, isSize := parseSize(vn); !isSize && vn != "cloudinit" {
		// An existing volume: check_storage_access and $check_drive_param.
		r, err := s.parseVolRef(node, f)
		if err != nil {
			return err
		}
		if r.vtype != "images" && r.vtype != "iso" {
			return errParams(map[string]string{key: "content type needs to be 'images' or 'iso'"})
		}
		if r.vtype == "iso" && !d.cdrom() {
			return errParams(map[string]string{key: "explicit 'media=cdrom' is required for iso images"})
		}
	}
	if _, isSize := parseSize(vn); (isSize || vn == "cloudinit") && !st.hasContent("images") && !d.cdrom() {
		return fmt.Errorf("storage '%s' does not support content type 'images'", store) // reconstruction
	}
	return nil
}

// efiDiskSize is what create_efidisk (QemuServer/OVMF.pm) records for an
// EFI vars disk: the OVMF vars image copied in, sized by
// volume_size_info. Reconstruction: the image sizes are those of
// pve-edk2-firmware's OVMF_VARS_4M.fd (528 KiB) and OVMF_VARS.fd (128 KiB,
// efitype 2m, the default); LVM volumes are whole 4 MiB extents (LVM's
// default extent size); the ms-cert key PVE 9 adds with pre-enrolled keys
// is not simulated.
func efiDiskSize(st *Storage, efitype string) int64 {
	size := int64(128 << 10)
	if efitype == "4m" {
		size = 528 << 10
	}
	if st.Type == "lvm" || st.Type == "lvmthin" {
		const extent = 4 << 20
		size = (size + extent - 1) / extent * extent
	}
	return size
}

// cloudinitRequestElsewhere is create_disks' has_cloudinit check for a
// "store:cloudinit" value of key: the first other drive key of confs (the
// config, its pending section, the drives made so far) that holds a
// cloud-init drive, or "". The key itself does not count (has_cloudinit's
// $skip): sending it again goes on to the allocation, which fails there.
func cloudinitRequestElsewhere(key, value string, confs ...map[string]string) string {
	if _, vn, ok := volumeID(parseDrive(value).file()); !ok || vn != "cloudinit" {
		return ""
	}
	for _, c := range confs {
		for _, k := range slices.Sorted(maps.Keys(c)) {
			if k != key && isDriveKey(k) && !strings.HasPrefix(k, "unused") && parseDrive(c[k]).cloudinit() {
				return k
			}
		}
	}
	return ""
}

// createDrive is create_disks for one option: "store:32" allocates a 32 GiB
// volume, "store:cloudinit" the cloud-init drive; others are kept.
func (s *Sim) createDrive(node string, vmid int, key, v string) (string, error) {
	d := parseDrive(v)
	store, vn, ok := volumeID(d.file())
	if !ok {
		return v, nil
	}
	st := s.dbOf(node).Storage[store]
	if st == nil {
		return "", fmt.Errorf("storage '%s' does not exist", store)
	}
	if vn == "cloudinit" {
		volid, err := s.allocCloudinitLocked(node, st, vmid, d.props.get("format"))
		if err != nil {
			return "", err
		}
		d.props.set("file", volid)
		d.props.set("media", "cdrom")
		d.props.del("format") // "no longer needed"
		return d.print(), nil
	}
	gib, err := strconv.ParseFloat(vn, 64)
	if err != nil || d.cdrom() {
		// An existing volume: activate_volumes and volume_size_info fail
		// on a missing one (a template's ISO that is not there, K2-style
		// typos): the create or update fails with it.
		if err := s.missingVolume(node, d.file()); err != nil {
			return "", err
		}
		if d.cdrom() && d.props.get("size") == "" {
			// volume_size_info gives an ISO its size= too.
			if st := s.dbOf(node).Storage[store]; st != nil {
				if f, err := s.fileVolumeLocked(node, st, d.file()); err == nil && f != nil {
					d.props.set("size", formatSize(f.Size))
					return d.print(), nil
				}
			}
		}
		if !d.cdrom() {
			if vol, _, err := s.volumeLocked(node, d.file()); err == nil && d.props.get("size") == "" {
				d.props.set("size", formatSize(vol.Size))
				return d.print(), nil
			}
		}
		return v, nil
	}
	size := int64(gib * (1 << 30))
	switch key {
	case "efidisk0":
		size = efiDiskSize(st, d.props.get("efitype"))
	case "tpmstate0":
		size = 4 << 20 // TPMSTATE_DISK_SIZE (QemuServer/Drive.pm), whatever size was asked
	}
	volid, err := s.allocVolumeLocked(node, st, vmid, size, d.props.get("format"))
	if err != nil {
		return "", err
	}
	d.props.set("file", volid)
	delete(d.props.vals, "format")
	d.props.keys = slices.DeleteFunc(d.props.keys, func(k string) bool { return k == "format" })
	d.props.set("size", formatSize(size))
	return d.print(), nil
}

// ---- config updates ----

// configUpdate is one PUT/POST config request, parsed and checked before
// any lock ($update_vm_api's early part).
type configUpdate struct {
	node    string
	vmid    int
	set     map[string]string
	deletes []string
	revert  []string
	digest  string
	force   bool
	params  []string // for the log line
}

var configMeta = []string{"node", "vmid", "digest", "delete", "revert", "force", "skiplock", "background_delay",
	"skip_cloud_init", "import-working-storage"}

func (s *Sim) parseConfigUpdate(rc *reqCtx) (*configUpdate, error) {
	u := &configUpdate{node: rc.node, vmid: rc.vmid(), set: map[string]string{}, digest: rc.str("digest"), force: rc.boolean("force")}
	for k, v := range rc.params {
		if slices.Contains(configMeta, k) {
			continue
		}
		u.set[k] = paramString(v)
	}
	for _, k := range slices.Sorted(maps.Keys(u.set)) {
		v := u.set[k]
		if k == "cipassword" {
			v = "<hidden>"
		}
		u.params = append(u.params, "-"+k, v)
	}
	if pw, ok := u.set["cipassword"]; ok && !cryptedRe.MatchString(pw) {
		u.set["cipassword"] = cryptPassword(pw) // an update stores it hashed (encrypt_pw)
	}
	if k, ok := u.set["cdrom"]; ok {
		u.set["ide2"] = k + ",media=cdrom"
		delete(u.set, "cdrom")
	}
	if keys, ok := u.set["sshkeys"]; ok {
		if err := checkSSHKeys(keys); err != nil {
			return nil, err
		}
	}
	u.revert = pveSplit(rc.str("revert"))
	for _, k := range pveSplit(rc.str("delete")) {
		if k == "cdrom" {
			k = "ide2"
		}
		if _, ok := u.set[k]; ok {
			return nil, errParams(map[string]string{"delete": fmt.Sprintf("you can't use '-%s' and -delete %s' at the same time", k, k)})
		}
		u.deletes = append(u.deletes, k)
	}
	if len(u.set) == 0 && len(u.deletes) == 0 && len(u.revert) == 0 {
		return nil, fmt.Errorf("no options specified")
	}
	for k, v := range u.set {
		if isDriveKey(k) {
			if err := s.checkNewDrive(rc.node, k, v); err != nil {
				return nil, err
			}
		}
		if isNetKey(k) {
			u.set[k] = normaliseNet(v) // a new MAC unless one is given (K16)
		}
	}
	return u, nil
}

// cryptedRe is qemu-server's test for an already hashed password.
var cryptedRe = regexp.MustCompile(`^\$(?:[156]|2[ay])(\$.+){2}`)

// cryptPassword stands in for PVE::Tools::encrypt_pw (crypt(3) SHA-512):
// same shape, not a real crypt hash (reconstruction) — the lab only needs
// the password gone from the file.
func cryptPassword(pw string) string {
	salt := randomHex(8)
	sum := sha512.Sum512([]byte(salt + pw))
	return "$6$" + salt + "$" + base64.RawStdEncoding.EncodeToString(sum[:])
}

func pveSplit(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\x00' })
}

// loadAndCheck is $load_and_check_config.
func (s *Sim) loadAndCheck(db *ConfigDB, u *configUpdate, skiplock bool) (*qmConf, error) {
	c, err := s.loadQmConfLocked(db, u.node, u.vmid)
	if err != nil {
		return nil, err
	}
	if u.digest != "" && u.digest != c.Digest {
		return nil, fmt.Errorf("checksum mismatch (file change by other user?)")
	}
	if !skiplock {
		if err := checkLock(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// applyUpdateLocked is $updatefn: changes go to [PENDING]; a stopped VM
// applies them at once, a running one hotplugs what it can (K10: a NIC is
// unplugged and plugged again) and keeps the rest pending. Disks keep their
// volumes as unusedN when replaced or removed (qemudisks.go).
func (s *Sim) applyUpdateLocked(db *ConfigDB, u *configUpdate, c *qmConf, logf func(string, ...any)) error {
	logf("update VM %d: %s", u.vmid, strings.Join(u.params, " "))
	if err := s.etcPveWritableLocked(db, guestConfPath(u.node, "qemu-server", u.vmid)); err != nil {
		return err
	}
	node, vmid := u.node, u.vmid
	order := bootOrder(c.Keys["boot"])
	bootDeleted := slices.Contains(u.deletes, "bootorder")
	// modified is $modified: the keys of this request, the only ones a
	// running VM's hotplug tries (vmconfig_hotplug_pending's $selection);
	// what earlier requests left pending stays so.
	modified := map[string]bool{}
	for k := range u.set {
		modified[k] = true
	}
	for _, k := range u.deletes {
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
				return pveDie("can't remove unused disk '%s' - protection mode enabled", parseDrive(val).file())
			}
			ok, err := s.tryDeallocateDriveLocked(node, vmid, c, k, val, false)
			if err != nil {
				return err
			}
			if ok {
				delete(c.Keys, k)
			}
			continue
		case isDriveKey(k):
			if c.Keys["protection"] == "1" {
				return pveDie("can't remove drive '%s' - protection mode enabled", k)
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
	for _, k := range u.revert {
		delete(c.Pending, k)
		c.PendingDelete = slices.DeleteFunc(c.PendingDelete, func(d string) bool { return strings.TrimPrefix(d, "!") == k })
	}
	for _, k := range slices.Sorted(maps.Keys(u.set)) {
		v := u.set[k]
		if pv, ok := c.Pending[k]; ok && pv == v {
			continue // skip if nothing changed
		}
		if k == "cipassword" {
			c.Keys[k] = v // written to the config at once, never pending
			continue
		}
		if isDriveKey(k) {
			if at := cloudinitRequestElsewhere(k, v, c.Keys, c.Pending); at != "" {
				return pveDie("%s - cloud-init drive is already attached at '%s'", k, at)
			}
			if pv, ok := c.Pending[k]; ok {
				if err := s.registerUnusedDriveLocked(node, vmid, c, pv, logf); err != nil {
					return err
				}
			}
			nv, err := s.createDrive(node, vmid, k, v)
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
	if !s.runningLocked(node, vmid) {
		if errs := s.applyPendingLocked(node, vmid, c, logf); errs != nil {
			s.writeQmConfLocked(db, node, vmid, c)
			s.saveLocked()
			return errParams(errs) // raised after the write, as for a running VM
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
			if !modified[k] && !(slices.Contains(fastPlug, k) || isIPConfig(k)) {
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
		dropReusedUnused(c)
		if len(errs) > 0 {
			s.writeQmConfLocked(db, node, vmid, c)
			s.saveLocked()
			return errParams(errs)
		}
	}
	s.writeQmConfLocked(db, node, vmid, c)
	s.saveLocked()
	return nil
}

// hotplugProblem is vmconfig_hotplug_pending's $add_error: the die of one
// option, prefixed, with its newline (raise_param_exc keeps it).
func hotplugProblem(err error) string {
	msg := err.Error()
	var ae *APIError
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
	var ae *APIError
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
func (s *Sim) configUpdateRequest(rc *reqCtx) (u *configUpdate, skiplock bool, err error) {
	if u, err = s.parseConfigUpdate(rc); err != nil {
		return nil, false, err
	}
	if skiplock, err = rc.skiplock(); err != nil {
		return nil, false, err
	}
	// update_vm_api's checks before $load_and_check_config (qemuperm.go).
	db := rc.db()
	if err := checkVMModifyConfigPerm(db, rc.who, u.vmid, "", u.deletes); err != nil {
		return nil, false, err
	}
	if err := checkVMModifyConfigPerm(db, rc.who, u.vmid, "", slices.Sorted(maps.Keys(u.set))); err != nil {
		return nil, false, err
	}
	if err := checkStorageAccessNew(db, rc.who, u.set, ""); err != nil {
		return nil, false, err
	}
	if err := checkBridgeAccess(db, rc.who, u.set); err != nil {
		return nil, false, err
	}
	if _, err := s.loadAndCheck(db, u, skiplock); err != nil {
		return nil, false, err
	}
	return u, skiplock, nil
}

// PUT /nodes/{node}/qemu/{vmid}/config: synchronous, under the config lock.
func (s *Sim) putQemuConfig(rc *reqCtx) (any, error) {
	db := rc.db()
	u, skiplock, err := s.configUpdateRequest(rc)
	if err != nil {
		return nil, err
	}
	return s.withGuestLockLocked(rc.node, u.vmid, func() (any, error) {
		c, err := s.loadAndCheck(db, u, skiplock)
		if err != nil {
			return nil, err
		}
		return nil, s.applyUpdateLocked(db, u, c, func(string, ...any) {})
	})
}

// POST /nodes/{node}/qemu/{vmid}/config: the same in a qmconfig task.
func (s *Sim) postQemuConfig(rc *reqCtx) (any, error) {
	db := rc.db()
	u, skiplock, err := s.configUpdateRequest(rc)
	if err != nil {
		return nil, err
	}
	return s.guestLockTask(rc, u.node, "qmconfig", u.vmid, func(t *taskRun) string {
		c, err := s.loadAndCheck(db, u, skiplock)
		if err == nil {
			err = s.applyUpdateLocked(db, u, c, func(f string, a ...any) { t.task.Log = append(t.task.Log, fmt.Sprintf(f, a...)) })
		}
		if err != nil {
			return taskError(err)
		}
		return ""
	}), nil
}

// underGuestLock runs f in a task holding vmid's config lock, waiting up to
// d; the task takes the lab's task duration inside the lock.
func (s *Sim) underGuestLock(t *taskRun, node string, vmid int, d time.Duration, f func() string) string {
	key := guestLockKey(node, vmid)
	if !s.acquire(key, false, d) {
		return errLockTimeout(guestLockFile(vmid)).Error()
	}
	defer s.release(key, false)
	if !s.sleep(s.cfg.dur(s.cfg.TaskDuration, DefaultTaskDuration)) {
		return "unexpected status"
	}
	s.mu.Lock()
	died := t.diedLocked()
	s.mu.Unlock()
	if died {
		return "unexpected status" // the node lost power: the work never happened
	}
	return f()
}

// ---- power ----

// POST status/start: qmstart task; vm_start's checks run in the worker.
func (s *Sim) postQemuStart(rc *reqCtx) (any, error) {
	if upid, ok := s.haPowerLocked(rc, "hastart", "started"); ok {
		return upid, nil
	}
	return s.powerTask(rc, "qmstart", func(c *qmConf, running bool) (string, bool) {
		if c.isTemplate() {
			return "you can't start a vm if it's a template", false
		}
		if err := checkLock(c); err != nil && !rc.boolean("skiplock") {
			return err.Error(), false
		}
		if running {
			return fmt.Sprintf("VM %d already running", rc.vmid()), false
		}
		return "", true
	})
}

// POST status/stop and status/shutdown: stopping a stopped VM is no error.
func (s *Sim) postQemuStop(rc *reqCtx) (any, error)     { return s.qemuHalt(rc, "qmstop") }
func (s *Sim) postQemuShutdown(rc *reqCtx) (any, error) { return s.qemuHalt(rc, "qmshutdown") }

func (s *Sim) qemuHalt(rc *reqCtx, typ string) (any, error) {
	if upid, ok := s.haPowerLocked(rc, "hastop", "stopped"); ok {
		return upid, nil
	}
	return s.powerTask(rc, typ, func(c *qmConf, running bool) (string, bool) {
		if err := checkLock(c); err != nil && !rc.boolean("skiplock") {
			return err.Error(), false
		}
		return "", false
	})
}

// haPowerLocked turns a start/stop of an HA-managed VM into a request to
// the HA stack (qemu-server Qemu.pm vm_start/vm_stop: hastart/hastop, H4).
func (s *Sim) haPowerLocked(rc *reqCtx, typ, state string) (string, bool) {
	db := rc.db()
	vmid := rc.vmid()
	if s.assertOnNodeLocked(db, rc.node, vmid) != nil {
		return "", false
	}
	if _, managed := s.haManagedLocked(db, vmid); !managed {
		return "", false
	}
	return s.haRequestTask(rc, typ, vmid, state), true
}

// powerTask runs a start/stop task under the config lock; decide returns an
// error text, or the new running state. A started VM applies its pending
// changes (they were waiting for the restart).
func (s *Sim) powerTask(rc *reqCtx, typ string, decide func(c *qmConf, running bool) (string, bool)) (any, error) {
	db := rc.db()
	vmid := rc.vmid()
	if _, err := rc.skiplock(); err != nil {
		return nil, err
	}
	if err := s.assertOnNodeLocked(db, rc.node, vmid); err != nil {
		return nil, err
	}
	if err := s.requireQuorumLocked(db); err != nil {
		return nil, err
	}
	node := rc.node
	return s.guestLockTask(rc, node, typ, vmid, func(t *taskRun) string {
		c, err := s.loadQmConfLocked(db, node, vmid)
		if err != nil {
			return err.Error()
		}
		msg, on := decide(c, s.runningLocked(node, vmid))
		if msg != "" {
			return msg
		}
		if on && (len(c.Pending) > 0 || len(c.PendingDelete) > 0) {
			// vm_start: vmconfig_apply_pending; its errors are warnings.
			errs := s.applyPendingLocked(node, vmid, c, t.logf0)
			for _, k := range slices.Sorted(maps.Keys(errs)) {
				t.logf0("%s", strings.TrimRight(errs[k], "\n")) // warn $err_msg
			}
			s.writeQmConfLocked(db, node, vmid, c)
		}
		if on {
			// QEMU's launch plugs every NIC into its bridge.
			if msg := s.startNICsLocked(node, vmid, c, t.logf0); msg != "" {
				s.saveLocked()
				return msg
			}
			// The cloud-init ISO is generated at every start, its custom
			// snippets read then (S4).
			if err := s.checkCloudinitSnippetsLocked(node, c); err != nil {
				s.saveLocked()
				return err.Error()
			}
		}
		s.setRunningLocked(node, vmid, on)
		s.saveLocked()
		return ""
	}), nil
}

// ---- template, resize, destroy ----

// POST /nodes/{node}/qemu/{vmid}/template: qemu-server's template API
// (API2/Qemu.pm, PVE 8 and 9; reconstructed, snapshots not simulated):
// $load_and_check runs before the answer (check_lock, "you can't convert
// a template to a template", "... if VM is running": a 500, no task),
// then the qmtemplate worker, started by the caller's user, takes the
// guest's config lock, runs the same checks again, writes template: 1 and
// template_create turns every volume that is not a CD-ROM (the cloud-init
// drive is one) into a base volume (create_base), writing the config
// after each.
func (s *Sim) postQemuTemplate(rc *reqCtx) (any, error) {
	db := rc.db()
	vmid := rc.vmid()
	node := rc.node
	check := func() (*qmConf, error) {
		c, err := s.loadQmConfLocked(db, node, vmid)
		if err != nil {
			return nil, err
		}
		if err := checkLock(c); err != nil {
			return nil, err
		}
		if c.isTemplate() {
			return nil, fmt.Errorf("you can't convert a template to a template")
		}
		if s.runningLocked(node, vmid) {
			return nil, fmt.Errorf("you can't convert a VM to template if VM is running")
		}
		return c, nil
	}
	if _, err := check(); err != nil {
		return nil, err
	}
	return s.guestLockTask(rc, node, "qmtemplate", vmid, func(*taskRun) string {
		c, err := check()
		if err != nil {
			return err.Error()
		}
		c.Keys["template"] = "1"
		s.writeQmConfLocked(db, node, vmid, c)
		for _, k := range slices.Sorted(maps.Keys(c.Keys)) {
			if !isDriveKey(k) {
				continue
			}
			d := parseDrive(c.Keys[k])
			if d.cdrom() || d.cloudinit() {
				continue
			}
			if _, _, err := s.volumeLocked(node, d.file()); err != nil || isBase(d.file()) {
				continue
			}
			nb, err := s.makeBaseLocked(node, d.file())
			if err != nil {
				s.saveLocked()
				return err.Error()
			}
			d.props.set("file", nb)
			c.Keys[k] = d.print()
			s.writeQmConfLocked(db, node, vmid, c)
		}
		s.saveLocked()
		return ""
	}), nil
}

// PUT /nodes/{node}/qemu/{vmid}/resize: a "resize" task since qemu-server
// 8.0; grow only (K11).
func (s *Sim) putQemuResize(rc *reqCtx) (any, error) {
	db := rc.db()
	vmid, node := rc.vmid(), rc.node
	disk, sizeStr, digest := rc.str("disk"), rc.str("size"), rc.str("digest")
	skiplock, err := rc.skiplock()
	if err != nil {
		return nil, err
	}
	return s.guestLockTask(rc, node, "resize", vmid, func(t *taskRun) string {
		c, err := s.loadQmConfLocked(db, node, vmid)
		if err != nil {
			return err.Error()
		}
		if digest != "" && digest != c.Digest {
			return "checksum mismatch (file change by other user?)"
		}
		if err := checkLock(c); err != nil && !skiplock {
			return err.Error()
		}
		v, ok := c.Keys[disk]
		if !ok {
			return fmt.Sprintf("disk '%s' does not exist", disk)
		}
		d := parseDrive(v)
		if d.cdrom() {
			return "you can't resize a cdrom"
		}
		vol, _, err := s.volumeLocked(node, d.file())
		if err != nil {
			return fmt.Sprintf("Could not determine current size of volume '%s'", d.file())
		}
		rel := strings.HasPrefix(sizeStr, "+")
		n, ok := parseSize(strings.TrimPrefix(sizeStr, "+"))
		if !ok {
			return "internal error"
		}
		if rel {
			n += vol.Size
		}
		if n < vol.Size {
			return "shrinking disks is not supported"
		}
		if n == vol.Size {
			return ""
		}
		t.task.Log = append(t.task.Log, fmt.Sprintf("update VM %d: resize --disk %s --size %s", vmid, disk, sizeStr))
		if err := s.resizeVolumeLocked(node, d.file(), n); err != nil {
			return err.Error()
		}
		d.props.set("size", formatSize(n))
		c.Keys[disk] = d.print()
		s.writeQmConfLocked(db, node, vmid, c)
		s.saveLocked()
		return ""
	}), nil
}

// purgeGuestLocked is destroy_vm's purge, the same for a VM and a CT:
// ReplicationConfig::remove_vmid_jobs, VZDump remove_vmid_from_backup_jobs,
// and HA::Config::delete_service_from_config (typ "vm" or "ct").
func (s *Sim) purgeGuestLocked(db *ConfigDB, t *taskRun, typ string, vmid int) {
	s.removeFromBackupJobsLocked(db, vmid)
	list, _ := s.readSectionsLocked(db, replicationCfg)
	s.writeSectionsLocked(db, replicationCfg, slices.DeleteFunc(list, func(j *section) bool {
		g, _ := parseReplID(j.ID)
		return g == vmid
	}))
	res, _ := s.haResourcesLocked(db)
	if findResource(res, fmt.Sprintf("%s:%d", typ, vmid)) != nil {
		s.writeSectionsLocked(db, haResourcesCfg, slices.DeleteFunc(res, func(r *section) bool {
			return r.Type == typ && r.ID == strconv.Itoa(vmid)
		}))
		t.task.Log = append(t.task.Log, fmt.Sprintf("NOTE: removed %s %d from HA resource configuration.", map[string]string{"vm": "VM", "ct": "CT"}[typ], vmid))
	}
}

// DELETE /nodes/{node}/qemu/{vmid}: qmdestroy task; frees the VM's volumes
// (not a linked clone's base) and removes the config last.
func (s *Sim) deleteQemu(rc *reqCtx) (any, error) {
	db := rc.db()
	vmid, node := rc.vmid(), rc.node
	if _, err := rc.skiplock(); err != nil {
		return nil, err
	}
	early := func() error {
		c, err := s.loadQmConfLocked(db, node, vmid)
		if err != nil {
			return err
		}
		if c.Keys["protection"] == "1" {
			return fmt.Errorf("can't remove VM %d - protection mode enabled", vmid)
		}
		if s.haConfiguredLocked(db, vmid) && !rc.boolean("purge") {
			return pveDie("unable to remove VM %d - used in HA resources and purge parameter not set.", vmid)
		}
		if !rc.boolean("purge") {
			// ReplicationConfig.pm check_for_existing_jobs
			if jobs := s.replicationJobsOf(db, vmid); len(jobs) > 0 {
				return pveDie("There is a replication job '%s' for guest '%d' - Please remove that first.", jobs[0], vmid)
			}
		}
		if s.runningLocked(node, vmid) {
			return fmt.Errorf("VM %d is running - destroy failed", vmid)
		}
		return nil
	}
	if err := early(); err != nil {
		return nil, err
	}
	return s.guestLockTask(rc, node, "qmdestroy", vmid, func(t *taskRun) string {
		if err := early(); err != nil {
			return err.Error()
		}
		c, _ := s.loadQmConfLocked(db, node, vmid)
		if err := checkLock(c); err != nil && !rc.boolean("skiplock") {
			return err.Error()
		}
		if err := s.assertBaseUnusedLocked(node, c); err != nil {
			return err.Error()
		}
		s.destroyVolumesLocked(node, vmid, c, rc.boolean("destroy-unreferenced-disks"), t.logf0)
		// destroy_vm leaves a "lock: destroyed" config until the end.
		s.writeQmConfLocked(db, node, vmid, &qmConf{Keys: map[string]string{"lock": "destroyed"}})
		dropFromPoolsLocked(db, vmKind, vmid)
		if rc.boolean("purge") {
			t.task.Log = append(t.task.Log, fmt.Sprintf("purging VM %d from related configurations..", vmid))
			s.purgeGuestLocked(db, t, "vm", vmid)
		}
		s.removeEtcPve(db, guestConfPath(node, "qemu-server", vmid))
		s.saveLocked()
		return ""
	}), nil
}
