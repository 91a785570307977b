package pvecommon

import (
	"regexp"
	"strconv"
)

// Sizes as pve-common writes them (src/PVE/JSONSchema.pm parse_size and
// format_size, the 'disk-size' format): a number with an optional binary
// unit K, M, G or T. Reconstruction: parse_size's pattern and
// format_size's "largest unit that divides exactly", in bytes.

var sizeRe = regexp.MustCompile(`^(\d+(?:\.\d+)?)([KMGT])?$`)

var unitShift = map[string]uint{"": 0, "K": 10, "M": 20, "G": 30, "T": 40}

// ParseSize is parse_size: "32G", "512M", "1.5T" or a byte count to bytes;
// false for anything else (parse_size's undef).
func ParseSize(s string) (int64, bool) {
	m := sizeRe.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	return int64(f * float64(int64(1)<<unitShift[m[2]])), true
}

// FormatSize is format_size: bytes in the largest unit that divides them
// exactly ("4G", "528K"), else the bare byte count.
func FormatSize(b int64) string {
	for _, u := range []string{"T", "G", "M", "K"} {
		sh := unitShift[u]
		if b >= 1<<sh && b%(1<<sh) == 0 {
			return strconv.FormatInt(b>>sh, 10) + u
		}
	}
	return strconv.FormatInt(b, 10)
}
