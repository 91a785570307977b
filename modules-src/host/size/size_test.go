package size

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in      string
		want    uint64
		wantErr string
	}{
		{"3353346048", 3353346048, ""},
		{"4G", 4 << 30, ""},
		{"4g", 4 << 30, ""},
		{"4GiB", 4 << 30, ""},
		{"4096M", 4 << 30, ""},
		{"4096 MiB", 4 << 30, ""},
		{"512K", 512 << 10, ""},
		{"1T", 1 << 40, ""},
		{"0", 0, ""},
		{"4GB", 0, "ambiguous"},
		{"4X", 0, "unknown unit"},
		{"1.5G", 0, "fraction"},
		{"", 0, "empty"},
		{"G", 0, "not a size"},
		{"99999999999P", 0, "too large"},
	}
	for _, c := range cases {
		got, err := Parse("zfs_arc_max", c.in)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.HasPrefix(err.Error(), "zfs_arc_max: ") {
				t.Errorf("Parse(%q) error = %v, want one naming zfs_arc_max and containing %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}

func TestFormat(t *testing.T) {
	for in, want := range map[uint64]string{4 << 30: "4G", 1536 << 20: "1536M", 3353346048: "3198M", 1000: "1000", 0: "0"} {
		if got := Format(in); got != want {
			t.Errorf("Format(%d) = %q, want %q", in, got, want)
		}
	}
}
