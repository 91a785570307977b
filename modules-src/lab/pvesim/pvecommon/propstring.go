package pvecommon

import (
	"slices"
	"strings"
)

// Props is a parsed PVE property string ("virtio=BC:24:11:…,bridge=vmbr0",
// "local-lvm:vm-100-disk-0,size=32G"), after pve-common JSONSchema.pm
// parse_property_string and print_property_string, without the schema:
// a part without "=" is the default key's value. Keys keep the order
// they came in; Vals holds the values.
type Props struct {
	Keys []string
	Vals map[string]string
}

// ParseProps parses s; a part without "=" is defaultKey's.
func ParseProps(s, defaultKey string) Props {
	p := Props{Vals: map[string]string{}}
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			k, v = defaultKey, part
		}
		if _, dup := p.Vals[k]; !dup {
			p.Keys = append(p.Keys, k)
		}
		p.Vals[k] = v
	}
	return p
}

// Get is k's value ("" when unset).
func (p Props) Get(k string) string { return p.Vals[k] }

// Has tells whether k is set (to any value, "" included).
func (p Props) Has(k string) bool { _, ok := p.Vals[k]; return ok }

// Set sets k, appending it to Keys when new.
func (p *Props) Set(k, v string) {
	if p.Vals == nil {
		p.Vals = map[string]string{}
	}
	if _, ok := p.Vals[k]; !ok {
		p.Keys = append(p.Keys, k)
	}
	p.Vals[k] = v
}

// Del removes k.
func (p *Props) Del(k string) {
	if _, ok := p.Vals[k]; !ok {
		return
	}
	delete(p.Vals, k)
	p.Keys = slices.DeleteFunc(p.Keys, func(x string) bool { return x == k })
}

// Print renders first (the default key's value, bare) then the rest sorted,
// as print_property_string does.
func (p Props) Print(first string) string {
	var parts []string
	if v, ok := p.Vals[first]; ok {
		parts = append(parts, v)
	}
	rest := slices.Clone(p.Keys)
	slices.Sort(rest)
	for _, k := range rest {
		if k == first {
			continue
		}
		parts = append(parts, k+"="+p.Vals[k])
	}
	return strings.Join(parts, ",")
}
