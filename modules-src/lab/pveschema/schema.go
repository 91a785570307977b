// Package pveschema loads the official Proxmox VE API schema (the pve-docs
// apidata.js, flattened to path → method → description) for PVE 8 or 9 and
// checks requests and responses against it the way pve-common's JSONSchema.pm
// does.
//
// The schema is embedded (gzip'd) so nothing depends on the design folder at
// run time. Typical use:
//
//	s, err := pveschema.Load(9)
//	m, pathParams, err := s.Lookup("POST", "/cluster/config/join")
//	if errs := m.Validate(params); errs != nil { /* HTTP 400, errs per parameter */ }
//	problems := pveschema.CheckValue(m.Returns, responseData) // test helper
//
// What apidata.js does not carry is supplied here: numbered keys collapsed
// to `name[n]` (link[n], net[n], …) are expanded to their real index ranges
// (see IndexRanges), and the cheap `format`s PVE registers (pve-node,
// pve-configid, pve-storage-id, ip, …) are checked with PVE's own messages.
package pveschema

import (
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
)

//go:embed data/pve8.json.gz data/pve9.json.gz
var data embed.FS

// Versions lists the PVE major versions whose schema is embedded.
var Versions = []int{8, 9}

// Schema is the API description of one PVE major version.
type Schema struct {
	Version int
	// methods maps a schema path ("/nodes/{node}/tasks") to HTTP method to Method.
	methods map[string]map[string]*Method
	root    *pathNode
}

// Method describes one (HTTP method, path) pair of the API.
type Method struct {
	Path        string          `json:"-"`
	HTTPMethod  string          `json:"-"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	AllowToken  Flag            `json:"allowtoken"`
	Protected   Flag            `json:"protected"`
	ProxyTo     string          `json:"proxyto"`
	Parameters  *Prop           `json:"parameters"`
	Returns     *Prop           `json:"returns"`
	Permissions json.RawMessage `json:"permissions"`
}

// Prop is one JSON-schema node as pve-common writes it.
type Prop struct {
	Type                 string           `json:"type"`
	Optional             Flag             `json:"optional"`
	Format               json.RawMessage  `json:"format"`
	Enum                 []string         `json:"enum"`
	Pattern              string           `json:"pattern"`
	Minimum              *Num             `json:"minimum"`
	Maximum              *Num             `json:"maximum"`
	MinLength            *Num             `json:"minLength"`
	MaxLength            *Num             `json:"maxLength"`
	Default              json.RawMessage  `json:"default"`
	DefaultKey           Flag             `json:"default_key"`
	Items                *Prop            `json:"items"`
	Properties           map[string]*Prop `json:"properties"`
	AdditionalProperties *Flag            `json:"additionalProperties"`
	Requires             string           `json:"requires"`
	// Alias/KeyAlias describe property-string shorthands: in net[n],
	// "virtio=XX:…" is macaddr=XX:… with model=virtio.
	Alias       string `json:"alias"`
	KeyAlias    string `json:"keyAlias"`
	Description string `json:"description"`
}

// Flag is a Perl-ish boolean: 0/1, "0"/"1" or true/false in the JSON.
type Flag bool

// UnmarshalJSON accepts numbers, strings and JSON booleans.
func (f *Flag) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	*f = Flag(s == "1" || s == "true")
	return nil
}

// Num is a number the schema sometimes writes as a string ("minimum": "0").
type Num float64

// UnmarshalJSON accepts a JSON number or a numeric string.
func (n *Num) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("schema number %s: %w", b, err)
	}
	*n = Num(v)
	return nil
}

// String prints the number the way Perl would (no trailing .0).
func (n Num) String() string { return strconv.FormatFloat(float64(n), 'f', -1, 64) }

// FormatName returns the named format ("pve-node") or "" when the format is
// absent or a property-string description (an object).
func (p *Prop) FormatName() string {
	if len(p.Format) == 0 || p.Format[0] != '"' {
		return ""
	}
	var s string
	_ = json.Unmarshal(p.Format, &s)
	return s
}

// PropertyString returns the key descriptions when the format is a property
// string (`[address=]<IP>[,priority=<int>]`), else nil.
func (p *Prop) PropertyString() map[string]*Prop {
	if len(p.Format) == 0 || p.Format[0] != '{' {
		return nil
	}
	var m map[string]*Prop
	if err := json.Unmarshal(p.Format, &m); err != nil {
		return nil
	}
	return m
}

// Load decodes the embedded schema of PVE major version 8 or 9.
func Load(version int) (*Schema, error) {
	raw, err := data.ReadFile(fmt.Sprintf("data/pve%d.json.gz", version))
	if err != nil {
		return nil, fmt.Errorf("no embedded API schema for PVE %d (have %v): %w", version, Versions, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("embedded PVE %d schema is corrupt: %w", version, err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("embedded PVE %d schema is corrupt: %w", version, err)
	}
	var methods map[string]map[string]*Method
	if err := json.Unmarshal(plain, &methods); err != nil {
		return nil, fmt.Errorf("decode PVE %d schema: %w", version, err)
	}
	s := &Schema{Version: version, methods: methods, root: &pathNode{}}
	for path, ms := range methods {
		for hm, m := range ms {
			m.Path, m.HTTPMethod = path, hm
			if m.Parameters == nil {
				no := Flag(false)
				m.Parameters = &Prop{Type: "object", AdditionalProperties: &no}
			}
		}
		s.root.insert(splitPath(path), path)
	}
	for _, mount := range fragmentMounts {
		if n := s.root.find(splitPath(mount)); n != nil {
			n.joinRest = true
		}
	}
	return s, nil
}

// fragmentMounts are the paths PVE mounts a subclass at with
// fragmentDelimiter set to the empty string (pve-storage PVE/API2/Storage/Status.pm: "volume
// IDs may contain a slash"): RESTHandler.pm map_path_to_methods joins every
// segment after it into one, so /nodes/n/storage/local/content/local:iso/x.iso
// reaches {volume} = "local:iso/x.iso". The schema JSON does not carry the
// flag; pve-storage's is the only one in PVE's code.
var fragmentMounts = []string{"/nodes/{node}/storage/{storage}/content"}

// Paths returns every schema path, sorted.
func (s *Schema) Paths() []string {
	return slices.Sorted(maps.Keys(s.methods))
}

// Method returns the description of (httpMethod, schemaPath), or nil.
func (s *Schema) Method(httpMethod, schemaPath string) *Method {
	return s.methods[schemaPath][httpMethod]
}

// NotImplementedError is PVE's answer for an unknown path or method (HTTP 501).
type NotImplementedError struct{ Method, Path string }

func (e *NotImplementedError) Error() string {
	return fmt.Sprintf("Method '%s %s' not implemented", e.Method, e.Path)
}

// Lookup matches a request path (without /api2/json) to its schema path and
// returns the method description and the values of the path's {params}.
// Literal segments win over {param} segments, as in PVE's router.
func (s *Schema) Lookup(httpMethod, reqPath string) (*Method, map[string]string, error) {
	segs := splitPath(reqPath)
	params := map[string]string{}
	schemaPath, ok := s.root.match(segs, params)
	if !ok {
		return nil, nil, &NotImplementedError{Method: httpMethod, Path: reqPath}
	}
	m := s.methods[schemaPath][httpMethod]
	if m == nil {
		return nil, nil, &NotImplementedError{Method: httpMethod, Path: reqPath}
	}
	return m, params, nil
}

// splitPath skips empty fragments, as RESTHandler.pm find_handler does.
func splitPath(p string) []string {
	var out []string
	for _, seg := range strings.Split(p, "/") {
		if seg != "" {
			out = append(out, seg)
		}
	}
	return out
}

// pathNode is a segment trie; param children match any single segment.
type pathNode struct {
	literal   map[string]*pathNode
	param     *pathNode
	paramName string
	path      string // schema path ending here, if any
	// joinRest: the segments below this node are one (fragmentMounts).
	joinRest bool
}

// find returns the node a schema path's segments lead to.
func (n *pathNode) find(segs []string) *pathNode {
	if len(segs) == 0 {
		return n
	}
	seg := segs[0]
	if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
		if n.param == nil {
			return nil
		}
		return n.param.find(segs[1:])
	}
	if next := n.literal[seg]; next != nil {
		return next.find(segs[1:])
	}
	return nil
}

func (n *pathNode) insert(segs []string, path string) {
	if len(segs) == 0 {
		n.path = path
		return
	}
	seg := segs[0]
	var next *pathNode
	if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
		if n.param == nil {
			n.param = &pathNode{paramName: strings.Trim(seg, "{}")}
		}
		next = n.param
	} else {
		if n.literal == nil {
			n.literal = map[string]*pathNode{}
		}
		if n.literal[seg] == nil {
			n.literal[seg] = &pathNode{}
		}
		next = n.literal[seg]
	}
	next.insert(segs[1:], path)
}

func (n *pathNode) match(segs []string, params map[string]string) (string, bool) {
	if len(segs) == 0 {
		return n.path, n.path != ""
	}
	if n.joinRest && len(segs) > 1 {
		segs = []string{strings.Join(segs, "/")}
	}
	if next := n.literal[segs[0]]; next != nil {
		if p, ok := next.match(segs[1:], params); ok {
			return p, true
		}
	}
	if n.param != nil && segs[0] != "" {
		if p, ok := n.param.match(segs[1:], params); ok {
			params[n.param.paramName] = segs[0]
			return p, true
		}
	}
	return "", false
}
