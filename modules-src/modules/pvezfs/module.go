// Package pvezfs is the pve_zfs module: one ZFS pool on a Proxmox VE node,
// created on stable device names, never over existing data, never rebuilt.
//
// Observe → plan → apply → verify, in stages:
//
//  1. pool: an existing pool is detected first (Z1). Absent: devices are
//     resolved to /dev/disk/by-id (Z2) and probed with blkid; a device with
//     any signature is refused, naming it (Z3), unless wipe_signatures is
//     set (never for a device of an imported pool); then zpool create with
//     ashift and the create-time properties (Z4) and -m /POOL (Z5).
//     Present: ashift and layout are compared and a difference is a failure
//     that explains why nothing is rebuilt (Z4).
//  2. properties: changeable properties and the mountpoint converge with
//     zfs set on every run (Z5).
//  3. scrub: the zfs-scrub-monthly@POOL.timer is enabled and started (Z6).
package pvezfs

import (
	"context"
	"sync"
	"time"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/host"
	"github.com/gopve/proxmox/modules-src/host/systemd"
)

// Env is what the module touches on the node.
type Env struct {
	Root   host.Root
	Runner host.Runner
}

// Module is pve_zfs as it runs on a node.
func Module() ansible.Module {
	return New(func(*ansible.Run) Env { return Env{Root: "/", Runner: &host.ExecRunner{}} })
}

// DefaultProperties are the create-time dataset properties of the seed's
// role (Z4): lz4 is nearly free, atime=off saves writes, xattr=sa and
// posixacl are what LXC containers expect.
func DefaultProperties() map[string]string {
	return map[string]string{"compression": "lz4", "atime": "off", "xattr": "sa", "acltype": "posixacl"}
}

// New builds the module with a custom environment (tests).
func New(env func(*ansible.Run) Env) ansible.Module {
	return ansible.Module{
		Name:             "pve_zfs",
		ShortDescription: "A ZFS pool on a Proxmox VE node: created on stable device names, never over data, never rebuilt",
		Description: []string{
			"Creates a ZFS pool from one or more disks, addressed by their stable /dev/disk/by-id names, with ashift and the usual create-time properties, mounted at /<name>, and enables its monthly scrub timer.",
			"A disk that carries any signature (partition table, filesystem, old pool label) is refused, naming it, unless wipe_signatures is set. A disk of an imported pool is always refused.",
			"On an existing pool nothing is created or destroyed: changeable properties and the mountpoint converge, and a pool that is not mounted is mounted; a different ashift or layout fails with an explanation. A mountpoint directory that holds files is refused before anything is written (zfs could not mount there).",
			"Only creates the pool: declare it as Proxmox storage later, cluster-wide (pve_storage), because joining a cluster replaces the node's storage.cfg. Use the same pool name on every node: replication needs it.",
		},
		Notes: []string{
			"mountpoint=none (or legacy) breaks LXC: container volumes are datasets Proxmox VE must mount. It is refused unless allow_unmounted is set.",
			"ashift cannot change after creation; the module reads it back and fails instead of rebuilding.",
		},
		Requirements: []string{"zfsutils-linux (present on Proxmox VE)", "root on the node (become: true)"},
		Examples:     examples,
		Return:       returnDoc,
		Spec:         spec(),
		Timeout:      30 * time.Minute,
		Params:       params{},
		Run: func(r *ansible.Run) error {
			e := env(r)
			if r.CheckMode() {
				// write-free by construction: a write attempt fails the
				// task as a bug (host.WriteAttempt)
				e.Root = e.Root.ReadOnly()
				e.Runner = host.ReadOnly(e.Runner)
			}
			return run(r, e)
		},
	}
}

func spec() ansible.Spec {
	return ansible.Spec{
		Options: map[string]ansible.Option{
			"name": {Type: ansible.TypeStr, Required: true, Aliases: []string{"pool"},
				Description: []string{"Pool name. Use the same name on every node (replication needs it)."}},
			"state": {Type: ansible.TypeStr, Default: "present", Choices: []any{"present", "absent"},
				Description: []string{"present creates or converges the pool; absent destroys it, only with force_destroy, and disables its scrub timers."}},
			"devices": {Type: ansible.TypeList, Elements: ansible.TypeStr, Aliases: []string{"device"},
				Description: []string{"Disks of the pool: kernel names (/dev/nvme0n1) or /dev/disk/by-id links. Kernel names are resolved to the best by-id link (nvme-eui.*, wwn-* first; -part* links and _1 duplicates skipped). Required with state=present."}},
			"layout": {Type: ansible.TypeStr, Default: "single", Choices: []any{"single", "stripe", "mirror", "raidz1", "raidz2", "raidz3"},
				Description: []string{"single: one disk. stripe: several disks, no redundancy. mirror: all disks mirrored (≥2). raidz1/2/3: one raidz vdev (≥2, ≥3, ≥4 disks)."}},
			"ashift": {Type: ansible.TypeInt, Default: 12,
				Description: []string{"log2 of the sector size; 12 (4 KiB) suits every modern SSD. Fixed at creation."}},
			"properties": {Type: ansible.TypeDict, Default: map[string]any{},
				Description: []string{"Dataset properties of the pool's root dataset, merged over the defaults compression=lz4, atime=off, xattr=sa, acltype=posixacl. Set at creation and converged on existing pools. Names and values are checked before anything is planned (unknown names, values zfs refuses and read-only properties fail the task, in check mode too); sizes take units (recordsize: 1M, quota: 10G) and are compared with what zfs reads back in bytes."}},
			"mountpoint": {Type: ansible.TypeStr,
				Description: []string{"Mountpoint of the pool; default /<name>. none/legacy are refused unless allow_unmounted is set (LXC needs a mounted pool)."}},
			"allow_unmounted": {Type: ansible.TypeBool, Default: false,
				Description: []string{"Accept mountpoint none or legacy, knowing LXC containers on this pool will not work."}},
			"scrub": {Type: ansible.TypeStr, Default: "monthly", Choices: []any{"monthly", "weekly", "disabled"},
				Description: []string{"Which zfs-scrub-<period>@<name>.timer is enabled and started; the other one is disabled."}},
			"wipe_signatures": {Type: ansible.TypeBool, Default: false,
				Description: []string{"DESTRUCTIVE. Erase existing signatures (wipefs -a) on the devices before creating the pool. Without it, a device with any signature is refused. Devices of imported pools are refused regardless."}},
			"force_destroy": {Type: ansible.TypeBool, Default: false,
				Description: []string{"DESTRUCTIVE. Required for state=absent to destroy an existing pool and all its data."}},
		},
		Constraints: ansible.Constraints{
			RequiredIf: []ansible.RequiredIf{{Key: "state", Value: "present", Requirements: []string{"devices"}}},
		},
	}
}

type params struct {
	Name           string         `ansible:"name"`
	State          string         `ansible:"state"`
	Devices        []string       `ansible:"devices"`
	Layout         string         `ansible:"layout"`
	Ashift         int            `ansible:"ashift"`
	Properties     map[string]any `ansible:"properties"`
	Mountpoint     string         `ansible:"mountpoint"`
	AllowUnmounted bool           `ansible:"allow_unmounted"`
	Scrub          string         `ansible:"scrub"`
	Wipe           bool           `ansible:"wipe_signatures"`
	ForceDestroy   bool           `ansible:"force_destroy"`
}

// prefetch asks the node, at the same time, the facts a run reads that do
// not depend on each other: the pool and its disks (one `zpool list -v`),
// its dataset properties (`zfs get`) and the scrub timers (`systemctl
// show`). Each is a process start on the node; run side by side, a no-op
// run waits for the slowest instead of their sum (issue 24 §3). The
// answers go to the memo, where the stages find them; a prefetch that
// failed is asked again by its stage, which reports the error. An absent
// pool makes the `zfs get` a wasted read, which only a run that creates the
// pool pays. Nothing here writes, and the memo that holds these answers is
// stopped before the first change, so no read after a change is served
// from here (TestPrefetchedTimersReadAfterApply).
func (m *pool) prefetch(ctx context.Context) {
	units := []string{scrubUnit("monthly", m.p.Name), scrubUnit("weekly", m.p.Name)}
	reads := []func(){
		func() { m.zfs().Tree(ctx, m.p.Name) },
		func() { systemd.States(ctx, m.reads(), units...) },
	}
	if m.p.State != "absent" {
		reads = append(reads, func() { m.zfs().Props(ctx, m.p.Name, m.propKeys()) })
	}
	var wg sync.WaitGroup
	for _, read := range reads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			read()
		}()
	}
	wg.Wait()
}

func run(r *ansible.Run, e Env) error {
	var p params
	if err := r.Decode(&p); err != nil {
		return err
	}
	m := &pool{r: r, env: e, p: p, memo: host.NewMemo()}
	if err := m.validate(); err != nil {
		return err
	}
	// a hung read times out naming what it was doing
	r.Step("reading the pool, its properties and its scrub timers")
	m.prefetch(r.Context())
	if p.State == "absent" {
		err := r.Stage("destroy", m.stopMemoOnApply(m.planDestroy))
		m.report(context.Background())
		return err
	}
	for _, s := range []struct {
		name string
		fn   ansible.StageFunc
	}{{"pool", m.planPool}, {"properties", m.planProps}, {"scrub", m.planScrub}} {
		if err := r.Stage(s.name, m.stopMemoOnApply(s.fn)); err != nil {
			m.report(context.Background())
			return err
		}
	}
	m.report(r.Context())
	return nil
}
