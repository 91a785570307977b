package pvecommon

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// IDMap is a map of IDs as pve-common's parse_idmap reads one
// (src/PVE/JSONSchema.pm; migrate_vm's targetstorage, 'pve-storage-id'):
// "1" maps every ID to itself, a lone ID is the default for all, "src:dst"
// pairs map single IDs. Reconstruction: the IDs' format is left to the
// schema check before it.
type IDMap struct {
	Identity bool
	Default  string
	Entries  map[string]string
}

// ParseIDMap is parse_idmap; its errors are PVE's words, which the caller
// puts after "failed to parse storage map: ".
func ParseIDMap(s string) (IDMap, error) {
	m := IDMap{Entries: map[string]string{}}
	if s == "1" {
		m.Identity = true
		return m, nil
	}
	for _, part := range strings.Split(s, ",") {
		src, dst, pair := strings.Cut(part, ":")
		switch {
		case !pair && m.Default == "":
			m.Default = src
		case !pair:
			return m, fmt.Errorf("default target ID specified more than once")
		case m.Entries[src] != "":
			return m, fmt.Errorf("duplicate mapping for source '%s'", src)
		default:
			m.Entries[src] = dst
		}
	}
	return m, nil
}

// Target is map_id: the ID src maps to (its entry, else the default, else
// src itself).
func (m IDMap) Target(src string) string {
	if d := m.Entries[src]; d != "" {
		return d
	}
	if m.Default != "" {
		return m.Default
	}
	return src
}

// Targets are the IDs the map names (a caller checks them up front).
func (m IDMap) Targets() []string {
	out := slices.Sorted(maps.Values(m.Entries))
	if m.Default != "" {
		out = append(out, m.Default)
	}
	return slices.Compact(out)
}
