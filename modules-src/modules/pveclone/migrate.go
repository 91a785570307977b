package pveclone

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
	"github.com/gopve/proxmox/modules-src/pveapi/ha"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
	"github.com/gopve/proxmox/modules-src/pveapi/replication"
)

// migration is one planned move of the VM to another node: a direct
// migrate (qemu-server's qmigrate task, offline or online), or, for a
// guest HA manages, a request to the HA manager, which moves it (H4).
type migration struct {
	from, to      string
	online        bool   // the VM runs: live migration
	localDisks    bool   // some volume is on storage the target does not share
	targetStorage string // where the local volumes go ("" = their own storage)
	ha            bool
	after         qemu.State // the VM on the target, as the config stage plans against it
}

// planMigration checks what PVE's migrate_vm and QemuMigrate's prepare and
// scan_local_volumes would refuse, read-only, against st (observed, or a
// clone's prediction), and plans the move. Nothing is sent before every
// refusal a read can decide has been ruled out (check mode alike).
func (v *vm) planMigration(ctx context.Context, st qemu.State, to, targetStorage string, stores map[string]storageInfo) (migration, error) {
	m := migration{from: st.Node, to: to, online: st.Running, ha: st.HA, targetStorage: targetStorage}
	if err := v.nodeExists(ctx, to); err != nil {
		return m, err
	}
	if l := st.Next.Lock(); l != "" {
		return m, fmt.Errorf("node: VM %d is locked (%s); PVE refuses to migrate it now (check_lock); nothing was changed", v.p.VMID, l)
	}
	if res := localDevices(st.Next); len(res) > 0 && !st.HA {
		return m, fmt.Errorf("node: can't migrate VM which uses local devices: %s (QemuMigrate prepare; only root's force overrides it, which this module never sends); nothing was changed", strings.Join(res, ", "))
	}
	if st.Running && !st.HA {
		if err := v.replicatedTo(ctx, to); err != nil {
			return m, err
		}
	}
	after := st
	after.Node = to
	after.Next = qemu.Config{Values: maps.Clone(st.Next.Values)}
	after.Live = qemu.Config{Values: maps.Clone(st.Live.Values)}
	disks, err := st.Next.Disks()
	if err != nil {
		return m, err
	}
	for _, k := range slices.Sorted(maps.Keys(disks)) {
		d := disks[k]
		moved, local, err := migrateVolume(k, d, to, targetStorage, stores, v.p.VMID)
		if err != nil {
			return m, err
		}
		m.localDisks = m.localDisks || local
		if moved != d.File {
			if err := remapDrive(&after, k, moved); err != nil {
				return m, err
			}
		}
	}
	if st.HA && targetStorage != "" && m.localDisks {
		return m, fmt.Errorf("storage: HA moves VM %d itself and takes no target storage (ha-manager migrate has none); its local disks keep their storage, so leave storage out or move the VM out of HA first; nothing was changed", v.p.VMID)
	}
	m.after = after
	return m, nil
}

// migrateVolume is scan_local_volumes for one drive: the volume it names
// on the target (mapped to targetStorage when local), whether it is local,
// or PVE's refusal.
func migrateVolume(key string, d qemu.Drive, to, targetStorage string, stores map[string]storageInfo, vmid int) (string, bool, error) {
	if d.File == "cdrom" {
		return "", false, fmt.Errorf("node: can't migrate local cdrom drive (%s uses the host's drive); nothing was changed", key)
	}
	store, volname, ok := strings.Cut(d.File, ":")
	if !ok || strings.HasPrefix(d.File, "/") {
		return d.File, false, nil // none, or a path (PVE's own checks decide)
	}
	st, known := stores[store]
	switch {
	case !known:
		return "", false, fmt.Errorf("node: %s is on storage '%s', which does not exist", key, store)
	case st.Shared:
		if !st.OnNode(to) {
			return "", false, fmt.Errorf("node: storage '%s' is not available on node '%s' (%s is on it); nothing was changed", store, to, key)
		}
		return d.File, false, nil
	case d.IsCDROM() && !d.IsCloudInit():
		return "", false, fmt.Errorf("node: can't migrate local disk '%s': local cdrom image (%s); eject it (%s: none) or keep the ISO on shared storage; nothing was changed", d.File, key, key)
	}
	if base, _, linked := strings.Cut(volname, "/vm-"); linked && strings.Contains(base, "base-") {
		return "", false, fmt.Errorf("node: can't migrate '%s' as it's a clone of '%s': a linked clone on local storage cannot leave its template's node (H8); nothing was changed", d.File, strings.TrimSuffix(base[strings.LastIndex(base, "base-"):], "/"))
	}
	dst := store
	if targetStorage != "" {
		dst = targetStorage
	}
	ds, known := stores[dst]
	switch {
	case !known:
		return "", true, fmt.Errorf("storage: storage '%s' does not exist; nothing was changed", dst)
	case !ds.OnNode(to):
		return "", true, fmt.Errorf("node: storage '%s' is not available on node '%s' (%s would land there); nothing was changed", dst, to, key)
	case !slices.Contains(ds.Content, "images"):
		return "", true, fmt.Errorf("storage: storage '%s' does not support vm images; nothing was changed", dst)
	}
	if dst == store {
		return d.File, true, nil
	}
	// storage_migrate keeps the disk's name on the new storage (the lab
	// alike; a clash there takes the next free name, which the read-back
	// then shows). Reconstruction: the name mapping follows the plugins'
	// naming (file storages: <vmid>/<name>.<format>).
	name := volname[strings.LastIndex(volname, "/")+1:]
	ext := ""
	if i := strings.LastIndex(name, "."); i > 0 {
		name, ext = name[:i], name[i+1:]
	}
	if ds.File() {
		if ext == "" {
			ext = "raw"
		}
		return fmt.Sprintf("%s:%d/%s.%s", dst, vmid, name, ext), true, nil
	}
	return dst + ":" + name, true, nil
}

func remapDrive(st *qemu.State, key, file string) error {
	for _, c := range []*qemu.Config{&st.Next, &st.Live} {
		raw, ok := c.Values[key]
		if !ok {
			continue
		}
		d, err := qemu.ParseDrive(key, raw)
		if err != nil {
			return err
		}
		d.File = file
		s, err := d.Render()
		if err != nil {
			return err
		}
		c.Values[key] = s
	}
	return nil
}

var localDeviceRe = regexp.MustCompile(`^(usb|hostpci|serial|parallel|virtiofs)\d+$`)

// localDevices is QemuMigrate/Helpers.pm check_local_resources without the
// resource mappings: devices that exist only on this node (a serial
// socket and a SPICE USB port are recreated on the target; a mapped
// device is left to PVE's mapping checks).
func localDevices(c qemu.Config) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(c.Values)) {
		val := c.Values[k]
		switch {
		case k == "ivshmem" || k == "hostusb" || k == "hostpci":
			out = append(out, k)
		case !localDeviceRe.MatchString(k):
		case strings.HasPrefix(k, "serial") && val == "socket":
		case strings.HasPrefix(k, "usb") && strings.EqualFold(strings.TrimPrefix(strings.Split(val, ",")[0], "host="), "spice"):
		case strings.Contains(val, "mapping="):
		default:
			out = append(out, k)
		}
	}
	return out
}

// replicatedTo is migrate_vm's refusal to live-migrate a replicated VM to a
// node that is not one of its replication targets.
func (v *vm) replicatedTo(ctx context.Context, to string) error {
	jobs, err := replication.Jobs(ctx, v.c)
	if err != nil {
		return fmt.Errorf("cannot read the replication jobs (PVE refuses to live-migrate a replicated VM to a node that is not a target): %w", err)
	}
	mine := replication.ForGuest(jobs, v.p.VMID)
	if len(mine) == 0 || slices.ContainsFunc(mine, func(j replication.Job) bool { return j.Target == to }) {
		return nil
	}
	return fmt.Errorf("node: Cannot live-migrate replicated VM to node '%s' - not a replication target. (PVE's refusal; this module never sends force: add a replication job to %s, or stop the VM first); nothing was changed", to, to)
}

// request is the write the migration sends: POST …/migrate at the VM's
// node, or the HA manager's migrate of its resource.
func (m migration) request(vmid int) apischema.Request {
	if m.ha {
		return ha.MigrateResource(ha.SID{Type: "vm", VMID: vmid}, m.to, false)
	}
	return qemu.Migrate{Node: m.from, Target: m.to, VMID: vmid, Online: m.online, WithLocalDisks: m.localDisks, TargetStorage: m.targetStorage}.Request()
}

func (m migration) how() string {
	switch {
	case m.ha:
		return "through HA"
	case m.online:
		return "online"
	}
	return "offline"
}

// migrateChange is the move as one change, one write: sent once, waited
// for until PVE reports the VM on the target (a task for a direct
// migration; the HA manager's rounds under HA), bounded by the deadline.
// A failure says where the VM is now, read back.
func (v *vm) migrateChange(m migration, why string) (ansible.Change, error) {
	req := m.request(v.p.VMID)
	if err := req.Validate(v.version); err != nil {
		return ansible.Change{}, v.schemaError(err)
	}
	summary := fmt.Sprintf("migrate VM %d from %s to %s (%s", v.p.VMID, m.from, m.to, m.how())
	if m.localDisks {
		summary += ", with its local disks"
		if m.targetStorage != "" {
			summary += " onto storage " + m.targetStorage
		}
	}
	summary += ")" + why
	return ansible.Change{
		ID:      "vm:migrate",
		Summary: summary,
		Diff:    ansible.TextDiff(fmt.Sprintf("VM %d", v.p.VMID), "node: "+m.from+"\n", "node: "+m.to+"\n"),
		Apply: func(ctx context.Context) error {
			_, err := v.send(ctx, write{req: req, what: fmt.Sprintf("migrate VM %d to %s", v.p.VMID, m.to),
				settle: func(ctx context.Context) (bool, error) { n, err := v.whereIs(ctx); return n == m.to, err }})
			if err == nil {
				err = v.waitOn(ctx, m.to)
			}
			if err != nil {
				return v.whereNow(ctx, m, err)
			}
			return nil
		},
		Verify: func(ctx context.Context) error { return v.verifyMoved(ctx, m) },
		Predict: func(w *ansible.World) {
			vmKey(v.p.VMID).Predict(w, m.after)
			v.node = m.to
		},
	}, nil
}

// whereIs reads the VM's node from the cluster's guest list.
func (v *vm) whereIs(ctx context.Context) (string, error) {
	guests, err := clusterguests.Guests(ctx, v.c)
	if err != nil {
		return "", err
	}
	g, ok := clusterguests.Find(guests, v.p.VMID)
	if !ok {
		return "", fmt.Errorf("VM %d is not in the cluster's guest list", v.p.VMID)
	}
	return g.Node, nil
}

// waitOn polls until PVE reports the VM on node, unlocked, and its config
// there: a direct migration renames the config at its end, the HA manager
// moves the guest a CRM round or two after the request.
func (v *vm) waitOn(ctx context.Context, node string) error {
	last := "not read yet"
	for {
		guests, err := clusterguests.Guests(ctx, v.c)
		if err == nil {
			g, ok := clusterguests.Find(guests, v.p.VMID)
			switch {
			case !ok:
				last = "not in the guest list"
			case g.Node != node:
				last = "on " + g.Node
			case g.Lock != "" || g.HAState == "migrate" || g.HAState == "relocate":
				last = fmt.Sprintf("on %s, lock %q, HA state %q", g.Node, g.Lock, g.HAState)
			default:
				return v.waitConfig(ctx, node)
			}
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("VM %d was not reported on %s before the deadline (last read: %s)", v.p.VMID, node, last)
		case <-time.After(v.poll):
		}
	}
}

// whereNow completes a failed migration's error with where the VM is, read
// back (a failed qmigrate leaves it on its node, "migration problems" on
// the target), so that the result's node is the truth.
func (v *vm) whereNow(ctx context.Context, m migration, err error) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	n, rerr := v.whereIs(rctx)
	if rerr != nil {
		return fmt.Errorf("%w; where VM %d is now could not be read: %v", err, v.p.VMID, rerr)
	}
	v.node = n
	var te *pveapi.TaskError
	made := ""
	if v.created {
		made = " (cloned by this run: it exists)"
	}
	switch {
	case n == m.to && errors.As(err, &te):
		return fmt.Errorf("%w; VM %d is on %s now%s: the move happened, its task failed after it (see task_log)", err, v.p.VMID, n, made)
	case n == m.to:
		return fmt.Errorf("%w; VM %d is on %s now%s", err, v.p.VMID, n, made)
	}
	return fmt.Errorf("%w; VM %d is still on %s%s, not on %s; a rerun with migrate_existing: true moves it", err, v.p.VMID, n, made, m.to)
}

// verifyMoved reads the VM back on the target: there, named as this task
// names it, unlocked; the config stage then plans against that read.
func (v *vm) verifyMoved(ctx context.Context, m migration) error {
	n, err := v.whereIs(ctx)
	if err != nil {
		return err
	}
	if n != m.to {
		v.node = n
		return fmt.Errorf("VM %d is on %s after its migration to %s", v.p.VMID, n, m.to)
	}
	if err := v.verifyPresent(ctx, m.to); err != nil {
		return err
	}
	v.node = m.to
	if v.read != nil {
		st, err := v.observe(ctx, m.to, v.read.Running, v.read.HA)
		if err != nil {
			return err
		}
		v.read = &st
	}
	return nil
}

// misplaced is the warning for an existing VM on another node than the
// task's, when migrate_existing is off: nothing moves by surprise.
func (v *vm) misplaced(g clusterguests.Guest) {
	v.r.Warn(fmt.Sprintf("node: VM %d is on node %s, not on %s as the task asks; it was not moved (migrate_existing: true migrates it%s)",
		v.p.VMID, g.Node, v.p.Node, map[bool]string{true: ", through HA", false: ""}[g.HAManaged()]))
}
