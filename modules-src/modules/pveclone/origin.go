package pveclone

import (
	"fmt"
	"strconv"

	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// Ownership by origin, with what PVE really keeps. A linked clone's disks
// name their base volume, and through it the template: pve-storage's
// parse_volname reads <basevmid>/<base-…>/<vmid>/<name> on file storages
// (Plugin.pm) and base-<basevmid>-disk-N/<name> on lvmthin, zfspool and
// rbd (LvmThinPlugin.pm, ZFSPoolPlugin.pm, RBDPlugin.pm). A full clone
// keeps nothing of its source (clone_vm copies the volumes and writes no
// marker), so for it the origin cannot be decided and is not checked; the
// module writes no marker of its own into the user's config either.

// checkOrigin refuses an existing VM whose origin, as far as PVE keeps
// one, is not what the task asks: a template; a linked clone of another
// template than the one given; a linked clone when the task builds the VM
// bare or asks for a full clone. Decided from the config already read,
// before any write.
func (v *vm) checkOrigin(guests []clusterguests.Guest, cfg qemu.Config) error {
	held := fmt.Sprintf("VMID %d (%s)", v.p.VMID, cfg.Values["name"])
	if cfg.Template() && !v.p.AsTemplate {
		return fmt.Errorf("vmid: %s is a template; this module never configures a template (as_template: true leaves one of this task's name alone); nothing was changed", held)
	}
	key, volid, base, linked := qemu.LinkedOrigin(cfg)
	if !linked {
		return nil // built bare or a full clone: PVE keeps no origin to check
	}
	from := fmt.Sprintf("template %d", base)
	tpl, known := clusterguests.Find(guests, base)
	if known && tpl.Name != "" {
		from = fmt.Sprintf("template %d (%s)", base, tpl.Name)
	}
	found := fmt.Sprintf("%s is a linked clone of %s: its %s is %s", held, from, key, volid)
	switch {
	case v.p.Template == "":
		return fmt.Errorf("template: %s, but this task builds the VM bare (no template given); it is not this task's VM; nothing was changed", found)
	case !sameTemplate(v.p.Template, base, tpl, known):
		return fmt.Errorf("template: %s, not of %q; it is not this task's VM; nothing was changed", found, v.p.Template)
	case v.p.Full:
		return fmt.Errorf("full: %s, but full is true (a full clone was asked); give full: false for this VM; nothing was changed", found)
	}
	return nil
}

// sameTemplate: the task's template (a VMID or an exact name) is the base
// the VM links to.
func sameTemplate(asked string, base int, tpl clusterguests.Guest, known bool) bool {
	if id, err := strconv.Atoi(asked); err == nil {
		return id == base
	}
	return known && tpl.Template && tpl.Name == asked
}
