package zfs

import (
	"strings"
	"testing"
)

func TestParseNum(t *testing.T) {
	for in, want := range map[string]uint64{
		"4096": 4096, "128K": 128 << 10, "1M": 1 << 20, "1MB": 1 << 20, "1MiB": 1 << 20, "10G": 10 << 30,
		"1.5G": 3 << 29, "512b": 512, "2t": 2 << 40,
	} {
		got, err := ParseNum(in)
		if err != nil || got != want {
			t.Errorf("ParseNum(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "G", "1Q", "1BB", "1.2.3", "-1", "99999999999999999999"} {
		if _, err := ParseNum(bad); err == nil {
			t.Errorf("ParseNum(%q) accepted", bad)
		}
	}
}

// SameValue compares what `zfs get -p` reads back (bytes) with what a task
// wrote (units), so properties with units converge (issue 7).
func TestSameValue(t *testing.T) {
	cases := []struct {
		prop, have, want string
		same             bool
	}{
		{"recordsize", "1048576", "1M", true},
		{"recordsize", "131072", "1M", false},
		{"quota", "10737418240", "10G", true},
		{"quota", "0", "none", true},
		{"quota", "none", "none", true},
		{"reservation", "0", "1G", false},
		{"refreservation", "1073741824", "1024M", true},
		{"acltype", "posix", "posixacl", true},
		{"acltype", "off", "noacl", true},
		{"compression", "lz4", "lz4", true},
		{"compression", "lz4", "zstd", false},
		{"compress", "zstd", "zstd", true},
	}
	for _, c := range cases {
		if got := SameValue(c.prop, c.have, c.want); got != c.same {
			t.Errorf("SameValue(%s, %q, %q) = %v", c.prop, c.have, c.want, got)
		}
	}
}

func TestValidateProp(t *testing.T) {
	ok := []struct{ name, value string }{
		{"compression", "zstd-3"}, {"recordsize", "1M"}, {"quota", "10G"}, {"quota", "none"},
		{"org.example:owner", "ops team"}, {"acltype", "posixacl"}, {"compress", "lz4"}, {"snapshot_limit", "10"},
	}
	for _, c := range ok {
		if err := ValidateProp(c.name, c.value, false); err != nil {
			t.Errorf("%s=%s refused: %v", c.name, c.value, err)
		}
	}
	bad := []struct{ name, value, want string }{
		{"compression", "bogus", "zfs accepts"},
		{"bogusprop", "on", "not a ZFS filesystem property"},
		{"-o", "x", "starts with '-'"},
		{"recordsize", "3K", "power of 2"},
		{"recordsize", "32M", "power of 2"},
		{"quota", "lots", "not a number"},
		{"used", "1G", "read-only"},
		{"volblocksize", "16K", "volumes"},
		{"casesensitivity", "mixed", "when a pool is created"},
		{"atime", "on\nTrusted: yes", "one non-empty line"},
		{"Org:x", "1", "user property"},
	}
	for _, c := range bad {
		err := ValidateProp(c.name, c.value, false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s=%q: err = %v, want %q", c.name, c.value, err, c.want)
		}
	}
	if err := ValidateProp("casesensitivity", "mixed", true); err != nil {
		t.Errorf("create-time property refused at creation: %v", err)
	}
}
