package pveformat

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// KV is one key and its value in a property string.
type KV struct{ Key, Value string }

// Props is a parsed property string, keys in the order they were read.
// Keys are PVE's canonical names (aliases resolved).
type Props []KV

// Get returns the value of key.
func (p Props) Get(key string) (string, bool) {
	for _, kv := range p {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return "", false
}

// Set replaces the value of key, or appends it.
func (p *Props) Set(key, value string) {
	for i := range *p {
		if (*p)[i].Key == key {
			(*p)[i].Value = value
			return
		}
	}
	*p = append(*p, KV{key, value})
}

// Del removes key.
func (p *Props) Del(key string) {
	*p = slices.DeleteFunc(*p, func(kv KV) bool { return kv.Key == key })
}

// Map returns the keys and values as a map (for comparing two strings
// regardless of key order).
func (p Props) Map() map[string]string {
	m := make(map[string]string, len(p))
	for _, kv := range p {
		m[kv.Key] = kv.Value
	}
	return m
}

// Alias makes key a shorthand: `volume=x` is `file=x` (To only); a NIC
// model key `virtio=AA:…` is macaddr=AA:… with model=virtio (To and
// NameIn), as the schema's alias/keyAlias say.
type Alias struct {
	To     string // the key the value is stored under
	NameIn string // if set, the alias's own name is stored under this key
}

// Shape is what parsing and printing need to know about one property
// string format: the parts of the JSON schema's format hash that change
// the syntax. Keys it does not list are still read and printed.
type Shape struct {
	DefaultKey string           // key of a value given without "key=" (default_key)
	Aliases    map[string]Alias // alias keys
	Booleans   []string         // keys of type boolean: values normalised to 0/1
	Sizes      []string         // keys of format disk-size: printed by FormatSize
}

var kvRe = regexp.MustCompile(`^([^=]+)=(.+)$`)

// Parse reads s as parse_property_string does (without the schema check of
// the values: see the apischema package for that).
func Parse(s string, shape Shape) (Props, error) {
	var p Props
	have := map[string]bool{}
	add := func(k, v string) {
		have[k] = true
		p = append(p, KV{k, v})
	}
	defaultDone := false
	for _, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		if m := kvRe.FindStringSubmatch(part); m != nil {
			k, v := m[1], m[2]
			if have[k] {
				return nil, fmt.Errorf("duplicate key in comma-separated list property: %s", k)
			}
			if a, ok := shape.Aliases[k]; ok {
				if a.NameIn != "" {
					if have[a.NameIn] {
						return nil, fmt.Errorf("key alias '%s' is already defined", a.NameIn)
					}
					add(a.NameIn, k)
				}
				k = a.To
				if have[k] {
					return nil, fmt.Errorf("key '%s' is already defined (via alias)", k)
				}
			}
			if slices.Contains(shape.Booleans, k) {
				v = NormBool(v)
			}
			add(k, v)
			continue
		}
		if strings.Contains(part, "=") {
			return nil, fmt.Errorf("missing key in comma-separated list property")
		}
		if shape.DefaultKey == "" {
			return nil, fmt.Errorf("value without key, but schema does not define a default key")
		}
		if defaultDone || have[shape.DefaultKey] {
			return nil, fmt.Errorf("duplicate key in comma-separated list property: %s", shape.DefaultKey)
		}
		defaultDone = true
		if slices.Contains(shape.Booleans, shape.DefaultKey) {
			part = NormBool(part)
		}
		add(shape.DefaultKey, part)
	}
	return p, nil
}

// NormBool is parse_boolean($v) // $v: PVE's words for a boolean (1, on,
// yes, true; 0, off, no, false; any case) as 1 or 0, anything else as it is.
func NormBool(v string) string {
	switch strings.ToLower(v) {
	case "1", "on", "yes", "true":
		return "1"
	case "0", "off", "no", "false":
		return "0"
	}
	return v
}

// Print renders p as print_property_string does: the default key first
// (with its key alias combined: `virtio=AA:…`), then every other key in
// sorted order; sizes through FormatSize. A value with a comma cannot be
// written and is an error, as in PVE.
func Print(p Props, shape Shape) (string, error) {
	m := p.Map()
	// combine: the key that holds an alias's name → the key of its value.
	combine := map[string]string{}
	for _, a := range shape.Aliases {
		if a.NameIn != "" {
			combine[a.NameIn] = a.To
		}
	}
	var out []string
	done := map[string]bool{}
	value := func(k, v string) (string, error) {
		if slices.Contains(shape.Sizes, k) {
			n, err := ParseSize(v)
			if err != nil {
				return "", fmt.Errorf("%s: %w", k, err)
			}
			return FormatSize(n), nil
		}
		if strings.Contains(v, ",") {
			return "", fmt.Errorf("illegal value with commas for %s", k)
		}
		return v, nil
	}
	emit := func(k string, bare bool) error {
		if done[k] {
			return nil
		}
		done[k] = true
		v, ok := m[k]
		if !ok {
			return nil
		}
		vs, err := value(k, v)
		if err != nil {
			return err
		}
		if to, ok := combine[k]; ok {
			if cv, ok := m[to]; ok {
				cs, err := value(to, cv)
				if err != nil {
					return err
				}
				done[to] = true
				out = append(out, vs+"="+cs)
				return nil
			}
		}
		if bare {
			out = append(out, vs)
		} else {
			out = append(out, k+"="+vs)
		}
		return nil
	}
	if shape.DefaultKey != "" {
		if err := emit(shape.DefaultKey, true); err != nil {
			return "", err
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := emit(k, false); err != nil {
			return "", err
		}
	}
	return strings.Join(out, ","), nil
}
