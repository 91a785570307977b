// Package ha is the simulator's model of pve-ha-manager: the HA config
// files and their rules, and the pure decisions of the CRM and LRM. It
// follows pve-ha-manager's sources:
//
//   - src/PVE/HA/Config.pm (parse_sid, have_groups_been_migrated,
//     get_service_status), src/PVE/HA/Resources.pm and API2/HA/Resources.pm
//     (resources.cfg: its options, "enabled" stored as "started", the
//     create and update checks);
//   - src/PVE/HA/Groups.pm and API2/HA/Groups.pm (PVE 8's groups.cfg;
//     migrate_groups_to_rules);
//   - src/PVE/HA/Rules.pm, Rules/NodeAffinity.pm, Rules/ResourceAffinity.pm
//     and API2/HA/Rules.pm (PVE 9's rules.cfg: get_next_ordinal, the
//     feasibility checks, encode_plugin_value);
//   - src/PVE/HA/Manager.pm (select_service_node, next_state_started,
//     next_state_error, next_state_recovery, the persistent group
//     migration and its rounds), Usage/Basic.pm, NodeStatus.pm, Tools.pm
//     (parse_node_priority, get_verbose_service_state) and API2/HA/Status.pm
//     (the shape of /cluster/ha/status/current).
//
// On PVE 9 an empty or missing groups.cfg means "groups have been migrated
// to rules" and every group call fails (H2). What is reconstructed rather
// than read from PVE is marked so where it is done.
//
// It is a backend out of the one-package simulator (issue 27 §1), after
// pvesim/access: pvesim keeps the HTTP handlers, the state lock, the CRM's
// timers, the guests' moves and persistence, and calls in with the files'
// sections (Config) and what it knows of nodes and guests (Cluster,
// Service); this package never imports pvesim.
package ha

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// Section is one entry of an HA file (a resource, group or rule).
type Section = pvecommon.Section

// The HA files under /etc/pve.
const (
	ResourcesCfg = "ha/resources.cfg"
	GroupsCfg    = "ha/groups.cfg"
	RulesCfg     = "ha/rules.cfg"
)

// Config is /etc/pve/ha as a PVE version reads it: resources.cfg,
// groups.cfg and rules.cfg in file order.
type Config struct {
	Version   int
	Resources []*Section
	Groups    []*Section
	Rules     []*Section
}

// GroupsMigrated is have_groups_been_migrated: always false on PVE 8.
func (c Config) GroupsMigrated() bool { return c.Version >= 9 && len(c.Groups) == 0 }

// Resource is sid's entry of resources.cfg, nil if none.
func (c Config) Resource(sid string) *Section { return FindResource(c.Resources, sid) }

var sidRe = regexp.MustCompile(`^(vm|ct):([1-9][0-9]*)$`)

// ParseSID is Config.pm parse_sid: "vm:100", "ct:200" or a bare VMID,
// whose type guest tells (exists false: no such guest).
func ParseSID(sid string, guest func(vmid int) (ct, exists bool)) (string, int, error) {
	if n, err := strconv.Atoi(sid); err == nil {
		ct, ok := guest(n)
		if !ok {
			return "", 0, fmt.Errorf("unable to detect SID from VMID - VM/CT %d does not exist", n)
		}
		return GuestSID(ct, n), n, nil
	}
	m := sidRe.FindStringSubmatch(sid)
	if m == nil {
		return "", 0, fmt.Errorf("unable to parse service id '%s'", sid)
	}
	n, _ := strconv.Atoi(m[2])
	return sid, n, nil
}

// GuestSID is the service id of a guest: ct:<vmid> or vm:<vmid>.
func GuestSID(ct bool, vmid int) string {
	if ct {
		return fmt.Sprintf("ct:%d", vmid)
	}
	return fmt.Sprintf("vm:%d", vmid)
}

// SplitSID is a service id's section type and id.
func SplitSID(sid string) (typ, id string) { typ, id, _ = strings.Cut(sid, ":"); return }

// SID is a resource's service id.
func SID(r *Section) string { return r.Type + ":" + r.ID }

// FindResource is sid's entry of a resources.cfg list, nil if none.
func FindResource(list []*Section, sid string) *Section {
	typ, id := SplitSID(sid)
	for _, r := range list {
		if r.Type == typ && r.ID == id {
			return r
		}
	}
	return nil
}

// Managed is vm_is_ha_managed: configured and not ignored.
func Managed(r *Section) bool { return r != nil && r.Opts["state"] != "ignored" }

// RequestedState is a resource's state option, "started" by default.
func RequestedState(r *Section) string {
	if st := r.Opts["state"]; st != "" {
		return st
	}
	return "started"
}

// ResourceOpts are the options create and update take for a resource.
var ResourceOpts = []string{"state", "max_restart", "max_relocate", "comment", "group", "failback"}

// StoreResourceState stores "enabled" as its alias "started", as
// Resources.pm does.
func StoreResourceState(r *Section) {
	if r.Opts["state"] == "enabled" {
		r.Opts["state"] = "started"
	}
}

// ErrGroupsMigrated is the refusal of a resource's group option once the
// groups are rules.
var ErrGroupsMigrated = fmt.Errorf("invalid parameter 'group': ha groups have been migrated to rules")

// NewResource is API2/HA/Resources.pm create's checks for sid (vmid),
// with typ the request's type (may be empty), withGroup whether it names
// a group and guest what the cluster knows of the guest; it returns the
// new, option-less entry.
func (c Config) NewResource(sid string, vmid int, typ string, withGroup bool, guest func(vmid int) (ct, exists bool)) (*Section, error) {
	styp, id := SplitSID(sid)
	if typ != "" && typ != styp {
		return nil, fmt.Errorf("types does not match")
	}
	if withGroup && c.GroupsMigrated() {
		return nil, ErrGroupsMigrated
	}
	ct, ok := guest(vmid)
	if !ok {
		return nil, fmt.Errorf("resource '%s' does not exist in cluster", sid)
	}
	if styp == "vm" && ct {
		return nil, fmt.Errorf("resource '%s' - guest with ID %d is not a VM", sid, vmid)
	}
	if styp == "ct" && !ct {
		return nil, fmt.Errorf("resource '%s' - guest with ID %d is not a CT", sid, vmid)
	}
	if c.Resource(sid) != nil {
		return nil, fmt.Errorf("create resource failed: resource ID '%s' already defined", sid)
	}
	return &Section{Type: styp, ID: id, Opts: map[string]string{}}, nil
}

// CheckGroupOption is update's check of a resource's new group g.
func (c Config) CheckGroupOption(g string) error {
	if c.GroupsMigrated() {
		return ErrGroupsMigrated
	}
	if pvecommon.FindSection(c.Groups, g) == nil {
		return fmt.Errorf("HA group '%s' does not exist", g)
	}
	return nil
}

// WithoutResource is the resources.cfg list without sid.
func WithoutResource(list []*Section, sid string) []*Section {
	typ, id := SplitSID(sid)
	return slices.DeleteFunc(list, func(r *Section) bool { return r.Type == typ && r.ID == id })
}

// PurgeFromRules is the rules once sid is deleted with purge (PVE 9): sid
// leaves every rule's resources, and a rule left without any goes.
func PurgeFromRules(rules []*Section, sid string) []*Section {
	kept := rules[:0:0]
	for _, r := range rules {
		res := slices.DeleteFunc(pvecommon.SplitComma(r.Opts["resources"]), func(x string) bool { return x == sid })
		if len(res) == 0 {
			continue
		}
		r.Opts["resources"] = strings.Join(res, ",")
		kept = append(kept, r)
	}
	return kept
}

// GroupInUse is Groups.pm delete's refusal of a group a resource uses.
func GroupInUse(resources []*Section, group string) error {
	for _, r := range resources {
		if r.Opts["group"] == group {
			return fmt.Errorf("delete ha group failed: ha group is used by service '%s:%s'", r.Type, r.ID)
		}
	}
	return nil
}

// GroupOpts are the options create and update take for a group.
var GroupOpts = []string{"nodes", "restricted", "nofailback", "comment"}

// ---- the API's views ----

// ResourceView is a resource as the API lists it: the section as stored
// (no defaults but state), max_restart and max_relocate and failback as
// integers; the group is hidden once groups are rules.
func ResourceView(r *Section, digest string, hideGroup bool) map[string]any {
	out := SectionView(map[string]any{"sid": r.Type + ":" + r.ID, "type": r.Type, "state": "started"},
		r, digest, "max_restart", "max_relocate", "failback")
	if hideGroup {
		delete(out, "group")
	}
	return out
}

// GroupView is a group as Groups.pm answers it.
func GroupView(g *Section, digest string) map[string]any {
	return SectionView(map[string]any{"group": g.ID, "type": "group"}, g, digest, "restricted", "nofailback")
}

// SectionView is an HA section as the API returns it: base's keys (ids
// and defaults), then the section's options, those named in ints as
// integers, and the file's digest when there is one.
func SectionView(base map[string]any, sec *Section, digest string, ints ...string) map[string]any {
	for k, v := range sec.Opts {
		base[k] = v
		if slices.Contains(ints, k) {
			n, _ := strconv.Atoi(v)
			base[k] = n
		}
	}
	if digest != "" {
		base["digest"] = digest
	}
	return base
}
