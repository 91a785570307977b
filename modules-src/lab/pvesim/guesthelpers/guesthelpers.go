// Package guesthelpers is the simulator's model of the rules in
// pve-guest-common's src/PVE/GuestHelpers.pm that qemu-server and
// pve-container both call, so that pvesim/qemuserver's and
// pvesim/pvecontainer's callers share one copy without one backend
// importing the other (issue 27 §1): check_vnet_access's paths
// (with get_tags_from_trunk) and config_with_pending_array, the pending
// view of both kinds. Reconstructions are marked where they are.
// The privilege checks on those paths are pvesim's (the caller's
// ConfigDB and principal).
package guesthelpers

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Zone is the SDN zone of a plain bridge: check_vnet_access's
// 'localnetwork'. Reconstruction: the lab has no SDN vnets, so every
// bridge is in it.
const Zone = "localnetwork"

// VnetPaths are the ACL paths check_vnet_access checks SDN.Use on for a
// NIC on bridge: the VLAN of a tag that is set, each VLAN of trunks in
// string order, else the whole bridge — "set" as Perl's truth, so a tag
// or trunks of "0" is none. A NIC without a bridge has nothing to check
// (check_bridge_access's "no vnet to check for").
func VnetPaths(bridge, tag, trunks string) []string {
	if bridge == "" {
		return nil
	}
	base := "/sdn/zones/" + Zone + "/" + bridge
	var paths []string
	if perlTrue(tag) {
		paths = append(paths, base+"/"+tag)
	}
	if perlTrue(trunks) {
		for _, t := range trunkTags(trunks) {
			paths = append(paths, base+"/"+t)
		}
	}
	if !perlTrue(tag) && !perlTrue(trunks) {
		paths = append(paths, base)
	}
	return paths
}

// perlTrue is a string's truth in Perl: neither "" nor "0".
func perlTrue(s string) bool { return s != "" && s != "0" }

// trunkTags is get_tags_from_trunk: "10;20-22" → 10 20 21 22, sorted as
// strings (check_vnet_access's sort keys); a range whose end is not above
// its start ("22-20", "5-5", "7-0") is its start alone.
func trunkTags(trunks string) []string {
	tags := map[string]bool{}
	for _, part := range strings.Split(trunks, ";") {
		var lo, hi int
		if n, _ := fmt.Sscanf(part, "%d-%d", &lo, &hi); n == 2 && hi > lo {
			for t := lo; t <= hi; t++ {
				tags[fmt.Sprint(t)] = true
			}
		} else if n >= 1 {
			tags[fmt.Sprint(lo)] = true
		}
	}
	return slices.Sorted(maps.Keys(tags))
}
