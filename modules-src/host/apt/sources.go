package apt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/gopve/proxmox/modules-src/host"
)

// Where APT reads repositories from.
const (
	SourcesList = "/etc/apt/sources.list"
	SourcesDir  = "/etc/apt/sources.list.d"
)

// Format is a repository file format.
type Format string

// The two formats APT reads.
const (
	Deb822  Format = "deb822" // *.sources
	OneLine Format = "list"   // *.list and sources.list
)

// FormatOf tells the format from a file name; ok is false for files APT
// ignores in sources.list.d.
func FormatOf(name string) (Format, bool) {
	switch {
	case strings.HasSuffix(name, ".sources"):
		return Deb822, true
	case strings.HasSuffix(name, ".list"):
		return OneLine, true
	}
	return "", false
}

// Entry is one repository: a deb822 stanza or a .list line (commented-out
// .list lines that still parse count as disabled entries).
type Entry struct {
	Index      int // position among the file's entries; the handle for edits
	Types      []string
	URIs       []string
	Suites     []string
	Components []string
	Enabled    bool
}

// HasURI reports whether the entry points at uri (trailing slashes ignored).
func (e Entry) HasURI(uri string) bool {
	for _, u := range e.URIs {
		if strings.TrimRight(u, "/") == strings.TrimRight(uri, "/") {
			return true
		}
	}
	return false
}

// HasComponent reports whether the entry enables component c.
func (e Entry) HasComponent(c string) bool {
	for _, x := range e.Components {
		if x == c {
			return true
		}
	}
	return false
}

// File is one repository file, kept as lines so untouched parts round-trip
// exactly.
type File struct {
	Path   string // logical path
	Format Format
	lines  []string
	final  bool // content ended with a newline
	// spans[i] is the line range [start, end) of entry i.
	spans   [][2]int
	entries []Entry
}

// ParseFile parses a repository file. Malformed deb822 stanzas are errors
// (APT would refuse them too); .list lines that are neither entries nor
// comments are errors as well.
func ParseFile(p string, format Format, data []byte) (*File, error) {
	f := &File{Path: p, Format: format}
	if len(data) > 0 {
		s := string(data)
		f.final = strings.HasSuffix(s, "\n")
		f.lines = strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	}
	if err := f.index(); err != nil {
		return nil, err
	}
	return f, nil
}

// Bytes renders the file.
func (f *File) Bytes() []byte {
	if len(f.lines) == 0 {
		return nil
	}
	s := strings.Join(f.lines, "\n")
	if f.final {
		s += "\n"
	}
	return []byte(s)
}

// Entries returns the repositories in the file.
func (f *File) Entries() []Entry { return append([]Entry(nil), f.entries...) }

func (f *File) index() error {
	f.spans, f.entries = nil, nil
	if f.Format == Deb822 {
		return f.indexDeb822()
	}
	return f.indexList()
}

func isComment(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "#") }
func isBlank(l string) bool   { return strings.TrimSpace(l) == "" }

// stanzas returns the line ranges of deb822 paragraphs (runs of non-blank
// lines), including comment-only ones.
func (f *File) stanzas() [][2]int {
	var out [][2]int
	start := -1
	for i, l := range f.lines {
		if isBlank(l) {
			if start >= 0 {
				out = append(out, [2]int{start, i})
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, [2]int{start, len(f.lines)})
	}
	return out
}

// field is one "Key: value" field with its continuation lines.
type field struct {
	key        string
	value      string
	start, end int
}

func (f *File) fields(span [2]int) ([]field, error) {
	var out []field
	for i := span[0]; i < span[1]; i++ {
		l := f.lines[i]
		if isComment(l) {
			continue
		}
		if l[0] == ' ' || l[0] == '\t' {
			if len(out) == 0 {
				return nil, fmt.Errorf("%s line %d: continuation line without a field", f.Path, i+1)
			}
			out[len(out)-1].value += " " + strings.TrimSpace(l)
			out[len(out)-1].end = i + 1
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			return nil, fmt.Errorf("%s line %d: %q is not a \"Field: value\" line", f.Path, i+1, l)
		}
		out = append(out, field{key: strings.TrimSpace(k), value: strings.TrimSpace(v), start: i, end: i + 1})
	}
	return out, nil
}

func lookup(fs []field, key string) (field, bool) {
	for _, x := range fs {
		if strings.EqualFold(x.key, key) {
			return x, true
		}
	}
	return field{}, false
}

func (f *File) indexDeb822() error {
	for _, span := range f.stanzas() {
		fs, err := f.fields(span)
		if err != nil {
			return err
		}
		if len(fs) == 0 {
			continue // comment-only paragraph
		}
		e := Entry{Index: len(f.entries), Enabled: true}
		for _, x := range fs {
			switch strings.ToLower(x.key) {
			case "types":
				e.Types = strings.Fields(x.value)
			case "uris":
				e.URIs = strings.Fields(x.value)
			case "suites":
				e.Suites = strings.Fields(x.value)
			case "components":
				e.Components = strings.Fields(x.value)
			case "enabled":
				on, err := parseBool(x.value)
				if err != nil {
					return fmt.Errorf("%s line %d: Enabled: %w", f.Path, x.start+1, err)
				}
				e.Enabled = on
			}
		}
		if len(e.Types) == 0 || len(e.URIs) == 0 || len(e.Suites) == 0 {
			return fmt.Errorf("%s line %d: stanza lacks Types, URIs or Suites", f.Path, span[0]+1)
		}
		f.spans = append(f.spans, span)
		f.entries = append(f.entries, e)
	}
	return nil
}

// parseBool follows APT's StringToBool.
func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "yes", "true", "with", "on", "enable", "1":
		return true, nil
	case "no", "false", "without", "off", "disable", "0":
		return false, nil
	}
	return false, fmt.Errorf("%q is not yes or no", v)
}

// parseListLine parses "deb [opts] uri suite comp…"; ok is false when the
// line is not an entry.
func parseListLine(l string) (e Entry, ok bool) {
	f := strings.Fields(l)
	if len(f) < 3 || (f[0] != "deb" && f[0] != "deb-src") {
		return e, false
	}
	e.Types = []string{f[0]}
	rest := f[1:]
	if strings.HasPrefix(rest[0], "[") {
		// options may contain spaces: skip to the token that closes them
		i := 0
		for i < len(rest) && !strings.HasSuffix(rest[i], "]") {
			i++
		}
		if i >= len(rest) {
			return e, false
		}
		rest = rest[i+1:]
	}
	if len(rest) < 2 {
		return e, false
	}
	e.URIs = []string{rest[0]}
	e.Suites = []string{rest[1]}
	e.Components = rest[2:]
	return e, true
}

func (f *File) indexList() error {
	for i, l := range f.lines {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		enabled := true
		if strings.HasPrefix(t, "#") {
			enabled = false
			t = strings.TrimSpace(strings.TrimLeft(t, "#"))
		}
		e, ok := parseListLine(t)
		if !ok {
			if enabled {
				return fmt.Errorf("%s line %d: %q is not a deb or deb-src line", f.Path, i+1, l)
			}
			continue // an ordinary comment
		}
		e.Index, e.Enabled = len(f.entries), enabled
		f.spans = append(f.spans, [2]int{i, i + 1})
		f.entries = append(f.entries, e)
	}
	return nil
}

// SetEnabled enables or disables entry i without deleting it: deb822 gets
// "Enabled: no" (and loses the field when enabled, yes being the default);
// a .list line is commented out or uncommented.
func (f *File) SetEnabled(i int, on bool) error {
	if i < 0 || i >= len(f.entries) {
		return fmt.Errorf("%s: no entry %d", f.Path, i)
	}
	if f.entries[i].Enabled == on {
		return nil
	}
	span := f.spans[i]
	if f.Format == OneLine {
		l := f.lines[span[0]]
		if on {
			f.lines[span[0]] = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "#"))
		} else {
			f.lines[span[0]] = "# " + l
		}
		return f.index()
	}
	if on {
		return f.deleteField(i, "Enabled")
	}
	return f.setField(i, "Enabled", "no")
}

// SetSuites replaces the suites of entry i (e.g. bookworm → trixie).
func (f *File) SetSuites(i int, suites ...string) error {
	if i < 0 || i >= len(f.entries) {
		return fmt.Errorf("%s: no entry %d", f.Path, i)
	}
	if f.Format == Deb822 {
		return f.setField(i, "Suites", strings.Join(suites, " "))
	}
	if len(suites) != 1 {
		return fmt.Errorf("%s: a .list line holds exactly one suite", f.Path)
	}
	span := f.spans[i]
	l := f.lines[span[0]]
	old := f.entries[i].Suites[0]
	// replace the suite token that follows the URI, keeping spacing elsewhere
	uri := f.entries[i].URIs[0]
	at := strings.Index(l, uri)
	if at < 0 {
		return fmt.Errorf("%s line %d: cannot locate the URI to edit the suite", f.Path, span[0]+1)
	}
	tail := l[at+len(uri):]
	j := strings.Index(tail, old)
	if j < 0 {
		return fmt.Errorf("%s line %d: cannot locate suite %q", f.Path, span[0]+1, old)
	}
	f.lines[span[0]] = l[:at+len(uri)] + tail[:j] + suites[0] + tail[j+len(old):]
	return f.index()
}

func (f *File) setField(i int, key, value string) error {
	span := f.spans[i]
	fs, err := f.fields(span)
	if err != nil {
		return err
	}
	line := key + ": " + value
	if x, ok := lookup(fs, key); ok {
		f.lines = append(f.lines[:x.start], append([]string{line}, f.lines[x.end:]...)...)
	} else {
		// Enabled goes first, where a reader looks; other fields at the end.
		at := span[1]
		if strings.EqualFold(key, "Enabled") {
			at = fs[0].start
		}
		f.lines = append(f.lines[:at], append([]string{line}, f.lines[at:]...)...)
	}
	return f.index()
}

func (f *File) deleteField(i int, key string) error {
	fs, err := f.fields(f.spans[i])
	if err != nil {
		return err
	}
	if x, ok := lookup(fs, key); ok {
		f.lines = append(f.lines[:x.start], f.lines[x.end:]...)
	}
	return f.index()
}

// Stanza renders a new deb822 entry.
func Stanza(types, uris, suites, components []string, signedBy string, enabled bool) string {
	var b strings.Builder
	if !enabled {
		b.WriteString("Enabled: no\n")
	}
	fmt.Fprintf(&b, "Types: %s\nURIs: %s\nSuites: %s\nComponents: %s\n",
		strings.Join(types, " "), strings.Join(uris, " "), strings.Join(suites, " "), strings.Join(components, " "))
	if signedBy != "" {
		fmt.Fprintf(&b, "Signed-By: %s\n", signedBy)
	}
	return b.String()
}

// ListLine renders a new one-line entry (commented out when disabled).
func ListLine(uri, suite string, components []string, enabled bool) string {
	l := fmt.Sprintf("deb %s %s %s", uri, suite, strings.Join(components, " "))
	if !enabled {
		l = "# " + l
	}
	return l + "\n"
}

// ReadAll reads sources.list and every .list/.sources file in
// sources.list.d, sorted by path. Missing locations are simply empty.
func ReadAll(root host.Root) ([]*File, error) {
	var out []*File
	st, err := root.ReadFile(SourcesList)
	if err != nil {
		return nil, err
	}
	if st.Exists {
		f, err := ParseFile(SourcesList, OneLine, st.Content)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	ents, err := os.ReadDir(root.Path(SourcesDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list %s: %w", SourcesDir, err)
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if _, ok := FormatOf(e.Name()); ok && !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		p := path.Join(SourcesDir, n)
		format, _ := FormatOf(n)
		st, err := root.ReadFile(p)
		if err != nil {
			return nil, err
		}
		f, err := ParseFile(p, format, st.Content)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}
