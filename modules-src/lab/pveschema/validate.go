package pveschema

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Messages pve-common's JSONSchema.pm writes into the 400 answer's `errors`.
const (
	MsgUnknownProperty = "property is not defined in schema and the schema does not allow additional properties"
	MsgMissingProperty = "property is missing and it is not optional"
)

// IndexRanges is the highest index of each numbered key that apidata.js
// collapses to `name[n]` (RESTHandler.pm), taken from the PVE sources'
// MAX_* constants: `link[n]` is link0..link7, and so on.
var IndexRanges = map[string]int{
	"link":       7,   // corosync links
	"net":        31,  // qemu MAX_NETS / lxc
	"ipconfig":   31,  // one per net
	"unused":     255, // MAX_UNUSED_DISKS
	"ide":        3,
	"sata":       5,
	"scsi":       30,
	"virtio":     15,
	"hostpci":    15,
	"usb":        13,
	"serial":     3,
	"parallel":   2,
	"numa":       7,
	"virtiofs":   9,
	"mp":         255, // lxc MAX_MOUNT_POINTS
	"dev":        255,
	"acmedomain": 4,
}

var numberedKey = regexp.MustCompile(`^([a-z_]+?)(\d+)$`)

// PropFor returns the schema of parameter key, resolving numbered keys
// (`link3` → `link[n]`) within IndexRanges. ok is false for unknown keys and
// for indexes out of range.
func (p *Prop) PropFor(key string) (*Prop, bool) {
	if q, ok := p.Properties[key]; ok {
		return q, true
	}
	m := numberedKey.FindStringSubmatch(key)
	if m == nil {
		return nil, false
	}
	q, ok := p.Properties[m[1]+"[n]"]
	if !ok {
		return nil, false
	}
	// "link01" is not "link1": PVE's keys have no leading zeros.
	if len(m[2]) > 1 && m[2][0] == '0' {
		return nil, false
	}
	idx, err := strconv.Atoi(m[2])
	if err != nil {
		return nil, false
	}
	if max, known := IndexRanges[m[1]]; known && idx > max {
		return nil, false
	}
	return q, true
}

// Validate checks request parameters (path params merged in) like
// PVE::JSONSchema::validate and returns the per-parameter messages, or nil
// when the request is valid. Values are strings (form/query) or decoded
// JSON values (string, float64, json.Number, bool, []any, map[string]any).
func (m *Method) Validate(params map[string]any) map[string]string {
	return ValidateObject(m.Parameters, params)
}

// ValidateObject validates params against an object schema.
func ValidateObject(schema *Prop, params map[string]any) map[string]string {
	errs := map[string]string{}
	// Absent additionalProperties allows extra keys, as in JSON schema; every
	// PVE method but a few SDN ones says 0 explicitly.
	allowExtra := schema.AdditionalProperties == nil || bool(*schema.AdditionalProperties)
	for key, val := range params {
		prop, ok := schema.PropFor(key)
		if !ok {
			if !allowExtra {
				errs[key] = MsgUnknownProperty
			}
			continue
		}
		if msg := checkPropAt(prop, val, key); msg != "" {
			errs[key] = msg
		}
	}
	for key, prop := range schema.Properties {
		if strings.HasSuffix(key, "[n]") || bool(prop.Optional) {
			continue
		}
		if _, ok := params[key]; !ok {
			errs[key] = MsgMissingProperty
		}
	}
	for key := range params {
		prop, ok := schema.PropFor(key)
		if !ok || prop.Requires == "" {
			continue
		}
		if _, ok := params[prop.Requires]; !ok && errs[prop.Requires] == "" {
			errs[prop.Requires] = fmt.Sprintf("missing property - '%s' requires this property", key)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// checkProp validates one value, in JSONSchema.pm check_prop's order:
// type, format, pattern, length, range, enum. "" means valid.
func checkProp(p *Prop, v any) string { return checkPropAt(p, v, "") }

// checkPropAt is checkProp for the parameter at path.
func checkPropAt(p *Prop, v any, path string) string {
	if v == nil {
		if p.Optional {
			return ""
		}
		return MsgMissingProperty
	}
	if msg := checkType(p.Type, v); msg != "" {
		return msg
	}
	switch x := v.(type) {
	case []any:
		if p.Items != nil {
			for _, it := range x {
				if msg := checkProp(p.Items, it); msg != "" {
					return msg
				}
			}
		}
		return ""
	case map[string]any:
		if p.Properties != nil {
			if errs := ValidateObject(p, x); errs != nil {
				keys := slices.Sorted(maps.Keys(errs))
				return keys[0] + ": " + errs[keys[0]]
			}
		}
		return ""
	}
	s := scalarString(v)
	if name := p.FormatName(); name != "" {
		if err := checkFormatAt(name, s, path); err != nil {
			return "invalid format - " + err.Error()
		}
	} else if ps := p.PropertyString(); ps != nil {
		if err := checkPropertyString(ps, s, path); err != nil {
			return "invalid format - " + err.Error()
		}
	}
	if p.Pattern != "" {
		if re := compilePattern(p.Pattern); re != nil && !re.MatchString(s) {
			return "value does not match the regex pattern"
		}
	}
	if p.MaxLength != nil && float64(len(s)) > float64(*p.MaxLength) {
		return fmt.Sprintf("value may only be %s characters long", *p.MaxLength)
	}
	if p.MinLength != nil && float64(len(s)) < float64(*p.MinLength) {
		return fmt.Sprintf("value must be at least %s characters long", *p.MinLength)
	}
	if isNumber(s) {
		f, _ := strconv.ParseFloat(s, 64)
		if p.Maximum != nil && f > float64(*p.Maximum) {
			return fmt.Sprintf("value must have a maximum value of %s", *p.Maximum)
		}
		if p.Minimum != nil && f < float64(*p.Minimum) {
			return fmt.Sprintf("value must have a minimum value of %s", *p.Minimum)
		}
	}
	if len(p.Enum) > 0 {
		for _, e := range p.Enum {
			if e == s {
				return ""
			}
		}
		return fmt.Sprintf("value '%s' does not have a value in the enumeration '%s'", s, strings.Join(p.Enum, ", "))
	}
	return ""
}

// checkType mirrors JSONSchema.pm check_type: scalars are untyped strings in
// Perl, so integers may arrive as numeric strings, while a boolean accepts
// only 0/1 (as string or number) or a JSON true/false.
func checkType(typ string, v any) string {
	fail := func(got string) string { return fmt.Sprintf("type check ('%s') failed - got %s", typ, got) }
	switch v.(type) {
	case bool:
		if typ == "boolean" || typ == "" {
			return ""
		}
		return fail("JSON::PP::Boolean")
	case []any:
		if typ == "array" || typ == "" {
			return ""
		}
		return fail("ARRAY")
	case map[string]any:
		if typ == "object" || typ == "" {
			return ""
		}
		return fail("HASH")
	}
	s := scalarString(v)
	switch typ {
	case "array", "object":
		return fail("'" + s + "'")
	case "boolean":
		if s == "0" || s == "1" {
			return ""
		}
		return fail("'" + s + "'")
	case "integer":
		if isInteger(s) {
			return ""
		}
		return fail("'" + s + "'")
	case "number":
		if isNumber(s) {
			return ""
		}
		return fail("'" + s + "'")
	case "null":
		return fail("'" + s + "'")
	}
	return ""
}

func scalarString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case bool:
		if x {
			return "1"
		}
		return "0"
	}
	return fmt.Sprint(v)
}

var (
	integerRe = regexp.MustCompile(`^[+-]?\d+$`)
	numberRe  = regexp.MustCompile(`^[+-]?(\d+\.\d*|\d*\.?\d+)([eE][+-]?\d+)?$`)
)

func isInteger(s string) bool { return integerRe.MatchString(s) }
func isNumber(s string) bool  { return numberRe.MatchString(s) }

// patternCache holds compiled schema patterns; compiling hundreds of them
// per request would dominate the simulator's latency.
var patternCache sync.Map // string → *regexp.Regexp (nil when RE2 cannot compile it)

func compilePattern(p string) *regexp.Regexp {
	if v, ok := patternCache.Load(p); ok {
		re, _ := v.(*regexp.Regexp)
		return re
	}
	// Perl's "(?^:…)" (a group with default flags, as qr// stringifies)
	// is RE2's "(?:…)".
	re, err := regexp.Compile("^(?:" + strings.ReplaceAll(p, "(?^:", "(?:") + ")$")
	if err != nil {
		re = nil // a Perl-only construct: skip the check rather than reject
	}
	patternCache.Store(p, re)
	return re
}

// checkPropertyString validates `[default_key=]v[,k=v…]` against the keys
// of a property-string format (parse_property_string + check_object: the
// errors are named <path>.<key>, a key's `requires` is enforced).
func checkPropertyString(keys map[string]*Prop, s, path string) error {
	at := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	defaultKey := ""
	for k, p := range keys {
		if p.DefaultKey {
			defaultKey = k
		}
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		k, v, hasEq := strings.Cut(part, "=")
		if !hasEq {
			if defaultKey == "" {
				return fmt.Errorf("value without key, but schema does not define a default key")
			}
			k, v = defaultKey, part
		}
		p, ok := keys[k]
		if !ok {
			return fmt.Errorf("invalid key in comma-separated list property: %s", k)
		}
		if p.Alias != "" {
			if p.KeyAlias != "" {
				if seen[p.KeyAlias] {
					return fmt.Errorf("duplicate key in comma-separated list property: %s", p.KeyAlias)
				}
				seen[p.KeyAlias] = true
			}
			k = p.Alias
			if p, ok = keys[k]; !ok {
				return nil // a schema alias to nowhere: do not guess
			}
		}
		if seen[k] {
			return fmt.Errorf("duplicate key in comma-separated list property: %s", k)
		}
		seen[k] = true
		if msg := checkPropAt(p, v, at(k)); msg != "" {
			return fmt.Errorf("format error\n%s: %s", at(k), msg)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		p := keys[k]
		if !bool(p.Optional) && p.Alias == "" && !seen[k] {
			return fmt.Errorf("format error\n%s: %s", at(k), MsgMissingProperty)
		}
		if seen[k] && p.Requires != "" && !seen[p.Requires] {
			return fmt.Errorf("format error\n%s: missing property - '%s' requires this property", at(p.Requires), k)
		}
	}
	return nil
}
