package core

import (
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// section is one entry of a SectionConfig file; the model and its
// parse/render live in pvecommon (pve-common SectionConfig.pm), shared with
// the backends (pvesim/ha).
type section = pvecommon.Section

var (
	parseSections  = pvecommon.ParseSections
	renderSections = pvecommon.RenderSections
)

// ReadSectionsLocked reads a SectionConfig file of db ("" when absent)
// with its digest (SHA-1 of the bytes, as PVE's).
func (s *Sim) ReadSectionsLocked(db *ConfigDB, rel string) ([]*section, string) {
	raw, _ := s.ReadEtcPve(db, rel)
	return parseSections(raw), guestconf.Parse(raw).Digest
}

func (s *Sim) WriteSectionsLocked(db *ConfigDB, rel string, list []*section) {
	s.WriteEtcPve(db, rel, renderSections(list))
}
