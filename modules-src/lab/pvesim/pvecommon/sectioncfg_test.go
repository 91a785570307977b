package pvecommon

import "testing"

// SectionConfig.pm's layout: comments and stray lines are dropped, values
// keep inner spaces, and the file is written back with its entries in
// order and each entry's keys sorted.
func TestSectionsParseAndRender(t *testing.T) {
	text := "# comment\nvm: 100\n\tstate started\n\tcomment two words\n\nstray line\n\nnode-affinity: r1\n\tresources vm:100\n"
	list := ParseSections(text)
	if len(list) != 2 || list[0].Opts["comment"] != "two words" || FindSection(list, "r1").Type != "node-affinity" {
		t.Fatalf("parsed %+v", list)
	}
	want := "vm: 100\n\tcomment two words\n\tstate started\n\nnode-affinity: r1\n\tresources vm:100\n"
	if got := RenderSections(list); got != want {
		t.Errorf("rendered %q, want %q", got, want)
	}
	if FindSection(list, "none") != nil {
		t.Error("FindSection of a missing id")
	}
	if got := SplitComma(" a, ,b,"); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("SplitComma = %q", got)
	}
}
