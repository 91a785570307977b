package pvezfs

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/host/zfs"
)

var (
	poolName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.:-]*$`)
	reserved = regexp.MustCompile(`^(mirror|raidz|draid|spare|log|cache|special|dedup|c[0-9].*)`)
)

// minDevices per layout; single is exactly one.
var minDevices = map[string]int{"single": 1, "stripe": 1, "mirror": 2, "raidz1": 2, "raidz2": 3, "raidz3": 4}

// validate checks the arguments before anything is read from the node, so
// bad input never gets as far as a command.
func (m *pool) validate() error {
	p := m.p
	if !poolName.MatchString(p.Name) || reserved.MatchString(p.Name) {
		return fmt.Errorf("name: %q is not a valid pool name (a letter first, then letters, digits, _ - . :; not mirror, raidz…, spare, log, cache)", p.Name)
	}
	if p.State == "absent" {
		return nil
	}
	if n := len(p.Devices); n < minDevices[p.Layout] {
		return fmt.Errorf("devices: layout %s needs at least %d devices, got %d", p.Layout, minDevices[p.Layout], n)
	}
	if p.Layout == "single" && len(p.Devices) > 1 {
		return fmt.Errorf("devices: layout single takes one device, got %d; use layout stripe (no redundancy) or mirror", len(p.Devices))
	}
	seen := map[string]bool{}
	for _, d := range p.Devices {
		if seen[d] {
			return fmt.Errorf("devices: %s is listed twice", d)
		}
		seen[d] = true
	}
	if p.Ashift < 9 || p.Ashift > 16 {
		return fmt.Errorf("ashift: %d is out of range (9 to 16; 12 means 4 KiB sectors)", p.Ashift)
	}
	props, err := wantedProperties(p.Properties)
	if err != nil {
		return err
	}
	m.props = props
	mp := p.Mountpoint
	if mp == "" {
		mp = "/" + p.Name
	}
	switch {
	case (mp == "none" || mp == "legacy") && !p.AllowUnmounted:
		return fmt.Errorf("mountpoint: %s refused: Proxmox VE must mount the pool's datasets for LXC container volumes, so containers on an unmounted pool fail to start (Z5); keep the default /%s, or set allow_unmounted: true if this pool never holds containers", mp, p.Name)
	case mp != "none" && mp != "legacy" && !strings.HasPrefix(mp, "/"):
		return fmt.Errorf("mountpoint: %q must be an absolute path", mp)
	case strings.ContainsFunc(mp, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return fmt.Errorf("mountpoint: %q contains a line break or control character", mp)
	}
	m.props["mountpoint"] = path.Clean(mp)
	if mp == "none" || mp == "legacy" {
		m.props["mountpoint"] = mp
	}
	if cm := m.props["canmount"]; cm != "" && cm != "on" && !p.AllowUnmounted {
		return fmt.Errorf("properties: canmount=%s refused: the pool would not be mounted, and Proxmox VE must mount its datasets for LXC container volumes (Z5); set allow_unmounted: true if this pool never holds containers", cm)
	}
	return nil
}

// wantedProperties merges the task's properties over the defaults, under
// the names zfs reads them back with, and refuses names and values zfs would
// refuse, before anything is planned: check mode must not predict a create
// or a `zfs set` that the real run then sees fail ("compression: bogus", an
// unknown property, a key starting with "-" that zfs would read as an
// option).
func wantedProperties(given map[string]any) (map[string]string, error) {
	props := DefaultProperties()
	keys := make([]string, 0, len(given))
	for k := range given {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		name := zfs.CanonicalProp(k)
		if name == "mountpoint" {
			return nil, fmt.Errorf("properties: set the mountpoint with the mountpoint option, not in properties")
		}
		value := propertyText(given[k])
		// Create-time properties are checked against the existing pool
		// when there is one (planProps).
		if err := zfs.ValidateProp(name, value, true); err != nil {
			return nil, fmt.Errorf("properties: %w", err)
		}
		props[name] = value
	}
	return props, nil
}

// propertyText renders a YAML value as zfs expects it: booleans (YAML's
// on/off) as on/off, whole numbers without a fraction.
func propertyText(v any) string {
	switch x := v.(type) {
	case bool:
		if x {
			return "on"
		}
		return "off"
	case float64:
		if x == float64(int64(x)) {
			return strconv.FormatInt(int64(x), 10)
		}
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}
