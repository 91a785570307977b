package cli

import (
	"fmt"
	"strings"
)

// PVEArgs parses arguments the way PVE's CLI handlers do: positional
// arguments plus "--name value", "--name=value", and for boolean options a
// bare "--name" (optionally followed by 0/1).
func PVEArgs(args []string, bools map[string]bool) (pos []string, opts map[string]string, err error) {
	opts = map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") || len(a) == 2 {
			pos = append(pos, a)
			continue
		}
		name, val, hasVal := strings.Cut(a[2:], "=")
		switch {
		case hasVal:
		case bools[name]:
			val = "1"
			if i+1 < len(args) && (args[i+1] == "0" || args[i+1] == "1") {
				i++
				val = args[i]
			}
		case i+1 < len(args):
			i++
			val = args[i]
		default:
			return nil, nil, fmt.Errorf("400 not enough arguments\nmissing value for option '--%s'", name)
		}
		if prev, ok := opts[name]; ok {
			val = prev + "\x00" + val // repeated option (e.g. --delete)
		}
		opts[name] = val
	}
	return pos, opts, nil
}
