package guesthelpers

import (
	"maps"
	"slices"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
)

// ConfigWithPendingArray is config_with_pending_array, the answer of both
// kinds' GET .../pending: each key of the config or its pending section,
// sorted, with its value and pending value as typed gives them and delete
// (1, or 2 for a forced delete "!key"); then the file's digest and, when
// set, the description as describe renders it, which load_config's hash
// holds as scalars too. A caller masks what its kind masks (qemu-server's
// cipassword) on the result.
func ConfigWithPendingArray(c *guestconf.Conf, typed func(key, value string) any, describe func(stored string) string) []map[string]any {
	keys := map[string]bool{}
	for k := range c.Keys {
		keys[k] = true
	}
	for k := range c.Pending {
		keys[k] = true
	}
	out := []map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		e := map[string]any{"key": k}
		if v, ok := c.Keys[k]; ok {
			e["value"] = typed(k, v)
		}
		if v, ok := c.Pending[k]; ok {
			e["pending"] = typed(k, v)
		}
		if c.PendingDeleted(k) {
			e["delete"] = 1
			if slices.Contains(c.PendingDelete, "!"+k) {
				e["delete"] = 2
			}
		}
		out = append(out, e)
	}
	out = append(out, map[string]any{"key": "digest", "value": c.Digest})
	if c.Description != "" {
		out = append(out, map[string]any{"key": "description", "value": describe(c.Description)})
	}
	return out
}
