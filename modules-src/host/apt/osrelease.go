// Package apt reads and edits APT's repository files and drives apt-get,
// apt-cache and dpkg-query on the node.
//
// Repository files come in two formats (B1): deb822 ".sources" stanzas (PVE 9
// / Debian 13) and one-line ".list" entries (PVE 8 / Debian 12). Both are
// parsed by this package's own line-preserving parser rather than
// pault.ag/go/debian/control: that parser drops comments and rewrites whole
// paragraphs, while a repository file we only toggle must come back byte for
// byte except for the one field or line we changed (the user's comments,
// field order and unknown fields stay).
package apt

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"

	"github.com/gopve/proxmox/modules-src/host"
)

// OSRelease is the part of /etc/os-release the modules need.
type OSRelease struct {
	ID              string // debian
	VersionID       string // 13
	VersionCodename string // trixie
}

// ReadOSRelease reads /etc/os-release (falling back to /usr/lib/os-release,
// as os-release(5) says) so the suite comes from the node, not a guess (B1).
func ReadOSRelease(root host.Root) (OSRelease, error) {
	for _, p := range []string{"/etc/os-release", "/usr/lib/os-release"} {
		st, err := root.ReadFile(p)
		if err != nil {
			return OSRelease{}, err
		}
		if !st.Exists {
			continue
		}
		o := ParseOSRelease(st.Content)
		if o.VersionCodename == "" {
			return o, fmt.Errorf("%s has no VERSION_CODENAME; set the suite explicitly", p)
		}
		return o, nil
	}
	return OSRelease{}, fmt.Errorf("neither /etc/os-release nor /usr/lib/os-release exists; set the suite explicitly")
}

// ParseOSRelease parses os-release KEY=value lines (values optionally quoted).
func ParseOSRelease(data []byte) OSRelease {
	var o OSRelease
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		v = strings.Trim(v, `"'`)
		switch k {
		case "ID":
			o.ID = v
		case "VERSION_ID":
			o.VersionID = v
		case "VERSION_CODENAME":
			o.VersionCodename = v
		}
	}
	return o
}
