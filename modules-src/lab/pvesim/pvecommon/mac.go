package pvecommon

import "strings"

// MACPrefix is the prefix of the MACs PVE makes: datacenter.cfg
// mac_prefix's default, BC:24:11 (pve-cluster, since PVE 8.1).
const MACPrefix = "BC:24:11"

// RandomMAC is PVE::Tools::random_ether_addr with MACPrefix: hex6 is six
// random hex digits (the caller's randomness).
func RandomMAC(hex6 string) string {
	h := strings.ToUpper(hex6)
	return MACPrefix + ":" + h[0:2] + ":" + h[2:4] + ":" + h[4:6]
}
