package pvesim

import (
	"maps"
	"slices"
	"strings"
)

// section is one entry of a PVE SectionConfig file (replication.cfg,
// ha/resources.cfg, ha/groups.cfg, ha/rules.cfg): "<type>: <id>" then
// tab-indented "key value" lines, a blank line between entries
// (pve-common SectionConfig.pm). Entries keep file order.
type section struct {
	Type string
	ID   string
	Opts map[string]string
}

func parseSections(text string) []*section {
	var out []*section
	var cur *section
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			cur = nil
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if cur != nil {
				k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
				cur.Opts[k] = strings.TrimSpace(v)
			}
			continue
		}
		typ, id, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		cur = &section{Type: strings.TrimSpace(typ), ID: strings.TrimSpace(id), Opts: map[string]string{}}
		out = append(out, cur)
	}
	return out
}

func renderSections(list []*section) string {
	var b strings.Builder
	for i, s := range list {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(s.Type + ": " + s.ID + "\n")
		for _, k := range slices.Sorted(maps.Keys(s.Opts)) {
			b.WriteString("\t" + k + " " + s.Opts[k] + "\n")
		}
	}
	return b.String()
}

func findSection(list []*section, id string) *section {
	for _, s := range list {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// readSectionsLocked reads a SectionConfig file of db ("" when absent)
// with its digest (SHA-1 of the bytes, as PVE's).
func (s *Sim) readSectionsLocked(db *ConfigDB, rel string) ([]*section, string) {
	raw, _ := s.readEtcPve(db, rel)
	return parseSections(raw), parseQmConf(raw).Digest
}

func (s *Sim) writeSectionsLocked(db *ConfigDB, rel string, list []*section) {
	s.writeEtcPve(db, rel, renderSections(list))
}
