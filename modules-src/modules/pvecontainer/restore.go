package pvecontainer

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// A missing container restored from a vzdump backup (restore_from), as
// `pct restore` does: POST /nodes/{node}/lxc with restore=1 and the backup
// as ostemplate, a vzrestore task (pve-container API2/LXC.pm create_vm,
// LXC/Create.pm). The call carries only what a restore needs — the
// hostname (the proof of ownership), storage, unprivileged and pool when
// given — and never force: an existing VMID is never overwritten (the
// container stage finds it and converges it as any other). In storage-only
// mode PVE re-creates the archive's rootfs and mount points, with their
// sizes, on `storage`; the archive's keys make the rest of the config.
// The config stage then converges the task's settings on that config as
// on an existing container (NICs merged key by key with the archive's MAC
// kept, volumes grown, new mount points added), so the restored config
// plus one PUT is the result, predicted the same way in check mode from
// GET /nodes/{node}/vzdump/extractconfig (a read).

var backupVolRe = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9\-_.]*):backup/vzdump-lxc-\d+-\S+$`)

// planRestore is planCreate for restore_from.
func (v *ct) planRestore(ctx context.Context) ([]ansible.Change, error) {
	switch {
	case v.p.Hostname == "":
		return nil, fmt.Errorf("hostname: required to restore CT %d (the hostname is what proves on every later run that the container at the VMID is this task's, K1); nothing was changed", v.p.VMID)
	case v.p.Node == "":
		return nil, fmt.Errorf("node: required to restore CT %d; nothing was changed", v.p.VMID)
	case v.p.Password != nil || len(v.p.SSHKeys) > 0:
		return nil, fmt.Errorf("password, ssh_public_keys: a restore does not set them (pve-container writes them into a container only when it creates one from a template; the backup's root filesystem keeps its own); nothing was changed")
	case !backupVolRe.MatchString(v.p.RestoreFrom):
		return nil, fmt.Errorf("restore_from: %q is not a container backup volume (storage:backup/vzdump-lxc-<vmid>-….tar.zst); nothing was changed", v.p.RestoreFrom)
	}
	node := v.p.Node
	nodeAssumed, err := v.nodeReady(ctx, node)
	if err != nil {
		return nil, err
	}
	if nodeAssumed {
		return nil, fmt.Errorf("restore_from: node %s does not exist yet, so the backup's configuration cannot be read there and the restored container cannot be predicted; nothing was changed", node)
	}
	if v.storages, err = readStorages(ctx, v.c); err != nil {
		return nil, err
	}
	storage := "local" // create_vm: storage defaults to local
	if v.w.rootfs != nil && v.w.rootfs.storage != "" {
		storage = v.w.rootfs.storage
	}
	if err := v.checkStorage(node, "rootfs", volWant{storage: storage}, false); err != nil {
		return nil, err
	}
	var raw string
	if err := v.c.Get(ctx, pveapi.Path("/nodes/%s/vzdump/extractconfig", node), url.Values{"volume": {v.p.RestoreFrom}}, &raw); err != nil {
		return nil, fmt.Errorf("restore_from: cannot read the configuration of %s on %s: %w; nothing was changed", v.p.RestoreFrom, node, err)
	}
	predicted, err := v.restoredConfig(raw, storage)
	if err != nil {
		return nil, err
	}
	if err := v.checkPool(ctx); err != nil {
		return nil, err
	}
	q := url.Values{"vmid": {strconv.Itoa(v.p.VMID)}, "ostemplate": {v.p.RestoreFrom}, "restore": {"1"},
		"storage": {storage}, "hostname": {v.p.Hostname}}
	if v.w.unpriv != nil {
		q.Set("unprivileged", map[bool]string{true: "1", false: "0"}[*v.w.unpriv])
	}
	if v.p.Pool != "" {
		q.Set("pool", v.p.Pool)
	}
	req := apischema.New(http.MethodPost, "/nodes/{node}/lxc", q, node)
	req.Task = &apischema.TaskHint{Node: node, Types: []string{"vzrestore"}, ID: strconv.Itoa(v.p.VMID)}
	if err := req.Validate(v.version); err != nil {
		return nil, v.schemaError(err)
	}
	v.node = node
	return []ansible.Change{v.creation("ct:restore", fmt.Sprintf("restore CT %d (%s) on %s from %s, its volumes on %s", v.p.VMID, v.p.Hostname, node, v.p.RestoreFrom, storage),
		fmt.Sprintf("restore CT %d", v.p.VMID), node, req, predicted)}, nil
}

// restoredConfig is the config create_vm writes from the backup's
// pct.conf (raw, as extractconfig returns it) and this task's call:
// sanitize_and_merge_config keeps the archive's keys but digest, rootfs,
// mpN, unusedN, unprivileged, parent, template (and the raw lxc.* keys a
// token never restores); the call's hostname wins; unprivileged is the
// call's or the archive's; the archive's rootfs and mount points are
// re-created on storage with their sizes and options, named as
// alloc_image names them there; hostname, memory and swap default as
// create_vm's "set some defaults".
func (v *ct) restoredConfig(raw, storage string) (qemu.Config, error) {
	keys, desc := parsePctConf(raw)
	if keys["template"] == "1" {
		return qemu.Config{}, fmt.Errorf("restore_from: %s is the backup of a template; restoring one is not done by this module; nothing was changed", v.p.RestoreFrom)
	}
	cfg := map[string]string{}
	for k, val := range keys {
		switch {
		case k == "digest", k == "rootfs", k == "unprivileged", k == "parent", k == "template",
			mountKeyRe.MatchString(k), strings.HasPrefix(k, "unused"):
			continue
		}
		cfg[k] = val
	}
	if v.w.unpriv != nil && !*v.w.unpriv && keys["unprivileged"] == "1" && !v.c.Pvesh() {
		delete(cfg, "features") // "changing from unprivileged to privileged, skipping features" (not root)
	}
	if desc != "" {
		cfg["description"] = desc
	}
	cfg["hostname"] = v.p.Hostname
	switch {
	case v.w.unpriv != nil && *v.w.unpriv, v.w.unpriv == nil && keys["unprivileged"] == "1":
		cfg["unprivileged"] = "1"
	}
	createDefaults(cfg)
	vols := map[string]volWant{}
	for k, val := range keys {
		if k == "rootfs" || mountKeyRe.MatchString(k) {
			p, err := pveformat.Parse(val, volumeShape)
			if err != nil {
				return qemu.Config{}, fmt.Errorf("restore_from: the backup's %s %q: %w", k, val, err)
			}
			vol, _ := p.Get("volume")
			if strings.HasPrefix(vol, "/") {
				return qemu.Config{}, fmt.Errorf("restore_from: the backup's %s is a bind or device mount point (%s), which a restore onto a storage cannot re-create; nothing was changed", k, vol)
			}
			size, _ := p.Get("size")
			n, err := pveformat.ParseSize(size)
			if err != nil || n <= 0 {
				return qemu.Config{}, fmt.Errorf("restore_from: the backup's %s has no size (PVE: unable to detect disk size); nothing was changed", k)
			}
			p.Del("volume")
			p.Del("size")
			vols[k] = volWant{storage: storage, size: n, opts: p}
		}
	}
	if _, ok := vols["rootfs"]; !ok {
		return qemu.Config{}, fmt.Errorf("restore_from: the backup's configuration has no rootfs (PVE: rootfs configuration could not be recovered); nothing was changed")
	}
	name := v.nameVolume(map[string]int{})
	for _, k := range volumeKeys(vols) {
		vw := vols[k]
		done := append(pveformat.Props{{Key: "volume", Value: name(k, vw.storage)}}, vw.opts...)
		done.Set("size", pveformat.FormatSize(vw.size))
		cfg[k], _ = pveformat.Print(done, volumeShape)
	}
	// Reconstruction, as the lab's: vzdump's pct.conf always carries arch
	// and ostype; without them amd64 and what Setup would detect.
	if cfg["arch"] == "" {
		cfg["arch"] = "amd64"
	}
	if cfg["ostype"] == "" {
		cfg["ostype"] = "unmanaged"
	}
	return qemu.Config{Values: cfg}, nil
}

var pctLineRe = regexp.MustCompile(`^([a-z][a-z_\-]*\d*):\s*(.*?)\s*$`)

// parsePctConf reads the main section of a pct.conf (parse_pct_config):
// "key: value" lines up to the first [snapshot] or [pve:pending] section,
// the leading "#" lines as the description (decode_text'd, each line
// ending in "\n" as GET …/config returns it).
func parsePctConf(raw string) (map[string]string, string) {
	keys := map[string]string{}
	var desc strings.Builder
	for _, line := range strings.Split(raw, "\n") {
		if strings.HasPrefix(line, "[") {
			break
		}
		if d, ok := strings.CutPrefix(line, "#"); ok {
			if s, err := url.PathUnescape(d); err == nil {
				d = s
			}
			desc.WriteString(d + "\n")
			continue
		}
		if m := pctLineRe.FindStringSubmatch(line); m != nil {
			keys[m[1]] = m[2]
		}
	}
	return keys, desc.String()
}
