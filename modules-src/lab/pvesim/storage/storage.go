// Package storage is the simulator's model of pve-storage: the sections of
// storage.cfg and their rules, and the names of the volumes on them. It
// follows proxmox/pve-storage:
//
//   - storage.cfg as SectionConfig (pve-common) reads and writes it, and
//     its sections' validation on create and update (src/PVE/API2/Storage/
//     Config.pm, each plugin's check_config and options(), DirPlugin.pm's
//     path check), the sensitive properties taken out of a request
//     (extract_sensitive_params) and what the plugins' on_add_hook,
//     on_update_hook and on_delete_hook write under /etc/pve/priv/storage
//     (PBSPlugin.pm, CIFSPlugin.pm), and what activate_storage learns from
//     a PBS or SMB server;
//   - volume IDs and names: parse_volume_id and parse_volname
//     (src/PVE/Storage.pm, Plugin.pm, LVMPlugin.pm, ZFSPoolPlugin.pm),
//     vm-<vmid>-disk-N (find_free_diskname, get_next_vm_diskname), base
//     volumes and linked clones (create_base, clone_image), path(), the zfs
//     commands ZFSPoolPlugin.pm runs (zfs_create_zvol, zfs_create_subvol,
//     volume_resize), and check_volume_access (Storage.pm);
//   - the upload's file name rules (Storage.pm normalize_content_filename,
//     $ISO_EXT_RE_0, $VZTMPL_EXT_RE_1, API2/Storage/Status.pm upload).
//
// What each type declares (content, formats, options, sharing) is
// pveapi/storagetype, the table the modules read too.
//
// It is a backend out of the one-package simulator (issue 27 §1), as
// pvesim/access is: pvesim's handlers (API2/Storage/*.pm), its locks, its
// state.json and the node's files call it; it never imports pvesim. What
// it needs from the simulator comes in as data or small interfaces: the
// POST /storage schema for option types, the caller's privileges
// (Privs), the files under /etc/pve/priv/storage (PrivFiles).
package storage

import (
	"slices"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/pveapi/storagetype"
)

// Section is one storage.cfg section. Options keep PVE's JSON types:
// numbers for integers/booleans (SectionConfig), strings otherwise. Its
// JSON is what state.json holds.
type Section struct {
	ID      string         `json:"id"`
	Type    string         `json:"type"`
	Options map[string]any `json:"options"`
}

// Opt is option k as a string ("" when unset).
func (st *Section) Opt(k string) string {
	v, ok := st.Options[k]
	if !ok {
		return ""
	}
	return pvecommon.ParamString(v)
}

// Content is the content option as written.
func (st *Section) Content() string { return st.Opt("content") }

// Disabled is a `disable`d storage.
func (st *Section) Disabled() bool { return st.Opt("disable") == "1" }

// HasContent tells whether the storage holds content type c.
func (st *Section) HasContent(c string) bool {
	return slices.Contains(pveschema.SplitList(st.Content()), c)
}

// Shared is a storage all nodes see (@SHARED_STORAGE, or `shared 1`).
func (st *Section) Shared() bool {
	return storagetype.Shared(st.Type, 0) || st.Opt("shared") == "1"
}

// OnNode: a storage without `nodes` is available everywhere.
func (st *Section) OnNode(node string) bool {
	n := st.Opt("nodes")
	return n == "" || slices.Contains(pveschema.SplitList(n), node)
}

// SimulatedType is the type named typ when the lab simulates it: the
// types whose options() the table holds.
func SimulatedType(typ string) (storagetype.Type, bool) {
	t, ok := storagetype.Lookup(typ)
	return t, ok && t.Managed()
}

// PluginClass is the Perl class a storage type's plugin is.
func PluginClass(typ string) string {
	if t, ok := storagetype.Lookup(typ); ok {
		return "PVE::Storage::" + t.Plugin
	}
	return ""
}

// ParamError is a parameter the API refuses (raise_param_exc: a 400 naming
// the parameter).
type ParamError struct{ Param, Msg string }

func (e *ParamError) Error() string { return e.Param + ": " + e.Msg }

// DeniedError is a failed permission check (raise_perm_exc: a 403 whose
// detail names the path and the privileges).
type DeniedError struct{ Detail string }

func (e *DeniedError) Error() string { return "Permission check failed (" + e.Detail + ")" }
