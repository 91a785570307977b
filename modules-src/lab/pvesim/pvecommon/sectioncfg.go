package pvecommon

import (
	"maps"
	"slices"
	"strings"
)

// Section is one entry of a PVE SectionConfig file (replication.cfg,
// jobs.cfg, ha/resources.cfg, ha/groups.cfg, ha/rules.cfg): "<type>: <id>"
// then tab-indented "key value" lines, a blank line between entries
// (pve-common SectionConfig.pm). Entries keep file order.
type Section struct {
	Type string
	ID   string
	Opts map[string]string
}

// ParseSections reads a SectionConfig file's text; lines it cannot place
// are skipped.
func ParseSections(text string) []*Section {
	var out []*Section
	var cur *Section
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
		cur = &Section{Type: strings.TrimSpace(typ), ID: strings.TrimSpace(id), Opts: map[string]string{}}
		out = append(out, cur)
	}
	return out
}

// RenderSections writes the entries in their order, each one's options
// sorted by key.
func RenderSections(list []*Section) string {
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

// FindSection is the entry with id (of any type), nil if none.
func FindSection(list []*Section, id string) *Section {
	for _, s := range list {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// SplitComma is a comma list's items, each trimmed, empty ones dropped.
func SplitComma(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
