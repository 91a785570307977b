// Package size parses byte sizes written by humans ("4G", "4096M", "4GiB",
// "3353346048").
//
// Units are binary, like ZFS, modprobe users and `zfs list` think of them:
// K = KiB = 1024, M = MiB = 1024², G = GiB = 1024³, T = TiB = 1024⁴, and a
// trailing "iB" is accepted. "4GB"-style units are refused because half the
// world reads them as 10⁹ and the other half as 2³⁰; the error says how to
// write the value unambiguously. Only whole numbers are accepted, so the
// result is exact.
package size

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

var units = []struct {
	suffix string
	shift  uint
}{
	{"", 0}, {"B", 0},
	{"K", 10}, {"KIB", 10},
	{"M", 20}, {"MIB", 20},
	{"G", 30}, {"GIB", 30},
	{"T", 40}, {"TIB", 40},
	{"P", 50}, {"PIB", 50},
}

// Parse returns the number of bytes in s. param names the user-facing
// parameter, so the error tells the user which input to fix.
func Parse(param, s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("%s: empty size; give bytes (3353346048) or a binary unit (4G, 4096M)", param)
	}
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	num, unit := t[:i], strings.ToUpper(strings.TrimSpace(t[i:]))
	if num == "" {
		return 0, fmt.Errorf("%s: %q is not a size; give bytes (3353346048) or a binary unit (4G, 4096M)", param, s)
	}
	if strings.HasPrefix(unit, ".") || strings.HasPrefix(unit, ",") {
		return 0, fmt.Errorf("%s: %q has a fraction; use a smaller unit instead (1536M, not 1.5G)", param, s)
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q: number out of range", param, s)
	}
	for _, u := range units {
		if u.suffix != unit {
			continue
		}
		if u.shift > 0 && n > math.MaxUint64>>u.shift {
			return 0, fmt.Errorf("%s: %q is too large", param, s)
		}
		return n << u.shift, nil
	}
	if len(unit) == 2 && unit[1] == 'B' && strings.ContainsRune("KMGTP", rune(unit[0])) {
		return 0, fmt.Errorf("%s: %q is ambiguous (decimal or binary?); write %s%s or %s%siB for %s×1024^n bytes, or give plain bytes",
			param, s, num, unit[:1], num, unit[:1], num)
	}
	return 0, fmt.Errorf("%s: unknown unit %q in %q; use bytes or K, M, G, T (binary: 1G = 1073741824 bytes)", param, t[i:], s)
}

// Format renders bytes with the largest binary unit that divides them
// exactly, for messages ("4G", "1536M", "3353346048").
func Format(n uint64) string {
	for _, u := range []struct {
		s     string
		shift uint
	}{{"P", 50}, {"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatUint(n>>u.shift, 10) + u.s
		}
	}
	return strconv.FormatUint(n, 10)
}
