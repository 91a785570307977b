package zfs

import (
	"bytes"
	"testing"
)

func TestNicenum(t *testing.T) {
	for _, tc := range []struct {
		in   uint64
		want string
	}{
		{0, "0"},
		{1023, "1023"},
		{1024, "1K"},
		{96 << 10, "96K"},
		{444 << 10, "444K"},
		{1536, "1.50K"},
		{11_500_000_000, "10.7G"},
		{476 << 30, "476G"},
		{511_101_108_224, "476G"}, // 475.99G: three digits leave room for no decimals
		{12_348_030_976, "11.5G"}, // seed: ALLOC 11.5G
		{1 << 40, "1T"},
		{(1 << 40) + (1 << 39), "1.50T"},
	} {
		if got := Nicenum(tc.in); got != tc.want {
			t.Errorf("Nicenum(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestWriteTable(t *testing.T) {
	cols := []column{{header: "NAME"}, {header: "SIZE", right: true, min: 5}, {header: "HEALTH", right: true, min: 8}, {header: "ALTROOT"}}
	rows := [][]string{{"nvme-vm", "476G", "ONLINE", "-"}, {"t", "1G", "ONLINE", "-"}}
	for _, tc := range []struct {
		name     string
		scripted bool
		want     string
	}{
		{"human", false, "NAME      SIZE    HEALTH  ALTROOT\nnvme-vm   476G    ONLINE  -\nt           1G    ONLINE  -\n"},
		{"scripted", true, "nvme-vm\t476G\tONLINE\t-\nt\t1G\tONLINE\t-\n"},
	} {
		var b bytes.Buffer
		writeTable(&b, cols, rows, tc.scripted, false)
		if b.String() != tc.want {
			t.Errorf("%s:\n%q\nwant\n%q", tc.name, b.String(), tc.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		err  bool
	}{
		{"128K", 128 << 10, false}, {"1M", 1 << 20, false}, {"4096", 4096, false}, {"1.5G", 3 << 29, false},
		{"16m", 16 << 20, false}, {"abc", 0, true}, {"-1", 0, true},
	} {
		got, err := parseSize(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, err=%v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestPropValidate(t *testing.T) {
	for _, tc := range []struct {
		prop, val, want string
		err             bool
	}{
		{"acltype", "posixacl", "posix", false}, // OpenZFS prints the canonical name
		{"acltype", "noacl", "off", false},
		{"compression", "zstd-19", "zstd-19", false},
		{"compression", "zstd-20", "", true},
		{"mountpoint", "none", "none", false},
		{"mountpoint", "rel/path", "", true},
		{"recordsize", "1M", "1M", false},
		{"recordsize", "3K", "", true},
		{"atime", "maybe", "", true},
		{"used", "1G", "", true},
	} {
		got, err := datasetProp(tc.prop).validate(tc.val)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s=%s: got %q, %v; want %q, err=%v", tc.prop, tc.val, got, err, tc.want, tc.err)
		}
	}
}
