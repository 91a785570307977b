package apischema

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
)

// ParamError is one refused parameter; Key is set for a property-string
// key ("net0" key "tag").
type ParamError struct {
	Param, Key string
	Msg        string
}

func (e *ParamError) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("parameter '%s': key '%s': %s", e.Param, e.Key, e.Msg)
	}
	return fmt.Sprintf("parameter '%s': %s", e.Param, e.Msg)
}

// Errors are every refused parameter of one request, sorted by name.
type Errors struct {
	Version int
	Request string // "PUT /nodes/{node}/qemu/{vmid}/config"
	List    []*ParamError
}

func (e *Errors) Error() string {
	parts := make([]string, len(e.List))
	for i, p := range e.List {
		parts[i] = p.Error()
	}
	return fmt.Sprintf("%s refused by the PVE %d API schema: %s", e.Request, e.Version, strings.Join(parts, "; "))
}

// ValidateParams checks params (path parameters included) against one
// method; nil when PVE's schema check would pass. The keys of a `delete`
// (or `revert`) list must be parameters of the method.
func ValidateParams(m *Method, params url.Values) []*ParamError {
	var errs []*ParamError
	for _, name := range slices.Sorted(maps.Keys(params)) {
		vals := params[name]
		p, ok := m.Param(name)
		if !ok {
			errs = append(errs, &ParamError{Param: name, Msg: "property is not defined in schema and the schema does not allow additional properties"})
			continue
		}
		for _, v := range vals {
			if e := checkValue(name, "", p, v); e != nil {
				if slices.Contains(pveapi.SecretParams, name) && v != "" {
					// PVE's messages quote some values; a secret is never quoted.
					e.Msg = strings.ReplaceAll(e.Msg, v, "<hidden>")
				}
				errs = append(errs, e)
			}
		}
		// PUT /access/acl's delete is a boolean (remove the entries
		// instead of adding them), not a list of keys.
		if (name == "delete" || name == "revert") && p.Type != "boolean" {
			for _, k := range pveformat.SplitList(strings.Join(vals, ",")) {
				if _, ok := m.Param(k); !ok {
					// Reconstruction: qemu-server and the section-config
					// updates refuse an unknown key to delete, each with its own
					// words; the schema decides which keys exist.
					errs = append(errs, &ParamError{Param: name, Msg: fmt.Sprintf("unknown option '%s'", k)})
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m.Params)) {
		if p := m.Params[name]; !p.Optional && !strings.HasSuffix(name, "[n]") && len(params[name]) == 0 {
			errs = append(errs, &ParamError{Param: name, Msg: "property is missing and it is not optional"})
		}
	}
	return errs
}

var (
	intRe    = regexp.MustCompile(`^[+-]?\d+$`)
	numRe    = regexp.MustCompile(`^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$`)
	reCache  sync.Map // pattern → *regexp.Regexp (nil when RE2 cannot compile it)
	boolVals = []string{"1", "0", "on", "off", "yes", "no", "true", "false"}
)

// checkValue is JSONSchema.pm check_prop for one string value.
func checkValue(param, key string, p *Param, v string) *ParamError {
	fail := func(format string, a ...any) *ParamError {
		return &ParamError{Param: param, Key: key, Msg: fmt.Sprintf(format, a...)}
	}
	switch p.Type {
	case "integer":
		if !intRe.MatchString(v) {
			return fail("type check ('integer') failed - got '%s'", v)
		}
	case "number":
		if !numRe.MatchString(v) {
			return fail("type check ('number') failed - got '%s'", v)
		}
	case "boolean":
		if !slices.Contains(boolVals, strings.ToLower(v)) {
			return fail("type check ('boolean') failed - got '%s'", v)
		}
	}
	if p.Type == "integer" || p.Type == "number" {
		n, _ := strconv.ParseFloat(v, 64)
		if p.Min != nil && n < *p.Min {
			return fail("value must have a minimum value of %s", num(*p.Min))
		}
		if p.Max != nil && n > *p.Max {
			return fail("value must have a maximum value of %s", num(*p.Max))
		}
	}
	if p.MaxLength > 0 && len(v) > p.MaxLength {
		return fail("value may only be %d characters long", p.MaxLength)
	}
	if len(p.Enum) > 0 && !slices.Contains(p.Enum, v) {
		return fail("value '%s' does not have a value in the enumeration '%s'", v, strings.Join(p.Enum, ", "))
	}
	if p.Pattern != "" {
		if re := compiled(p.Pattern); re != nil && !re.MatchString(v) {
			return fail("value does not match the regex pattern")
		}
	}
	if keys := p.keys(); keys != nil {
		return checkPropertyString(param, p, keys, v)
	}
	if p.Format != "" {
		if err := pveformat.CheckFormat(p.Format, v); err != nil {
			return fail("invalid format - %s", err)
		}
	}
	return nil
}

func checkPropertyString(param string, p *Param, keys map[string]*Param, v string) *ParamError {
	props, err := pveformat.Parse(v, p.Shape())
	if err != nil {
		return &ParamError{Param: param, Msg: "invalid format - " + err.Error()}
	}
	for _, kv := range props {
		kp, ok := keys[kv.Key]
		if !ok || kp.Alias != "" {
			return &ParamError{Param: param, Msg: fmt.Sprintf("invalid format - invalid key in comma-separated list property: %s", kv.Key)}
		}
		if e := checkValue(param, kv.Key, kp, kv.Value); e != nil {
			return e
		}
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		kp := keys[k]
		if _, have := props.Get(k); !have && !kp.Optional && kp.Alias == "" && kp.Type != "" {
			return &ParamError{Param: param, Key: k, Msg: "property is missing and it is not optional"}
		}
	}
	return nil
}

// compiled anchors a schema pattern as JSONSchema.pm does (^(?:…)$). A
// Perl pattern RE2 cannot compile is not checked (PVE still will be).
func compiled(pattern string) *regexp.Regexp {
	if re, ok := reCache.Load(pattern); ok {
		r, _ := re.(*regexp.Regexp)
		return r
	}
	re, err := regexp.Compile(`^(?:` + pattern + `)$`)
	if err != nil {
		re = nil
	}
	reCache.Store(pattern, re)
	return re
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
