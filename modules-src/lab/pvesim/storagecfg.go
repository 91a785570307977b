package pvesim

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/pveapi/storagetype"
)

// renderStorageCfg is SectionConfig::write_config (pve-common) for
// storage.cfg: sections in file order, each "type: id", then comment, a
// bare "disable", the plugin's non-optional keys sorted, the other keys
// sorted, and a blank line. The lab takes each type's required keys as its
// non-optional ones.
func renderStorageCfg(db *ConfigDB) string {
	var b strings.Builder
	for _, id := range db.fileStorageIDs() {
		st := db.Storage[id]
		fmt.Fprintf(&b, "%s: %s\n", st.Type, st.ID)
		if c := st.opt("comment"); c != "" {
			fmt.Fprintf(&b, "\tcomment %s\n", c)
		}
		if st.disabled() {
			b.WriteString("\tdisable\n")
		}
		t := storagetype.Of(st.Type)
		keys := make([]string, 0, len(st.Options))
		for k := range st.Options {
			if k != "comment" && k != "disable" {
				keys = append(keys, k)
			}
		}
		sort.SliceStable(keys, func(i, j int) bool {
			ri, rj := slices.Contains(t.Required, keys[i]), slices.Contains(t.Required, keys[j])
			if ri != rj {
				return ri
			}
			return keys[i] < keys[j]
		})
		for _, k := range keys {
			fmt.Fprintf(&b, "\t%s %s\n", k, pvecommon.ParamString(st.Options[k]))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// parseStorageCfg is SectionConfig::parse_config, lenient as PVE's: a bad
// line is skipped, a section of an unknown type is kept as it is.
func (s *Sim) parseStorageCfg(text string) (map[string]*Storage, []string) {
	out := map[string]*Storage{}
	var order []string
	var cur *Storage
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			if strings.TrimSpace(line) == "" {
				cur = nil
			}
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			typ, id, ok := strings.Cut(line, ":")
			id = strings.TrimSpace(id)
			if !ok || id == "" || strings.ContainsAny(typ, " \t") {
				cur = nil
				continue
			}
			cur = &Storage{ID: id, Type: typ, Options: map[string]any{}}
			if out[id] == nil {
				order = append(order, id)
			}
			out[id] = cur
			continue
		}
		if cur == nil {
			continue
		}
		k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
		v = strings.TrimSpace(v)
		if v == "" && (k == "disable" || k == "shared" || k == "sparse" || k == "mkdir" || k == "create-base-path" ||
			k == "create-subdirs" || k == "is_mountpoint" || k == "saferemove" || k == "tagged_only") {
			v = "1" // a bare boolean flag
		}
		if k == "content" || k == "nodes" {
			cur.Options[k] = v // as written: PVE does not reorder lists it reads
			continue
		}
		cur.Options[k] = s.typedOption(k, v)
	}
	return out, order
}
