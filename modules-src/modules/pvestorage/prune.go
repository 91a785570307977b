package pvestorage

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// pruneKeys are the keys of PVE's 'prune-backups' format
// (pve-storage src/PVE/Storage/Plugin.pm $prune_backups_format): keep-all
// is a boolean, the others integers of at least 0.
var pruneKeys = []string{"keep-all", "keep-last", "keep-hourly", "keep-daily", "keep-weekly", "keep-monthly", "keep-yearly"}

var nonNegativeRe = regexp.MustCompile(`^[0-9]+$`)

// checkPruneBackups validates a prune-backups value (PVE's key=value,…
// form) the way PVE does before anything is written: parse_property_string
// (pve-common JSONSchema.pm: unknown and duplicate keys, the type of each
// value), then validate_prune_backups (Plugin.pm: keep-all set together
// with a positive keep-* option is refused). PVE answers 400 for each of
// these; failing here names the option and the key, and sends nothing.
func checkPruneBackups(v string) error {
	seen := map[string]string{}
	var order []string
	for _, part := range strings.Split(v, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, val, ok := strings.Cut(part, "=")
		if !ok || val == "" {
			return fmt.Errorf("%q is not key=value (keys: %s)", part, strings.Join(pruneKeys, ", "))
		}
		if !slices.Contains(pruneKeys, k) {
			hint := ""
			if alt := strings.ReplaceAll(k, "_", "-"); slices.Contains(pruneKeys, alt) {
				hint = fmt.Sprintf(" (PVE spells it %s)", alt)
			}
			return fmt.Errorf("unknown key %q%s; the keys are %s", k, hint, strings.Join(pruneKeys, ", "))
		}
		if _, dup := seen[k]; dup {
			return fmt.Errorf("key %s given twice", k)
		}
		seen[k] = val
		order = append(order, k)
	}
	positive := []string{}
	for _, k := range order {
		val := seen[k]
		if k == "keep-all" {
			if _, err := parseBoolStrict(val); err != nil {
				return fmt.Errorf("keep-all: %q is not a boolean (0 or 1)", val)
			}
			continue
		}
		if !nonNegativeRe.MatchString(val) {
			return fmt.Errorf("%s: %q is not an integer of at least 0", k, val)
		}
		if strings.TrimLeft(val, "0") != "" {
			positive = append(positive, k)
		}
	}
	if all, ok := seen["keep-all"]; ok && len(positive) > 0 {
		if b, _ := parseBoolStrict(all); b {
			return fmt.Errorf("keep-all cannot be set together with %s (PVE: keep-all conflicts with the other options when true)", strings.Join(positive, ", "))
		}
	}
	return nil
}

// parseBoolStrict is pve-common's parse_boolean: an empty value is not a
// boolean there.
func parseBoolStrict(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "1", "on", "yes", "true":
		return true, nil
	case "0", "off", "no", "false":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean", s)
}
