package ansible

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi/storagetype"
)

// CreatedEarlierOption is the option the runtime gives every module whose
// Module.CreatedEarlier is set: what earlier tasks of the same run create,
// the only prerequisites a check run may assume (Run.NotYet). Modules must
// not declare it themselves.
const CreatedEarlierOption = "created_earlier"

// Kind is a list of created_earlier: the kind of object an earlier task
// creates.
type Kind string

// The kinds of created_earlier.
const (
	CreatedNode    Kind = "nodes"    // cluster nodes an earlier task joins
	CreatedStorage Kind = "storages" // storage ids an earlier task defines
	CreatedPool    Kind = "pools"    // resource pools an earlier task creates
	CreatedGuest   Kind = "guests"   // guests (VMs, templates, containers) by VMID or name
	CreatedUser    Kind = "users"    // users (user@realm) an earlier pve_access task creates
	CreatedRole    Kind = "roles"    // custom roles an earlier pve_access task creates
)

// createdEarlierOption is the one spec of created_earlier, the same option
// and documentation in every module that assumes.
func createdEarlierOption() Option {
	list := func(what string) Option {
		return Option{Type: TypeList, Elements: TypeStr, Default: []any{}, Description: []string{what}}
	}
	return Option{Type: TypeDict, ApplyDefaults: true, Description: []string{
		"What earlier tasks of the same run create, the only missing prerequisites a check run may assume. A check run writes nothing, so a later task of a whole site (gopve.proxmox.site) meets objects an earlier task would have made by then: the node the cluster phase joins, the storage the storage phase defines, a pool, a template or a guest.",
		"In check mode, a prerequisite that does not exist and is named here is assumed made: the task warns (C(does not exist yet)), lists it in C(not_yet), and predicts on. One that does not exist and is not named here fails the check run with the error the real run gives (a typo such as C(node: pve0x) fails in check mode too).",
		"A real run assumes nothing: this option is ignored there, and what is still missing when the task runs fails it before any write (or, for pve_storage's C(nodes), is left out with a warning).",
		"The roles of this collection fill it from the inventory variables of the phases before them (the pve group's nodes, the storages of the storage phase, the pools and VMs of the clone list); a task of your own names what the tasks before it create.",
	}, Options: map[string]Option{
		"nodes":    list("Cluster nodes an earlier task joins (pve_cluster)."),
		"storages": list("Storage ids an earlier task defines (pve_storage)."),
		"pools":    list("Resource pools an earlier task creates (pve_clone with pool_create)."),
		"guests":   list("Guests an earlier task creates, each by VMID or by name: VMs and containers, and templates (a bare VM then converted, cloned by name or VMID)."),
		"users":    list("Users (user@realm) an earlier task creates (pve_access type user): a token's owner."),
		"roles":    list("Custom roles an earlier task creates (pve_access type role): a role an ACL entry grants."),
		"storage_types": {Type: TypeDict, Description: []string{
			"The type of storages of C(storages) (C(tank: zfspool), C(backup: dir)), as the task that defines each declares it (pve_storage's type). pve_container's and pve_clone's check mode name the volumes they predict on such a storage as PVE names them on that type (a container's rootfs on a zfspool is C(subvol-<vmid>-disk-0), a volume on a dir storage C(<vmid>/vm-<vmid>-disk-0.raw)); without a type here they are named as on a block storage (C(vm-<vmid>-disk-N)): a type is never guessed. A type PVE does not have, or one given to a storage C(storages) does not name, fails the task before anything runs."}},
	}}
}

// createdEarlierFragment documents created_earlier once for every module
// that takes it.
func createdEarlierFragment() DocFragment {
	return DocFragment{Name: CreatedEarlierOption, What: "The created_earlier option of gopve.proxmox's modules that check mode lets assume (ansible/notyet.go).",
		Options: map[string]Option{CreatedEarlierOption: createdEarlierOption()}}
}

// Prerequisite is an object a task needs that another task creates: the
// node a join adds, the storage a storage task declares, the pool, the
// guest a clone makes. A check run of a whole site meets it before any of
// those tasks has run (nothing is written in check mode), so it is not
// there yet although the real run will have made it by the time it gets
// here: check mode assumes it only when created_earlier names it.
type Prerequisite struct {
	// Option is the option that names the object ("node", "storage",
	// "nodes", "vmid"), as the warning and the error start with it.
	Option string
	// Kind and Name are how created_earlier names it: Kind's list holds
	// Name ("nodes", "pve02"; "guests", "9000" or "debian-12").
	Kind Kind
	Name string
	// Object is what is missing, with its kind: "cluster node pve02",
	// "storage nvme-vm", "guest 202".
	Object string
	// Predicts says what check mode predicts in spite of it, e.g. "the
	// clone and its configuration on pve02". Optional.
	Predicts string
	// RealRun says what a real run does when the object is still missing
	// when it gets there; empty means it fails (with the error NotYet is
	// given).
	RealRun string
}

// NotYet is the one way a module treats a prerequisite that does not
// exist now:
//
//   - In check mode, when created_earlier names it (Kind, Name), it is
//     assumed created by an earlier task of this run. The run warns once,
//     in one format naming the option and the object and saying what a
//     real run does if it still does not exist; the object is listed in
//     the result's `not_yet`; NotYet returns nil and the module goes on
//     predicting as far as it can without the object (a clone on a node
//     that has not joined is still predicted, disks on a storage not yet
//     declared are named as PVE would).
//   - In check mode, when created_earlier does not name it, nothing is
//     assumed: NotYet returns fail, exactly what the real run returns, so
//     a typo fails the check run as it fails the real one.
//   - In a real run nothing is assumed: NotYet returns fail, the module's
//     own clear error (naming the option), which the module returns before
//     its first write.
//
// fail must not be nil: a module that handles the absence itself in a real
// run (pve_storage leaves a non-member node out) calls Assume and does in
// check mode what the real run does for what is not assumed.
//
// A module calls it only where the object's absence is the whole problem:
// a refusal that holds whether or not the object will exist (a storage of
// the wrong type, a node that is offline) is returned as it is.
func (r *Run) NotYet(p Prerequisite, fail error) error {
	if fail == nil {
		return fmt.Errorf("module %s: NotYet(%s) without the real run's error; this is a bug in gopve (use Assume)", r.module.Name, p.Object)
	}
	if r.Assume(p, fail) {
		return nil
	}
	return fail
}

// Assume tells whether check mode assumes p made by an earlier task: only
// in check mode, and only when created_earlier names it. When it does, the
// run warns once per object and lists it in `not_yet` (see NotYet); fail,
// when not nil, is quoted as what a real run meets without it. A module
// whose Module.CreatedEarlier is not set never assumes.
func (r *Run) Assume(p Prerequisite, fail error) bool {
	if !r.CheckMode() || !r.CreatedEarlier(p.Kind, p.Name) {
		return false
	}
	real := p.RealRun
	if real == "" {
		real = "fails unless an earlier task creates it by then"
		if fail != nil {
			real += " (" + fail.Error() + ")"
		}
	}
	msg := fmt.Sprintf("%s: %s does not exist yet; check mode assumes an earlier task of this run creates it (%s.%s names it)",
		p.Option, p.Object, CreatedEarlierOption, p.Kind)
	if p.Predicts != "" {
		msg += " and predicts " + p.Predicts
	}
	msg += "; a real run " + real
	r.mu.Lock()
	defer r.mu.Unlock()
	key := p.Option + "\x00" + p.Object
	for _, seen := range r.notYet {
		if seen.Option+"\x00"+seen.Object == key {
			return true // one warning per object, however many checks meet it
		}
	}
	r.notYet = append(r.notYet, p)
	r.warnings = append(r.warnings, msg)
	return true
}

// CreatedEarlier tells whether the created_earlier option names name in
// its kind list. It reads the option as given, in check mode and in a
// real run alike; false for a module without the option.
func (r *Run) CreatedEarlier(kind Kind, name string) bool {
	if !r.module.CreatedEarlier || name == "" {
		return false
	}
	m, _ := r.params[CreatedEarlierOption].(map[string]any)
	list, _ := m[string(kind)].([]any)
	return slices.ContainsFunc(list, func(e any) bool {
		switch x := e.(type) {
		case string:
			return x == name
		case int:
			return strconv.Itoa(x) == name
		}
		return fmt.Sprint(e) == name
	})
}

// checkStorageTypes refuses, before anything runs, a
// created_earlier.storage_types that could only be a mistake: a type PVE
// does not have, or one given to a storage created_earlier.storages does
// not name (no check run would assume it, so the type would go unused).
func checkStorageTypes(params map[string]any) error {
	m, _ := params[CreatedEarlierOption].(map[string]any)
	types, _ := m["storage_types"].(map[string]any)
	storages, _ := m["storages"].([]any)
	for _, id := range slices.Sorted(maps.Keys(types)) {
		opt := CreatedEarlierOption + ".storage_types." + id
		typ, ok := types[id].(string)
		if _, known := storagetype.Lookup(typ); !ok || !known {
			return fmt.Errorf("%s: %v is not a PVE storage type (%s); nothing was changed", opt, types[id], strings.Join(storagetype.Names(), ", "))
		}
		if !slices.ContainsFunc(storages, func(s any) bool { return fmt.Sprint(s) == id }) {
			return fmt.Errorf("%s: storage %s is not in %s.storages, so no check run assumes it; nothing was changed", opt, id, CreatedEarlierOption)
		}
	}
	return nil
}

// CreatedEarlierStorageType is the type created_earlier.storage_types
// gives a storage an earlier task defines ("zfspool", "dir", …), "" when
// it gives none: what the play says creates it, never a guess.
func (r *Run) CreatedEarlierStorageType(storage string) string {
	if !r.module.CreatedEarlier {
		return ""
	}
	m, _ := r.params[CreatedEarlierOption].(map[string]any)
	types, _ := m["storage_types"].(map[string]any)
	if t, ok := types[storage].(string); ok {
		return t
	}
	return ""
}

// CreatedEarlierNames is the created_earlier option's kind list, as given
// (in check mode and in a real run alike; nil for a module without the
// option). A module that must know what is still to come, not only whether
// one name is on the list (pve_ha's default targets count the nodes an
// earlier task joins), reads it here and still assumes each one it uses
// with Assume or NotYet.
func (r *Run) CreatedEarlierNames(kind Kind) []string {
	if !r.module.CreatedEarlier {
		return nil
	}
	m, _ := r.params[CreatedEarlierOption].(map[string]any)
	list, _ := m[string(kind)].([]any)
	var out []string
	for _, e := range list {
		if name := fmt.Sprint(e); name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// notYetResult is the result's `not_yet`: what the check run assumed.
func (r *Run) notYetResult() []any {
	out := make([]any, 0, len(r.notYet))
	for _, p := range r.notYet {
		out = append(out, map[string]any{"option": p.Option, "object": p.Object})
	}
	return out
}
