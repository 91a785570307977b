package pvecontainer

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
	"github.com/gopve/proxmox/modules-src/pveapi/guest"
	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// AssignedAtCreation stands, in check mode, for the MAC PVE draws for a
// new NIC (parse_lxc_network: a random BC:24:11 address); the marker is
// pveapi/qemu's, so pve_clone's and this module's check mode read alike.
const AssignedAtCreation = qemu.AssignedAtCreation

// planCreate runs create_vm's checks read-only (node, storages holding
// rootdir on the node, the template on its storage, the pool) and plans
// the one create call with the config pct create builds from it.
func (v *ct) planCreate(ctx context.Context) ([]ansible.Change, error) {
	if v.p.RestoreFrom != "" {
		return v.planRestore(ctx) // restore.go
	}
	switch {
	case v.p.Hostname == "":
		return nil, fmt.Errorf("hostname: required to create CT %d (the hostname is what proves on every later run that the container at the VMID is this task's, K1); nothing was changed", v.p.VMID)
	case v.p.OSTemplate == "":
		return nil, fmt.Errorf("ostemplate: required to create CT %d (a CT template volume, local:vztmpl/…), or restore_from (a backup volume); nothing was changed", v.p.VMID)
	case v.p.Node == "":
		return nil, fmt.Errorf("node: required to create CT %d; nothing was changed", v.p.VMID)
	}
	node := v.p.Node
	nodeAssumed, err := v.nodeReady(ctx, node)
	if err != nil {
		return nil, err
	}
	if v.storages, err = readStorages(ctx, v.c); err != nil {
		return nil, err
	}
	root := volWant{storage: "local", size: 4 << 30} // create_vm: "$storage:4" on storage local
	if v.w.rootfs != nil {
		if v.w.rootfs.storage != "" {
			root.storage = v.w.rootfs.storage
		}
		if v.w.rootfs.size != 0 {
			root.size = v.w.rootfs.size
		}
	}
	vols := map[string]volWant{"rootfs": root}
	maps.Copy(vols, v.w.mounts)
	for _, k := range volumeKeys(vols) {
		if err := v.checkStorage(node, k, vols[k], nodeAssumed); err != nil {
			return nil, err
		}
	}
	if err := v.checkTemplate(ctx, node, nodeAssumed); err != nil {
		return nil, err
	}
	if err := v.checkPool(ctx); err != nil {
		return nil, err
	}
	req, predicted, err := v.createRequest(node, vols)
	if err != nil {
		return nil, err
	}
	v.node = node
	return []ansible.Change{v.creation("ct:create", fmt.Sprintf("create CT %d (%s) on %s from %s", v.p.VMID, v.p.Hostname, node, v.p.OSTemplate),
		fmt.Sprintf("create CT %d", v.p.VMID), node, req, predicted)}, nil
}

// creation is the one write that makes the CT (a create or a restore: the
// same POST /nodes/{node}/lxc), settled by proof that the CT found is ours
// (its hostname), then waited for until its config is readable.
func (v *ct) creation(id, summary, what, node string, req apischema.Request, predicted qemu.Config) ansible.Change {
	return ansible.Change{
		ID:      id,
		Summary: summary,
		Diff:    ansible.TextDiff(confHeader(node, v.p.VMID), "", renderConf(predicted.Values)),
		Apply: func(ctx context.Context) error {
			if err := v.send(ctx, req, pveapi.Write{What: what, Settle: v.exists, Creates: true,
				Needs: fmt.Sprintf("VM.Allocate on /vms/%d (or on /pool/<pool> with pool)", v.p.VMID),
				Proof: guest.NameProof(v.c, guest.CT, v.p.VMID, "hostname", v.p.Hostname)}, ""); err != nil {
				return err
			}
			return v.waitConfig(ctx, node)
		},
		Verify: func(ctx context.Context) error { return v.verifyPresent(ctx, node) },
		Predict: func(w *ansible.World) {
			ctKey(v.p.VMID).Predict(w, qemu.State{Node: node, Next: predicted, Live: predicted})
		},
	}
}

// createRequest is POST /nodes/{node}/lxc with everything the task gives,
// and the config pve-container writes from it (predict.go).
func (v *ct) createRequest(node string, vols map[string]volWant) (apischema.Request, qemu.Config, error) {
	q := url.Values{"vmid": {strconv.Itoa(v.p.VMID)}, "ostemplate": {v.p.OSTemplate}, "hostname": {v.p.Hostname}}
	cfg := map[string]string{"hostname": v.p.Hostname, "arch": "amd64", "ostype": ostypeOf(v.p.OSTemplate)}
	settings := *v.w
	settings.rootfs, settings.mounts = nil, nil // allocated below, in create_disks' order
	plan, err := planSettings(qemu.Config{Values: map[string]string{}}, &settings, nil)
	if err != nil {
		return apischema.Request{}, qemu.Config{}, err
	}
	for k, val := range plan.set {
		q.Set(k, val)
		cfg[k] = plan.after[k]
	}
	createDefaults(cfg)
	counters := map[string]int{}
	name := v.nameVolume(counters)
	for _, k := range volumeKeys(vols) {
		vw := vols[k]
		alloc := append(pveformat.Props{{Key: "volume", Value: vw.storage + ":" + gib(vw.size)}}, vw.opts...)
		s, _ := pveformat.Print(alloc, volumeShape)
		q.Set(k, s)
		done := append(pveformat.Props{{Key: "volume", Value: name(k, vw.storage)}}, vw.opts...)
		done.Set("size", pveformat.FormatSize(vw.size))
		cfg[k], _ = pveformat.Print(done, volumeShape)
	}
	unpriv := v.version >= 9 // pve-container 6.0 (PVE 9): unprivileged unless told otherwise
	if v.w.unpriv != nil {
		unpriv = *v.w.unpriv
		q.Set("unprivileged", map[bool]string{true: "1", false: "0"}[unpriv])
	}
	if unpriv {
		cfg["unprivileged"] = "1" // written only when true
	}
	if v.p.Password != nil {
		q.Set("password", *v.p.Password)
	}
	if len(v.p.SSHKeys) > 0 {
		q.Set("ssh-public-keys", strings.Join(v.p.SSHKeys, "\n"))
	}
	if v.p.Pool != "" {
		q.Set("pool", v.p.Pool)
	}
	req := apischema.New(http.MethodPost, "/nodes/{node}/lxc", q, node)
	req.Task = &apischema.TaskHint{Node: node, Types: []string{"vzcreate"}, ID: strconv.Itoa(v.p.VMID)}
	if err := req.Validate(v.version); err != nil {
		return req, qemu.Config{}, v.schemaError(err)
	}
	return req, qemu.Config{Values: cfg}, nil
}

// volumeKeys is valid_volume_keys' order: rootfs, mp0, mp1, … — the order
// create_disks allocates in, so rootfs gets disk-0.
func volumeKeys(vols map[string]volWant) []string {
	keys := slices.Collect(maps.Keys(vols))
	slices.SortFunc(keys, func(a, b string) int {
		n := func(k string) int {
			if k == "rootfs" {
				return -1
			}
			i, _ := strconv.Atoi(strings.TrimPrefix(k, "mp"))
			return i
		}
		return n(a) - n(b)
	})
	return keys
}

// ostypeOf is the ostype pve-container detects in the template's files
// (LXC/Setup.pm, /etc/os-release): reconstruction from the template's
// name, which for the distributions' templates starts with it.
func ostypeOf(tmpl string) string {
	_, name, _ := strings.Cut(tmpl, "vztmpl/")
	for _, os := range []string{"debian", "ubuntu", "centos", "fedora", "alpine", "archlinux", "opensuse", "gentoo", "nixos"} {
		if strings.HasPrefix(name, os) {
			return os
		}
	}
	return "unmanaged"
}

// waitConfig waits, bounded by the run's deadline, until the new CT's
// config is on the node and unlocked (the vzcreate task holds lock
// create until the template is unpacked).
func (v *ct) waitConfig(ctx context.Context, node string) error {
	read := func(ctx context.Context) (qemu.Config, error) { return v.config(ctx, node) }
	return qemu.WaitUnlocked(ctx, guest.CT, v.p.VMID, node, read, v.after)
}

func (v *ct) verifyPresent(ctx context.Context, node string) error {
	read := func(ctx context.Context) (qemu.Config, error) { return v.config(ctx, node) }
	return qemu.VerifyCreated(ctx, guest.CT, v.p.VMID, node, read, "hostname", v.p.Hostname)
}

// config reads GET …/lxc/{vmid}/config (pending values applied).
func (v *ct) config(ctx context.Context, node string) (qemu.Config, error) {
	var raw map[string]any
	if err := v.c.Get(ctx, pveapi.Path("/nodes/%s/lxc/%s/config", node, strconv.Itoa(v.p.VMID)), nil, &raw); err != nil {
		return qemu.Config{}, err
	}
	return qemu.ConfigFrom(raw), nil
}
