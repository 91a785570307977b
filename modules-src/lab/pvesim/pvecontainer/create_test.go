package pvecontainer

import (
	"maps"
	"testing"
)

// create_vm's defaults: hostname ||= (a "0" is Perl-false: replaced),
// memory ||= (0 is no memory), swap //= (a given 0 stays).
func TestCreateDefaults(t *testing.T) {
	keys := map[string]string{"memory": "0", "swap": "0"}
	CreateDefaults(keys, 105)
	if want := map[string]string{"hostname": "CT105", "memory": "512", "swap": "0"}; !maps.Equal(keys, want) {
		t.Errorf("CreateDefaults = %v, want %v", keys, want)
	}
	keys = map[string]string{"hostname": "web", "memory": "2048"}
	CreateDefaults(keys, 105)
	if want := map[string]string{"hostname": "web", "memory": "2048", "swap": "512"}; !maps.Equal(keys, want) {
		t.Errorf("CreateDefaults = %v, want %v", keys, want)
	}
	keys = map[string]string{"hostname": "0"}
	CreateDefaults(keys, 105)
	if keys["hostname"] != "CT105" {
		t.Errorf("CreateDefaults: hostname 0 kept as %q, want CT105", keys["hostname"])
	}
}

// parse_id_maps' root: 0 privileged, the default map's 100000 unprivileged.
func TestRootOwner(t *testing.T) {
	if RootOwner(false) != "0:0" || RootOwner(true) != "100000:100000" {
		t.Errorf("RootOwner = %q, %q", RootOwner(false), RootOwner(true))
	}
}
