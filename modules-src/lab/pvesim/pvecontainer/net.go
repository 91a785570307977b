package pvecontainer

import (
	"slices"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// NormaliseNet is parse_lxc_network followed by print_lxc_network
// (src/PVE/LXC/Config.pm): a NIC without a hwaddr
// gets newMAC() (random_ether_addr with datacenter.cfg's mac_prefix);
// a type not given is veth (the only type $netconf_desc has).
// Reconstruction of the printed order: name first, the rest sorted (the
// order pct config shows; $netconf_desc has no default key).
func NormaliseNet(v string, newMAC func() string) string {
	p := pvecommon.ParseProps(v, "")
	if p.Get("hwaddr") == "" {
		p.Set("hwaddr", newMAC())
	}
	if p.Get("type") == "" {
		p.Set("type", "veth")
	}
	name := "name=" + p.Get("name")
	delete(p.Vals, "name")
	p.Keys = slices.DeleteFunc(p.Keys, func(k string) bool { return k == "name" })
	if rest := p.Print(""); rest != "" {
		return name + "," + rest
	}
	return name
}
