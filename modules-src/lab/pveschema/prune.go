package pveschema

import (
	"errors"
	"strings"
)

// The 'prune-backups' format, which the API schema only names (its typetext
// lists the keys): pve-storage src/PVE/Storage/Plugin.pm
// $prune_backups_format, registered with validate_prune_backups. Its value
// goes through parse_property_string (pve-common JSONSchema.pm: boolean
// values through parse_boolean first, then check_object per key), then the
// validator refuses keep-all together with a positive keep-* option.
var pruneBackupsFormat = func() map[string]*Prop {
	zero := Num(0)
	keys := map[string]*Prop{"keep-all": {Type: "boolean", Optional: true}}
	for _, k := range []string{"keep-last", "keep-hourly", "keep-daily", "keep-weekly", "keep-monthly", "keep-yearly"} {
		keys[k] = &Prop{Type: "integer", Optional: true, Minimum: &zero}
	}
	return keys
}()

func init() { formats["prune-backups"] = checkPruneBackups }

func checkPruneBackups(s string) error {
	var parts []string
	positive, keepAll := false, false
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(part, "=")
		if ok && k == "keep-all" {
			if b, isBool := parseBoolean(v); isBool {
				v = map[bool]string{true: "1", false: "0"}[b]
				keepAll = b
			}
			part = k + "=" + v
		} else if ok && pruneBackupsFormat[k] != nil && strings.TrimLeft(v, "0") != "" && isInteger(v) {
			positive = true
		}
		if ok && v == "" {
			// "^([^=]+)=(.+)$" does not match and the part has a '='.
			return errors.New("missing key in comma-separated list property")
		}
		parts = append(parts, part)
	}
	if err := checkPropertyString(pruneBackupsFormat, strings.Join(parts, ","), ""); err != nil {
		return err
	}
	if keepAll && positive {
		//lint:ignore ST1005 PVE's own message (validate_prune_backups)
		return errors.New("keep-all cannot be set together with other options.")
	}
	return nil
}

// parseBoolean is pve-common's parse_boolean.
func parseBoolean(s string) (bool, bool) {
	switch strings.ToLower(s) {
	case "1", "on", "yes", "true":
		return true, true
	case "0", "off", "no", "false":
		return false, true
	}
	return false, false
}
