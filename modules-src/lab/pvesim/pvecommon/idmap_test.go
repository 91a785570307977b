package pvecommon

import (
	"slices"
	"testing"
)

// parse_idmap and map_id: identity, a default, pairs over the default,
// and the two refusals.
func TestIDMap(t *testing.T) {
	m, err := ParseIDMap("1")
	if err != nil || !m.Identity || m.Target("local") != "local" {
		t.Fatalf("ParseIDMap(1) = %+v, %v", m, err)
	}
	m, err = ParseIDMap("a:x,tank,b:y")
	if err != nil {
		t.Fatal(err)
	}
	for src, want := range map[string]string{"a": "x", "b": "y", "c": "tank"} {
		if got := m.Target(src); got != want {
			t.Errorf("Target(%q) = %q, want %q", src, got, want)
		}
	}
	if got := m.Targets(); !slices.Equal(got, []string{"x", "y", "tank"}) {
		t.Errorf("Targets = %v", got)
	}
	if m, _ := ParseIDMap("a:x"); m.Target("c") != "c" {
		t.Errorf("without a default an unmapped ID maps to %q", m.Target("c"))
	}
	for in, want := range map[string]string{
		"tank,other": "default target ID specified more than once",
		"a:x,a:y":    "duplicate mapping for source 'a'",
	} {
		if _, err := ParseIDMap(in); err == nil || err.Error() != want {
			t.Errorf("ParseIDMap(%q) error %v, want %q", in, err, want)
		}
	}
}
