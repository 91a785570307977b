package pvezfs

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/gopve/proxmox/modules-src/host/zfs"
)

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
