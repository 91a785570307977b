package pvecommon

import "testing"

// parse_size: a number with an optional binary unit; anything else
// (a lower-case unit, a volume ID, a sign) is no size.
func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "512": 512, "4K": 4 << 10, "32G": 32 << 30, "1.5G": 3 << 29, "2T": 2 << 40, "0.5M": 1 << 19,
	} {
		if got, ok := ParseSize(in); !ok || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "32g", "+1G", "G", "1.G", "local:32", "32GB", "-1"} {
		if got, ok := ParseSize(in); ok {
			t.Errorf("ParseSize(%q) = %d, true; want no size", in, got)
		}
	}
}

// format_size: the largest unit that divides exactly, else bytes.
func TestFormatSize(t *testing.T) {
	for in, want := range map[int64]string{
		0: "0", 1000: "1000", 4 << 10: "4K", 528 << 10: "528K", 4 << 20: "4M", 32 << 30: "32G",
		3 << 29: "1536M", 2 << 40: "2T", 1<<30 + 1: "1073741825",
	} {
		if got := FormatSize(in); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", in, got, want)
		}
	}
}
