package pveformat

import (
	"fmt"
	"regexp"
	"strconv"
)

var sizeRe = regexp.MustCompile(`^(\d+(?:\.\d+)?)([KMGT](?:iB)?)?$`)

// ParseSize reads a disk size as PVE::JSONSchema::parse_size: a number of
// bytes, or with K/M/G/T (or KiB…TiB) binary units; fractions are allowed
// and truncated to whole bytes ("1.5G" is 1610612736).
func ParseSize(s string) (int64, error) {
	m := sizeRe.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("value does not look like a valid disk size: %s", s)
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, fmt.Errorf("value does not look like a valid disk size: %s", s)
	}
	switch m[2] {
	case "K", "KiB":
		n *= 1 << 10
	case "M", "MiB":
		n *= 1 << 20
	case "G", "GiB":
		n *= 1 << 30
	case "T", "TiB":
		n *= 1 << 40
	}
	return int64(n), nil
}

// FormatSize prints bytes as PVE::JSONSchema::format_size: the largest unit
// that divides the size exactly (K, M, G, T), else plain bytes. Like PVE,
// zero prints as "0T".
func FormatSize(n int64) string {
	unit := ""
	for _, u := range []string{"K", "M", "G", "T"} {
		if n%1024 != 0 {
			break
		}
		n /= 1024
		unit = u
	}
	return strconv.FormatInt(n, 10) + unit
}
