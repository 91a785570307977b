package cli

import "fmt"

// Opt is one parsed short option.
type Opt struct {
	Name  byte
	Value string
}

// Getopt parses short options the way glibc getopt does for zpool/zfs:
// spec is like "fo:O:m:" (a colon marks an option that takes a value),
// options may be grouped (-Hp) and may follow operands (permutation);
// "--" ends options. It returns the options in order and the operands.
func Getopt(args []string, spec string) ([]Opt, []string, error) {
	takes := map[byte]bool{}
	known := map[byte]bool{}
	for i := 0; i < len(spec); i++ {
		known[spec[i]] = true
		if i+1 < len(spec) && spec[i+1] == ':' {
			takes[spec[i]] = true
			i++
		}
	}
	var opts []Opt
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			rest = append(rest, a)
			continue
		}
		for j := 1; j < len(a); j++ {
			c := a[j]
			if !known[c] {
				return nil, nil, fmt.Errorf("invalid option '%c'", c)
			}
			if !takes[c] {
				opts = append(opts, Opt{Name: c})
				continue
			}
			if j+1 < len(a) {
				opts = append(opts, Opt{Name: c, Value: a[j+1:]})
			} else if i+1 < len(args) {
				i++
				opts = append(opts, Opt{Name: c, Value: args[i]})
			} else {
				return nil, nil, fmt.Errorf("missing argument for '%c' option", c)
			}
			break
		}
	}
	return opts, rest, nil
}
