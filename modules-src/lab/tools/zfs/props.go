package zfs

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// propDef describes one property: its default, the values it accepts, and
// whether it is read-only. canon maps accepted aliases to what `get` prints
// (OpenZFS prints acltype=posixacl back as "posix").
type propDef struct {
	name     string
	def      string
	readonly bool
	numeric  bool // right-justified in list output, bytes with -p
	values   []string
	check    func(string) error
	canon    map[string]string
}

var onOff = []string{"on", "off"}

func oneOf(p *propDef, v string) error {
	for _, ok := range p.values {
		if v == ok {
			return nil
		}
	}
	return fmt.Errorf("'%s' must be one of '%s'", p.name, strings.Join(p.values, " | "))
}

var compressionRe = regexp.MustCompile(`^(on|off|lzjb|gzip|gzip-[1-9]|zle|lz4|zstd|zstd-([1-9]|1[0-9])|zstd-fast|zstd-fast-[0-9]+)$`)

func sizeOrNone(name string) func(string) error {
	return func(v string) error {
		if v == "none" {
			return nil
		}
		if _, err := parseSize(v); err != nil {
			return fmt.Errorf("bad numeric value '%s'", v)
		}
		return nil
	}
}

// parseSize reads "128K", "1G", "4096".
func parseSize(v string) (uint64, error) {
	mult := uint64(1)
	s := strings.ToUpper(strings.TrimSuffix(strings.TrimSuffix(v, "B"), "b"))
	if n := len(s); n > 0 {
		if i := strings.IndexByte("KMGTPE", s[n-1]); i >= 0 {
			mult = 1 << (10 * (i + 1))
			s = s[:n-1]
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("bad numeric value '%s'", v)
	}
	return uint64(f * float64(mult)), nil
}

var datasetProps = []*propDef{
	{name: "type", readonly: true},
	{name: "creation", readonly: true},
	{name: "used", readonly: true, numeric: true},
	{name: "available", readonly: true, numeric: true},
	{name: "referenced", readonly: true, numeric: true},
	{name: "compressratio", readonly: true, def: "1.00x"},
	{name: "mounted", readonly: true},
	{name: "quota", def: "none", numeric: true, check: sizeOrNone("quota")},
	{name: "reservation", def: "none", numeric: true, check: sizeOrNone("reservation")},
	{name: "recordsize", def: "128K", numeric: true, check: func(v string) error {
		n, err := parseSize(v)
		if err != nil || n < 512 || n > 16<<20 || n&(n-1) != 0 {
			return fmt.Errorf("'recordsize' must be power of 2 from 512B to 16M")
		}
		return nil
	}},
	{name: "mountpoint", check: func(v string) error {
		if v == "none" || v == "legacy" || strings.HasPrefix(v, "/") {
			return nil
		}
		return fmt.Errorf("'mountpoint' must be an absolute path, 'none', or 'legacy'")
	}},
	{name: "sharenfs", def: "off"},
	{name: "checksum", def: "on", values: []string{"on", "off", "fletcher2", "fletcher4", "sha256", "noparity", "sha512", "skein", "edonr", "blake3"}},
	{name: "compression", def: "off", check: func(v string) error {
		if compressionRe.MatchString(v) {
			return nil
		}
		return fmt.Errorf("'compression' must be one of 'on | off | lzjb | gzip | gzip-[1-9] | zle | lz4 | zstd | zstd-[1-19] | zstd-fast | zstd-fast-[1-10,20,30,40,50,60,70,80,90,100,500,1000]'")
	}},
	{name: "atime", def: "on", values: onOff},
	{name: "devices", def: "on", values: onOff},
	{name: "exec", def: "on", values: onOff},
	{name: "setuid", def: "on", values: onOff},
	{name: "readonly", def: "off", values: onOff},
	{name: "zoned", def: "off", values: onOff},
	{name: "snapdir", def: "hidden", values: []string{"hidden", "visible"}},
	{name: "aclmode", def: "discard", values: []string{"discard", "groupmask", "passthrough", "restricted"}},
	{name: "aclinherit", def: "restricted", values: []string{"discard", "noallow", "restricted", "passthrough", "passthrough-x"}},
	{name: "createtxg", readonly: true},
	{name: "canmount", def: "on", values: []string{"on", "off", "noauto"}},
	{name: "xattr", def: "on", values: []string{"on", "off", "sa", "dir"}},
	{name: "copies", def: "1", values: []string{"1", "2", "3"}},
	{name: "version", readonly: true, def: "5"},
	{name: "utf8only", readonly: true, def: "off"},
	{name: "normalization", readonly: true, def: "none"},
	{name: "casesensitivity", readonly: true, def: "sensitive"},
	{name: "vscan", def: "off", values: onOff},
	{name: "nbmand", def: "off", values: onOff},
	{name: "sharesmb", def: "off"},
	{name: "refquota", def: "none", numeric: true, check: sizeOrNone("refquota")},
	{name: "refreservation", def: "none", numeric: true, check: sizeOrNone("refreservation")},
	{name: "guid", readonly: true},
	{name: "primarycache", def: "all", values: []string{"all", "none", "metadata"}},
	{name: "secondarycache", def: "all", values: []string{"all", "none", "metadata"}},
	{name: "logbias", def: "latency", values: []string{"latency", "throughput"}},
	{name: "dnodesize", def: "legacy", values: []string{"legacy", "auto", "1k", "2k", "4k", "8k", "16k"}},
	{name: "sync", def: "standard", values: []string{"standard", "always", "disabled"}},
	{name: "relatime", def: "on", values: onOff},
	{name: "acltype", def: "off", values: []string{"off", "nfsv4", "posix", "noacl", "posixacl"},
		canon: map[string]string{"posixacl": "posix", "noacl": "off"}},
	{name: "redundant_metadata", def: "all", values: []string{"all", "most", "some", "none"}},
	{name: "overlay", def: "on", values: onOff},
	{name: "encryption", readonly: true, def: "off"},
	{name: "keystatus", readonly: true, def: "-"},
	{name: "special_small_blocks", def: "0", numeric: true},
	// zvol properties (zvols.go): volsize is set with -V and grown with zfs set;
	// volblocksize only at creation.
	{name: "volsize", numeric: true, check: func(v string) error {
		if n, err := parseSize(v); err != nil || n == 0 {
			return fmt.Errorf("bad numeric value '%s'", v)
		}
		return nil
	}},
	{name: "volblocksize", readonly: true, numeric: true},
	{name: "origin", readonly: true},
}

var propAliases = map[string]string{"avail": "available", "refer": "referenced", "compress": "compression",
	"recsize": "recordsize", "ratio": "compressratio", "reserv": "reservation", "refreserv": "refreservation",
	"refratio": "compressratio", "volblock": "volblocksize"}

func datasetProp(name string) *propDef {
	if a, ok := propAliases[name]; ok {
		name = a
	}
	for _, p := range datasetProps {
		if p.name == name {
			return p
		}
	}
	return nil
}

func isUserProp(name string) bool { return strings.Contains(name, ":") }

// validate checks a value for a settable property and returns its canonical form.
func (p *propDef) validate(v string) (string, error) {
	if p.readonly {
		return "", fmt.Errorf("'%s' is readonly", p.name)
	}
	switch {
	case p.check != nil:
		if err := p.check(v); err != nil {
			return "", err
		}
	case p.values != nil:
		if err := oneOf(p, v); err != nil {
			return "", err
		}
	}
	if c, ok := p.canon[v]; ok {
		return c, nil
	}
	return v, nil
}

// valueSource is one resolved property of a dataset.
type valueSource struct {
	value, source string
	raw           uint64 // for -p on numeric props
	isNum         bool
}

// shown is the value as list and get print it: with -p (parsable), numeric
// properties as raw numbers instead of their human-readable form.
func (v valueSource) shown(parsable bool) string {
	if parsable && v.isNum {
		return strconv.FormatUint(v.raw, 10)
	}
	return v.value
}

func parent(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return ""
}

// get resolves a dataset property: local, inherited from an ancestor, or
// default; read-only props come from the pool.
func (s *State) get(p *Pool, d *Dataset, name string) (valueSource, bool) {
	if isUserProp(name) {
		for n := d.Name; n != ""; n = parent(n) {
			_, a := s.dataset(n)
			if v, ok := a.Props[name]; ok {
				return valueSource{value: v, source: srcFrom(d.Name, n)}, true
			}
		}
		return valueSource{value: "-", source: "-"}, true
	}
	def := datasetProp(name)
	if def == nil {
		return valueSource{}, false
	}
	num := func(n uint64) valueSource {
		return valueSource{value: Nicenum(n), source: "-", raw: n, isNum: true}
	}
	switch def.name {
	case "type":
		return valueSource{value: d.kind(), source: "-"}, true
	case "volsize", "volblocksize":
		if d.Type != "volume" {
			return valueSource{value: "-", source: "-"}, true
		}
		if def.name == "volblocksize" {
			// Reconstruction: a block size given with -b reads back with
			// source "-", the default with "default".
			b, src := uint64(defaultVolBlockSize), "default"
			if d.BlockSize != 0 {
				b, src = d.BlockSize, "-"
			}
			return valueSource{value: Nicenum(b), source: src, raw: b, isNum: true}, true
		}
		b, _ := parseSize(d.Props[def.name])
		src := "local"
		return valueSource{value: Nicenum(b), source: src, raw: b, isNum: true}, true
	case "origin":
		if d.Origin == "" {
			return valueSource{value: "-", source: "-"}, true
		}
		return valueSource{value: d.Origin, source: "-"}, true
	case "creation":
		return valueSource{value: d.Created.Format("Mon Jan _2 15:04 2006"), source: "-", raw: uint64(d.Created.Unix()), isNum: true}, true
	case "used":
		return num(s.used(p, d)), true
	case "available":
		return num(s.avail(p, d)), true
	case "referenced":
		return num(d.referenced()), true
	case "mounted":
		if d.Type != "" {
			return valueSource{value: "-", source: "-"}, true
		}
		mp, _ := s.get(p, d, "mountpoint")
		cm, _ := s.get(p, d, "canmount")
		if mp.value == "none" || mp.value == "legacy" || cm.value != "on" || d.Unmounted {
			return valueSource{value: "no", source: "-"}, true
		}
		return valueSource{value: "yes", source: "-"}, true
	case "createtxg":
		return valueSource{value: "1", source: "-", raw: 1, isNum: true}, true
	case "guid":
		return valueSource{value: strconv.FormatUint(p.GUID^uint64(len(d.Name)), 10), source: "-"}, true
	case "mountpoint":
		if d.Type != "" {
			return valueSource{value: "-", source: "-"}, true
		}
		for n := d.Name; n != ""; n = parent(n) {
			_, a := s.dataset(n)
			if v, ok := a.Props["mountpoint"]; ok {
				if n == d.Name || v == "none" || v == "legacy" {
					return valueSource{value: v, source: srcFrom(d.Name, n)}, true
				}
				return valueSource{value: path.Join(v, strings.TrimPrefix(d.Name, n)), source: srcFrom(d.Name, n)}, true
			}
		}
		return valueSource{value: "/" + d.Name, source: "default"}, true
	}
	if def.readonly {
		return valueSource{value: def.def, source: "-"}, true
	}
	for n := d.Name; n != ""; n = parent(n) {
		_, a := s.dataset(n)
		if a == nil {
			break
		}
		if v, ok := a.Props[def.name]; ok {
			vs := valueSource{value: v, source: srcFrom(d.Name, n)}
			if def.numeric && v != "none" {
				if b, err := parseSize(v); err == nil {
					vs.raw, vs.isNum, vs.value = b, true, Nicenum(b)
				}
			}
			return vs, true
		}
	}
	vs := valueSource{value: def.def, source: "default"}
	if def.numeric && def.def != "none" {
		if b, err := parseSize(def.def); err == nil {
			vs.raw, vs.isNum = b, true
		}
	}
	return vs, true
}

func srcFrom(ds, from string) string {
	if ds == from {
		return "local"
	}
	return "inherited from " + from
}

// Pool properties, in `zpool get all` order.
var poolPropNames = []string{"size", "capacity", "altroot", "health", "guid", "version", "bootfs",
	"delegation", "autoreplace", "cachefile", "failmode", "listsnapshots", "autoexpand", "dedupratio",
	"free", "allocated", "readonly", "ashift", "comment", "expandsize", "freeing", "fragmentation",
	"leaked", "multihost", "checkpoint", "load_guid", "autotrim", "compatibility", "bcloneused",
	"bclonesaved", "bcloneratio"}

var poolSettable = map[string]*propDef{
	"delegation":    {name: "delegation", def: "on", values: onOff},
	"autoreplace":   {name: "autoreplace", def: "off", values: onOff},
	"cachefile":     {name: "cachefile", def: "-"},
	"failmode":      {name: "failmode", def: "wait", values: []string{"wait", "continue", "panic"}},
	"listsnapshots": {name: "listsnapshots", def: "off", values: onOff},
	"autoexpand":    {name: "autoexpand", def: "off", values: onOff},
	"ashift": {name: "ashift", def: "0", check: func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || (n != 0 && (n < 9 || n > 16)) {
			//lint:ignore ST1005 zpool's own message, printed verbatim
			return fmt.Errorf("property 'ashift' number %s is invalid.", v)
		}
		return nil
	}},
	"comment":       {name: "comment", def: "-"},
	"multihost":     {name: "multihost", def: "off", values: onOff},
	"autotrim":      {name: "autotrim", def: "off", values: onOff},
	"compatibility": {name: "compatibility", def: "off"},
	"bootfs":        {name: "bootfs", def: "-"},
	"altroot":       {name: "altroot", def: "-"},
}

var poolAliases = map[string]string{"cap": "capacity", "alloc": "allocated", "frag": "fragmentation",
	"expandsz": "expandsize", "dedup": "dedupratio", "ckpoint": "checkpoint", "health": "health"}

func poolPropName(n string) (string, bool) {
	if a, ok := poolAliases[n]; ok {
		n = a
	}
	for _, p := range poolPropNames {
		if p == n {
			return n, true
		}
	}
	return n, false
}

func (p *Pool) getProp(name string) valueSource {
	size := p.Size()
	num := func(n uint64) valueSource { return valueSource{value: Nicenum(n), source: "-", raw: n, isNum: true} }
	switch name {
	case "size":
		return num(size)
	case "allocated":
		return num(allocFresh)
	case "free":
		return num(size - allocFresh)
	case "capacity":
		c := allocFresh * 100 / size
		return valueSource{value: fmt.Sprintf("%d%%", c), source: "-", raw: c, isNum: true}
	case "fragmentation":
		return valueSource{value: "0%", source: "-", raw: 0, isNum: true}
	case "health":
		return valueSource{value: "ONLINE", source: "-"}
	case "guid":
		return valueSource{value: strconv.FormatUint(p.GUID, 10), source: "-"}
	case "load_guid":
		return valueSource{value: strconv.FormatUint(p.GUID^0x5a5a5a5a, 10), source: "-"}
	case "version", "expandsize", "checkpoint":
		return valueSource{value: "-", source: "-"}
	case "dedupratio", "bcloneratio":
		return valueSource{value: "1.00x", source: "-"}
	case "readonly":
		return valueSource{value: "off", source: "-"}
	case "freeing", "leaked", "bcloneused", "bclonesaved":
		return num(0)
	}
	def := poolSettable[name]
	if v, ok := p.Props[name]; ok {
		return valueSource{value: v, source: "local"}
	}
	return valueSource{value: def.def, source: "default"}
}
