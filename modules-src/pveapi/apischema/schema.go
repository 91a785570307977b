package apischema

import (
	"compress/gzip"
	"embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"sync"

	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
)

// Param is one parameter of a method, or one key of a property string, as
// the schema describes it (descriptions left out).
type Param struct {
	Type       string            `json:"type,omitempty"`
	Optional   bool              `json:"optional,omitempty"`
	Format     string            `json:"format,omitempty"` // a named format
	Keys       map[string]*Param `json:"keys,omitempty"`   // a property string's keys
	Enum       []string          `json:"enum,omitempty"`
	Pattern    string            `json:"pattern,omitempty"`
	Min        *float64          `json:"min,omitempty"`
	Max        *float64          `json:"max,omitempty"`
	MaxLength  int               `json:"maxLength,omitempty"`
	Default    string            `json:"default,omitempty"`
	DefaultKey bool              `json:"defaultKey,omitempty"`
	Alias      string            `json:"alias,omitempty"`
	KeyAlias   string            `json:"keyAlias,omitempty"`
	// MaxIndex is the highest N of a numbered key ("net[n]": 31).
	MaxIndex int `json:"maxIndex,omitempty"`
}

// Method is the parameters of one HTTP method on one schema path.
type Method struct {
	Params map[string]*Param `json:"params"`
}

// Table is one PVE version's methods, keyed "PUT /nodes/{node}/qemu/{vmid}/config".
type Table map[string]*Method

// The tables are embedded gzipped: they ship in every binary, and
// compressed they cost a fifth of their size there (issue 19's 10 MB budget
// per platform); unpacking one takes about a millisecond, once per run.
//
//go:embed data/pve8.json.gz data/pve9.json.gz
var data embed.FS

var (
	loadOnce sync.Once
	tables   map[int]Table
	loadErr  error
)

// Versions are the PVE majors with a table.
var Versions = []int{8, 9}

// For returns the table of a PVE major version; versions newer than the
// newest table use the newest (a new major keeps most of the API), older
// ones are refused.
func For(major int) (Table, error) {
	loadOnce.Do(func() {
		tables = map[int]Table{}
		for _, v := range Versions {
			t, err := readTable(v)
			if err != nil {
				loadErr = fmt.Errorf("apischema: PVE %d table: %w", v, err)
				return
			}
			tables[v] = t
		}
	})
	if loadErr != nil {
		return nil, loadErr
	}
	if major > Versions[len(Versions)-1] {
		major = Versions[len(Versions)-1]
	}
	t, ok := tables[major]
	if !ok {
		return nil, fmt.Errorf("PVE %d is not supported (this collection knows the API of PVE %v)", major, Versions)
	}
	return t, nil
}

// readTable unpacks the embedded table of PVE major v.
func readTable(v int) (Table, error) {
	f, err := data.Open(fmt.Sprintf("data/pve%d.json.gz", v))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	var t Table
	if err := json.NewDecoder(z).Decode(&t); err != nil {
		return nil, err
	}
	return t, z.Close()
}

// Method returns the description of method on schemaPath, or nil.
func (t Table) Method(method, schemaPath string) *Method { return t[method+" "+schemaPath] }

var numbered = regexp.MustCompile(`^([a-z_]+?)(\d+)$`)

// Param resolves a parameter name, numbered keys included ("net3" →
// "net[n]" when 3 is within its range; "net03" is no key of PVE's).
func (m *Method) Param(name string) (*Param, bool) {
	if p, ok := m.Params[name]; ok {
		return p, true
	}
	g := numbered.FindStringSubmatch(name)
	if g == nil {
		return nil, false
	}
	p, ok := m.Params[g[1]+"[n]"]
	if !ok || (len(g[2]) > 1 && g[2][0] == '0') {
		return nil, false
	}
	if n, err := strconv.Atoi(g[2]); err != nil || (p.MaxIndex > 0 && n > p.MaxIndex) {
		return nil, false
	}
	return p, true
}

// Shape is what pveformat needs to parse and print a property string of
// this parameter: its default key, aliases, booleans and sizes.
func (p *Param) Shape() pveformat.Shape {
	var s pveformat.Shape
	for k, kp := range p.keys() {
		switch {
		case kp.Alias != "":
			if s.Aliases == nil {
				s.Aliases = map[string]pveformat.Alias{}
			}
			s.Aliases[k] = pveformat.Alias{To: kp.Alias, NameIn: kp.KeyAlias}
		case kp.DefaultKey:
			s.DefaultKey = k
		}
		if kp.Type == "boolean" {
			s.Booleans = append(s.Booleans, k)
		}
		if kp.Format == "disk-size" {
			s.Sizes = append(s.Sizes, k)
		}
	}
	return s
}

// keys are the property-string keys of p: from the schema, or for a named
// hash format that apidata.js does not expand, from namedFormats.
func (p *Param) keys() map[string]*Param {
	if p.Keys != nil {
		return p.Keys
	}
	return namedFormats[p.Format]
}

// namedFormats are hash formats that apidata.js names without their keys.
var namedFormats = map[string]map[string]*Param{
	// qemu-server PVE/QemuServer/Network.pm $ipconfig_fmt
	"pve-qm-ipconfig": {
		"ip":  {Type: "string", Optional: true, Format: "pve-ipv4-config", Default: "dhcp"},
		"gw":  {Type: "string", Optional: true, Format: "ipv4"},
		"ip6": {Type: "string", Optional: true, Format: "pve-ipv6-config", Default: "dhcp"},
		"gw6": {Type: "string", Optional: true, Format: "ipv6"},
	},
	// qemu-server PVE/QemuServer.pm $boot_fmt
	"pve-qm-boot": {
		"legacy": {Type: "string", Optional: true, DefaultKey: true, Pattern: "[acdn]{1,4}", Default: "cdn"},
		"order":  {Type: "string", Optional: true, Format: "pve-qm-bootdev-list"},
	},
}
