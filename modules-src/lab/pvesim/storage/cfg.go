package storage

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/pveapi/storagetype"
)

// Render is SectionConfig::write_config (pve-common) for storage.cfg:
// sections in the order given, each "type: id", then comment, a bare
// "disable", the plugin's non-optional keys sorted, the other keys sorted,
// and a blank line. The lab takes each type's required keys as its
// non-optional ones.
func Render(sections []*Section) string {
	var b strings.Builder
	for _, st := range sections {
		fmt.Fprintf(&b, "%s: %s\n", st.Type, st.ID)
		if c := st.Opt("comment"); c != "" {
			fmt.Fprintf(&b, "\tcomment %s\n", c)
		}
		if st.Disabled() {
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

// RenderCfg is storage.cfg of the sections byID: those in order first (as
// read from the file, new ones appended), then any others by ID, as
// SectionConfig::write_config orders them.
func RenderCfg(byID map[string]*Section, order []string) string {
	sections := make([]*Section, 0, len(byID))
	seen := map[string]bool{}
	for _, id := range order {
		if byID[id] != nil && !seen[id] {
			sections = append(sections, byID[id])
			seen[id] = true
		}
	}
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		if !seen[id] {
			sections = append(sections, byID[id])
		}
	}
	return Render(sections)
}

// Parse is SectionConfig::parse_config, lenient as PVE's: a bad line is
// skipped, a section of an unknown type is kept as it is. It returns the
// sections by ID and their order in the file; create (the POST /storage
// schema) types the values as TypedOption does.
func Parse(text string, create *pveschema.Method) (map[string]*Section, []string) {
	out := map[string]*Section{}
	var order []string
	var cur *Section
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
			cur = &Section{ID: id, Type: typ, Options: map[string]any{}}
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
		cur.Options[k] = TypedOption(create, k, v)
	}
	return out, order
}

// TypedOption converts a request value to PVE's stored JSON type using the
// POST /storage schema (create): integers and booleans become numbers.
func TypedOption(create *pveschema.Method, key string, v any) any {
	p, ok := create.Parameters.PropFor(key)
	str := pvecommon.ParamString(v)
	if !ok {
		return str
	}
	switch p.Type {
	case "integer", "boolean":
		if n, err := strconv.Atoi(str); err == nil {
			return n
		}
	case "number":
		if f, err := strconv.ParseFloat(str, 64); err == nil {
			return f
		}
	}
	if key == "content" || key == "nodes" {
		// Re-encoded as a sorted comma list, like Config.pm does.
		items := pveschema.SplitList(str)
		sort.Strings(items)
		return strings.Join(items, ",")
	}
	return str
}

// param is a request parameter as a string ("" when absent).
func param(params map[string]any, k string) string {
	v, ok := params[k]
	if !ok {
		return ""
	}
	return pvecommon.ParamString(v)
}

// checkOptions is check_config's part the lab checks: every key is one
// of the type's options() in this PVE version, and the content types are
// the plugin's.
func checkOptions(t storagetype.Type, version int, params map[string]any, skip ...string) error {
	for k := range params {
		if slices.Contains(skip, k) {
			continue
		}
		if !t.Allows(k, version) {
			return fmt.Errorf("unexpected property '%s'", k)
		}
	}
	if c := param(params, "content"); c != "" {
		for _, item := range pveschema.SplitList(c) {
			if !slices.Contains(t.Content, item) {
				return fmt.Errorf("storage does not support content type '%s'", item)
			}
		}
	}
	return nil
}

var dirPathRE = regexp.MustCompile(`^/[-/a-zA-Z0-9_.@]+$`)

// CheckCreate is what Config.pm create does with its parameters before it
// takes the lock: the type must be one the lab simulates, check_config
// (its errors not wrapped), the sensitive properties taken out, the path
// a type defaults (/mnt/pve/<id>), the required options, DirPlugin's path
// check and canonpath. params must be the handler's own copy: the
// sensitive keys leave it and path is set.
func CheckCreate(version int, id, typ string, params map[string]any) (Sensitive, error) {
	t, ok := SimulatedType(typ)
	if !ok {
		return nil, fmt.Errorf("storage type '%s' is not simulated by the lab", typ)
	}
	if err := checkOptions(t, version, params, "storage", "type"); err != nil {
		return nil, err
	}
	sensitive := ExtractSensitive(t, params, nil)
	if t.DefaultPath && param(params, "path") == "" {
		params["path"] = "/mnt/pve/" + id
	}
	for _, k := range t.Required {
		if _, ok := params[k]; !ok {
			return nil, fmt.Errorf("missing value for required option '%s'", k)
		}
	}
	if typ == "dir" { // DirPlugin::check_config
		if !dirPathRE.MatchString(param(params, "path")) {
			return nil, fmt.Errorf("illegal path for directory storage: %s", param(params, "path"))
		}
		params["path"] = path.Clean(param(params, "path")) // File::Spec->canonpath
	}
	return sensitive, nil
}

// NewSection is the section create writes: every parameter but storage
// and type, typed as the schema (create) says.
func NewSection(id, typ string, params map[string]any, create *pveschema.Method) *Section {
	st := &Section{ID: id, Type: typ, Options: map[string]any{}}
	for k, v := range params {
		if k == "storage" || k == "type" {
			continue
		}
		st.Options[k] = TypedOption(create, k, v)
	}
	return st
}

// CheckUpdate is Config.pm update's checks on an existing section, in its
// order: fixed options refused even with the same value, check_config, the
// sensitive properties taken out of params (the handler's own copy), the
// `delete` list (no fixed or required option, nothing both set and
// deleted). It returns the typed new values and the deleted keys; the
// caller words the errors as "update storage failed: …".
func CheckUpdate(version int, st *Section, params map[string]any, create *pveschema.Method) (update map[string]any, deletes []string, sens Sensitive, err error) {
	t := storagetype.Of(st.Type)
	for k := range params {
		if slices.Contains(t.Fixed, k) {
			return nil, nil, nil, fmt.Errorf("can't change value of fixed parameter '%s'", k)
		}
	}
	if err := checkOptions(t, version, params, "storage", "delete", "digest"); err != nil {
		return nil, nil, nil, err
	}
	if _, ok := params["delete"]; ok {
		deletes = pveschema.SplitList(param(params, "delete"))
	}
	sens = ExtractSensitive(t, params, deletes)
	for _, k := range deletes {
		if slices.Contains(t.Fixed, k) || slices.Contains(t.Required, k) {
			return nil, nil, nil, fmt.Errorf("cannot delete required option '%s'", k)
		}
		if _, ok := params[k]; ok {
			//lint:ignore ST1005 PVE's own message, as the storage API returns it
			return nil, nil, nil, fmt.Errorf("cannot set and delete property '%s' at the same time!", k)
		}
	}
	update = map[string]any{}
	for k, v := range params {
		if k == "storage" || k == "delete" || k == "digest" {
			continue
		}
		update[k] = TypedOption(create, k, v)
	}
	return update, deletes, sens, nil
}

// Apply writes an update's deletions and new values into the section.
func (st *Section) Apply(update map[string]any, deletes []string) {
	for _, k := range deletes {
		delete(st.Options, k)
	}
	for k, v := range update {
		st.Options[k] = v
	}
}
