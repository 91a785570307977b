package pveschema

import (
	"fmt"
	"maps"
	"slices"
	"sort"
)

// CheckValue walks a `returns` schema and reports every place where v (a
// decoded JSON value) does not fit: wrong type, missing required key, key not
// allowed by an explicit additionalProperties 0, enum/range/format mismatch.
// Scalar rules are those of request validation (JSONSchema.pm): an integer may
// be a numeric string, a boolean 0/1 — exactly the looseness real PVE shows,
// e.g. corosync-derived join info carries `"nodeid": "1"`.
// An empty result means v fits; paths in messages look like `data[0].nodeid`.
func CheckValue(schema *Prop, v any) []string {
	var out []string
	walkValue(schema, v, "data", &out)
	return out
}

func walkValue(p *Prop, v any, at string, out *[]string) {
	if p == nil {
		return
	}
	if p.Type == "null" {
		if v != nil {
			*out = append(*out, fmt.Sprintf("%s: expected null, got %T", at, v))
		}
		return
	}
	if v == nil {
		if p.Type != "" && !p.Optional {
			*out = append(*out, fmt.Sprintf("%s: null where %s expected", at, p.Type))
		}
		return
	}
	if msg := checkType(p.Type, v); msg != "" {
		*out = append(*out, fmt.Sprintf("%s: %s", at, msg))
		return
	}
	switch x := v.(type) {
	case []any:
		for i, it := range x {
			walkValue(p.Items, it, fmt.Sprintf("%s[%d]", at, i), out)
		}
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		strict := p.AdditionalProperties != nil && !bool(*p.AdditionalProperties)
		for _, k := range keys {
			sub, ok := p.PropFor(k)
			if !ok {
				if strict {
					*out = append(*out, fmt.Sprintf("%s.%s: %s", at, k, MsgUnknownProperty))
				}
				continue
			}
			if x[k] == nil && sub.Optional {
				continue
			}
			walkValue(sub, x[k], at+"."+k, out)
		}
		req := make([]string, 0, len(p.Properties))
		for k, sub := range p.Properties {
			if !sub.Optional && len(k) > 3 && k[len(k)-3:] == "[n]" {
				continue
			}
			if !sub.Optional {
				req = append(req, k)
			}
		}
		sort.Strings(req)
		for _, k := range req {
			if _, ok := x[k]; !ok {
				*out = append(*out, fmt.Sprintf("%s.%s: %s", at, k, MsgMissingProperty))
			}
		}
	default:
		if msg := checkProp(&Prop{
			Type: p.Type, Format: p.Format, Enum: p.Enum, Pattern: p.Pattern,
			Minimum: p.Minimum, Maximum: p.Maximum, MinLength: p.MinLength, MaxLength: p.MaxLength,
			Optional: true,
		}, v); msg != "" {
			*out = append(*out, fmt.Sprintf("%s: %s", at, msg))
		}
	}
}
