package pveclone

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// as_template (issue 25 §2): the VM ends as a template. The conversion is
// its own stage after config and power, so it is the last write: PVE's
// template API (API2/Qemu.pm `template`) refuses a locked config, one
// with snapshots, a template, a running VM, then its qmtemplate worker
// sets template: 1 and runs template_create, which turns every volume
// that is not a CD-ROM (the cloud-init drive is one) into a base volume
// (pve-storage create_base: vm-<vmid>-disk-N → base-<vmid>-disk-N, the
// linked clone's base path kept in front).

// checkConvertible refuses, before any write, an existing VM PVE would
// refuse to convert at the end of the run: a running one the task does
// not stop (state: present leaves power alone), a locked one.
func (v *vm) checkConvertible(st qemu.State) error {
	if !v.p.AsTemplate || st.Next.Template() {
		return nil
	}
	if st.Running && v.p.State != "stopped" {
		return fmt.Errorf("as_template: VM %d is running on %s and PVE refuses to convert a running VM (\"you can't convert a VM to template if VM is running\"); state: %s leaves its power alone: give state: stopped to stop it first; nothing was changed", v.p.VMID, st.Node, v.p.State)
	}
	if l := st.Next.Lock(); l != "" {
		return fmt.Errorf("as_template: VM %d is locked (%s) and PVE refuses to convert a locked VM (check_lock); nothing was changed: rerun once the lock is gone", v.p.VMID, l)
	}
	return nil
}

// templateDrift is the config stage of a VM that is already a template:
// what differs from the task is named in a warning, nothing is sent (a
// template is left alone, its clones must not drift silently).
func (v *vm) templateDrift(st qemu.State) error {
	p, err := planSettings(st.Next, v.w, false)
	if err != nil {
		return err
	}
	if p.empty() {
		return nil
	}
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(p.set)) {
		if k == "cipassword" {
			keys = append(keys, k) // stored hashed: never compared, never shown
			continue
		}
		keys = append(keys, fmt.Sprintf("%s (is %q, the task gives %q)", k, st.Next.Values[k], p.set[k]))
	}
	for _, r := range p.resizes {
		keys = append(keys, fmt.Sprintf("%s size %s (the task gives at least %s)", r.disk, fmtSize(r.from), fmtSize(r.to)))
	}
	v.r.Warn(fmt.Sprintf("as_template: VM %d is a template and is left alone, nothing was sent; its config differs from this task's in %s", v.p.VMID, strings.Join(keys, "; ")))
	return nil
}

// planTemplate converts the VM, unless it is a template already.
func (v *vm) planTemplate(ctx context.Context, w *ansible.World) ([]ansible.Change, error) {
	st, err := vmKey(v.p.VMID).Get(ctx, w, func(ctx context.Context) (qemu.State, error) {
		if v.read != nil && v.read.Next.Template() {
			return *v.read, nil // already one: a rerun costs no read more
		}
		running, ha := false, false
		if v.read != nil {
			running, ha = v.read.Running && v.p.State != "stopped", v.read.HA
		}
		return v.observe(ctx, v.node, running, ha)
	})
	if err != nil {
		return nil, err
	}
	if st.Next.Template() {
		v.setFinal(st)
		return nil, nil
	}
	if st.Running {
		// Reached only when the VM started between the reads: PVE refuses.
		return nil, fmt.Errorf("as_template: VM %d is running on %s; PVE refuses to convert a running VM; give state: stopped", v.p.VMID, st.Node)
	}
	after, renamed, err := qemu.TemplateConfig(st.Next, v.p.VMID)
	if err != nil {
		return nil, err
	}
	req := qemu.Template(st.Node, v.p.VMID)
	if err := req.Validate(v.version); err != nil {
		return nil, v.schemaError(err)
	}
	summary := fmt.Sprintf("convert VM %d on %s to a template", v.p.VMID, st.Node)
	if len(renamed) > 0 {
		summary += " (base volumes: " + strings.Join(renamed, ", ") + ")"
	}
	node := st.Node
	return []ansible.Change{{
		ID:      "vm:template",
		Summary: summary,
		Diff:    ansible.TextDiff(confHeader(node, v.p.VMID), renderConf(st.Next.Values), renderConf(after.Values)),
		Apply: func(ctx context.Context) error {
			_, err := v.send(ctx, write{req: req, what: fmt.Sprintf("convert VM %d to a template", v.p.VMID), taskType: "qmtemplate",
				settle: func(ctx context.Context) (bool, error) {
					// qemu-server writes template: 1 first in its worker;
					// the task's end is then read from the node's task list.
					c, err := qemu.GetConfig(ctx, v.c, node, v.p.VMID, false)
					return err == nil && c.Template(), err
				}})
			return err
		},
		Verify: func(ctx context.Context) error {
			now, err := v.observe(ctx, node, false, st.HA)
			if err != nil {
				return err
			}
			v.setFinal(now)
			if !now.Next.Template() || now.Next.Lock() != "" {
				return fmt.Errorf("VM %d on %s after its conversion: template %v, lock %q", v.p.VMID, node, now.Next.Template(), now.Next.Lock())
			}
			disks, err := now.Next.Disks()
			if err != nil {
				return err
			}
			for _, k := range slices.Sorted(maps.Keys(disks)) {
				d := disks[k]
				if qemu.Convertible(d) && !qemu.IsBaseVolume(d.File) {
					return fmt.Errorf("VM %d on %s after its conversion: %s is %s, not a base volume", v.p.VMID, node, k, d.File)
				}
			}
			return nil
		},
		Predict: func(w *ansible.World) {
			n := qemu.State{Node: node, Next: after, Live: after, HA: st.HA}
			vmKey(v.p.VMID).Predict(w, n)
			v.setFinal(n)
		},
	}}, nil
}
