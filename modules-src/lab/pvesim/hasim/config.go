package hasim

import (
	"fmt"
	"slices"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/ha"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// What HA groups, rules and resources share: reading, listing, digest
// checks, deleting and committing their section files (pve-ha-manager's
// PVE::HA::Config and API2/HA/*.pm).

// haSectionFile is one HA section-config collection served as
// /cluster/ha/<collection>[/{id}] (Groups.pm, Rules.pm): what differs
// between groups and rules. Every message is the one its PVE module dies
// with.
type haSectionFile struct {
	cfg  string // the file under /etc/pve
	key  string // the id parameter: "group", "rule"
	view func(sec *pvecommon.Section, digest string) map[string]any
	// noSuch is read's message for a missing id (%s); deleteFailed
	// prefixes delete's copy of it ("" on rules, which die plainly).
	noSuch, deleteFailed string
}

var (
	haGroups = haSectionFile{cfg: ha.GroupsCfg, key: "group", view: ha.GroupView,
		noSuch: "no such ha group '%s'", deleteFailed: "delete ha group failed: "}
	haRules = haSectionFile{cfg: ha.RulesCfg, key: "rule",
		noSuch: "no such ha rule '%s'"}
)

// setOpts copies the request's values of opts into into: create and update
// take only the options the request names.
func setOpts(rc *core.Req, opts []string, into map[string]string) {
	for _, k := range opts {
		if rc.Has(k) {
			into[k] = rc.Str(k)
		}
	}
}

// staleDigest is PVE's refusal of an update whose digest is not the file's
// (prefix: the module's "update … failed: ", if it has one).
func staleDigest(rc *core.Req, digest, prefix string) error {
	if d := rc.Str("digest"); d != "" && d != digest {
		return pvecommon.Die("%sdetected modified configuration - file changed by other user? Try again.", prefix)
	}
	return nil
}

// commitHALocked writes an HA file after a change and, for a change the
// CRM acts on, schedules its round.
func (s *backend) commitHALocked(db *core.ConfigDB, cfg string, list []*pvecommon.Section, crm bool) {
	s.WriteSectionsLocked(db, cfg, list)
	s.SaveLocked()
	if crm {
		s.scheduleCRMLocked(db.ID)
	}
}

// indexHA lists f's sections that keep accepts (nil: all), each with the
// file's digest.
func (s *backend) indexHA(rc *core.Req, f haSectionFile, keep func(*pvecommon.Section) bool) []map[string]any {
	list, digest := s.ReadSectionsLocked(rc.DB(), f.cfg)
	out := []map[string]any{}
	for _, sec := range list {
		if keep == nil || keep(sec) {
			out = append(out, f.view(sec, digest))
		}
	}
	return out
}

// readHA answers GET /cluster/ha/<collection>/{id}.
func (s *backend) readHA(rc *core.Req, f haSectionFile) (any, error) {
	list, digest := s.ReadSectionsLocked(rc.DB(), f.cfg)
	sec := pvecommon.FindSection(list, rc.Str(f.key))
	if sec == nil {
		return nil, fmt.Errorf(f.noSuch, rc.Str(f.key))
	}
	return f.view(sec, digest), nil
}

// deleteHA answers DELETE /cluster/ha/<collection>/{id}; inUse, when set,
// refuses to delete a section something still names.
func (s *backend) deleteHA(rc *core.Req, f haSectionFile, inUse func(id string) error) (any, error) {
	db := rc.DB()
	list, _ := s.ReadSectionsLocked(db, f.cfg)
	id := rc.Str(f.key)
	if pvecommon.FindSection(list, id) == nil {
		return nil, fmt.Errorf(f.deleteFailed+f.noSuch, id)
	}
	if inUse != nil {
		if err := inUse(id); err != nil {
			return nil, err
		}
	}
	s.commitHALocked(db, f.cfg, slices.DeleteFunc(list, func(sec *pvecommon.Section) bool { return sec.ID == id }), false)
	return nil, nil
}
