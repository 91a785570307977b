package guesthelpers

import (
	"slices"
	"testing"
)

// check_vnet_access: the tag's VLAN, each trunk VLAN (string order, a
// range expanded, duplicates once), the whole bridge only without either;
// tag 0 is no tag; no bridge, nothing.
func TestVnetPaths(t *testing.T) {
	const b = "/sdn/zones/localnetwork/vmbr0"
	for _, c := range []struct {
		tag, trunks string
		want        []string
	}{
		{"", "", []string{b}},
		{"0", "", []string{b}},
		{"5", "", []string{b + "/5"}},
		{"5", "22;10;20-21;9", []string{b + "/5", b + "/10", b + "/20", b + "/21", b + "/22", b + "/9"}},
		{"", "3-4;4", []string{b + "/3", b + "/4"}},
		// get_tags_from_trunk: a range not going up is its start; a
		// trunks of "0" is Perl-false, so the whole bridge.
		{"", "22-20;5-5;7-0", []string{b + "/22", b + "/5", b + "/7"}},
		{"", "0", []string{b}},
		{"0", "0", []string{b}},
	} {
		for range 20 { // the order is the rule's, not the map's
			if got := VnetPaths("vmbr0", c.tag, c.trunks); !slices.Equal(got, c.want) {
				t.Fatalf("VnetPaths(vmbr0, %q, %q) = %v, want %v", c.tag, c.trunks, got, c.want)
			}
		}
	}
	if got := VnetPaths("", "5", "10"); got != nil {
		t.Errorf("a NIC without a bridge checks %v", got)
	}
}
