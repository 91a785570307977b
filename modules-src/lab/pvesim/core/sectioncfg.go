package core

import (
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// A SectionConfig file of /etc/pve (HA's, jobs.cfg, replication.cfg): its
// format is pvecommon's (pve-common SectionConfig.pm); core reads and
// writes it in a database's directory.

// ReadSectionsLocked reads a SectionConfig file of db ("" when absent)
// with its digest (SHA-1 of the bytes, as PVE's).
func (s *Sim) ReadSectionsLocked(db *ConfigDB, rel string) ([]*pvecommon.Section, string) {
	raw, _ := s.ReadEtcPve(db, rel)
	return pvecommon.ParseSections(raw), guestconf.Parse(raw).Digest
}

func (s *Sim) WriteSectionsLocked(db *ConfigDB, rel string, list []*pvecommon.Section) {
	s.WriteEtcPve(db, rel, pvecommon.RenderSections(list))
}
